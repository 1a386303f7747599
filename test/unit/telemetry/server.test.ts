/**
 * The telemetry listener over real HTTP on 127.0.0.1: /healthz, /readyz reflecting a dead IMDS (stale last
 * poll) and a dead sink, /metrics scraped and parsed. Time comes from an injected clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PollOutcome } from '../../../src/domain/index.ts';
import {
  createMetrics,
  createTelemetryObserver,
  type ForwarderMetrics,
  HealthTracker,
  startTelemetryServer,
  type TelemetryServer,
} from '../../../src/telemetry/index.ts';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.ts';
import { makeRecord } from '../../support/records.ts';

const T0 = 1_758_300_000_000;
const poll = (wallMs: number): PollOutcome => ({
  kind: 'document',
  document: { DocumentIncarnation: 3, Events: [] },
  observed: { wallMs, monotonicMs: wallMs - T0 },
  changed: true,
});
const failedPoll = (wallMs: number, n: number): PollOutcome => ({
  kind: 'failure',
  reason: 'network',
  message: 'connect ECONNREFUSED',
  observed: { wallMs, monotonicMs: wallMs - T0 },
  consecutiveFailures: n,
});

describe('telemetry server', () => {
  let now: number;
  let metrics: ForwarderMetrics;
  let tracker: HealthTracker;
  let server: TelemetryServer;

  beforeEach(async () => {
    now = T0;
    metrics = createMetrics({ processMetrics: false, now: () => now });
    tracker = new HealthTracker({
      pollIntervalMs: 1000,
      staleAfterPolls: 5,
      sinkFailingAfterAttempts: 3,
      sinkReadiness: 'any-failing',
      sinks: [],
      now: () => now,
    });
    server = await startTelemetryServer({ port: 0, metrics, health: () => tracker.snapshot() });
  });
  afterEach(async () => {
    await server.close();
  });

  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`);
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };

  it('binds to 127.0.0.1 and answers /healthz while not ready', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await get('/healthz')).toMatchObject({ status: 200 });
    const ready = await get('/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text).imds).toMatchObject({ ok: false, lastSuccessAt: null });
    expect((await get('/nope')).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('/readyz: ready after a poll, 503 once IMDS is dead (no success for 5 intervals), ready again after recovery', async () => {
    const observer = createTelemetryObserver({ metrics, health: tracker });
    observer.ready?.({ stateDir: '.', sinks: ['otel'] });
    observer.outcome?.(poll(now));
    observer.committed?.({ records: [], rows: 0, outcome: poll(now) });
    let res = await get('/readyz');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({
      ready: true,
      imds: { ok: true },
      store: { ok: true },
      sinks: { otel: { state: 'ok' } },
    });

    // IMDS dies: only failures for 6 s.
    for (let i = 1; i <= 6; i++) {
      now += 1000;
      observer.outcome?.(failedPoll(now, i));
    }
    res = await get('/readyz');
    expect(res.status).toBe(503);
    const body = JSON.parse(res.text);
    expect(body.imds).toMatchObject({
      ok: false,
      ageSeconds: 6,
      staleAfterSeconds: 5,
      lastFailure: { reason: 'network', consecutiveFailures: 6 },
    });

    observer.outcome?.(poll(now));
    expect((await get('/readyz')).status).toBe(200);
  });

  it('/readyz: staleness is measured in the poll interval of the source the pipeline built (sourceBuilt)', () => {
    const health = new HealthTracker({ staleAfterPolls: 3, sinks: [], now: () => now });
    const observer = createTelemetryObserver({ metrics, health });
    expect(health.snapshot().imds.staleAfterSeconds).toBe(3); // before the source is built: IMDS's default 1 s
    observer.sourceBuilt?.({ source: 'imds', pollIntervalMs: 200 });
    observer.outcome?.(poll(now));
    now += 500;
    expect(health.snapshot().imds).toMatchObject({ ok: true, staleAfterSeconds: 0.6 });
    now += 200;
    expect(health.snapshot().imds).toMatchObject({ ok: false, ageSeconds: 0.7 });
  });

  it('/readyz (readiness.sinks any-failing): 503 for a dead sink (3 consecutive failed attempts), ready again after a delivery', async () => {
    const observer = createTelemetryObserver({ metrics, health: tracker });
    observer.ready?.({ stateDir: '.', sinks: ['otel', 'hook'] });
    observer.outcome?.(poll(now));
    for (let attempts = 1; attempts <= 3; attempts++) {
      observer.delivery?.({
        type: 'retry', // the engine reports to the observer directly, as the pipeline wires it
        sink: 'otel',
        attempts,
        delayMs: 1000,
        code: 'http-503',
        message: 'collector unavailable',
      });
      const res = await get('/readyz');
      expect(res.status).toBe(attempts < 3 ? 200 : 503);
    }
    const body = JSON.parse((await get('/readyz')).text);
    expect(body.sinks.otel).toMatchObject({
      ok: false,
      state: 'failing',
      consecutiveFailures: 3,
      lastError: 'http-503: collector unavailable',
    });
    expect(body.sinks.hook).toMatchObject({ ok: true, state: 'ok' });

    observer.delivery?.({ type: 'idle', sink: 'otel' }); // a worker waiting for work changes nothing
    expect((await get('/readyz')).status).toBe(503);
    observer.delivery?.({ type: 'delivered', sink: 'otel', count: 1, latenciesMs: [5000], recordIds: ['x'] });
    expect((await get('/readyz')).status).toBe(200);
  });

  it('/readyz: a paused sink (its destination refuses everything) shows state paused with its code, counted as readiness.sinks says', async () => {
    const observer = createTelemetryObserver({ metrics, health: tracker });
    observer.ready?.({ stateDir: '.', sinks: ['hub', 'file'] });
    observer.outcome?.(poll(now));
    const since = now;
    observer.delivery?.({
      type: 'paused',
      sink: 'hub',
      code: 'Unauthorized',
      message:
        'Event Hubs lifecycle: refused (permanent for the destination: …; fix: give the identity the role)',
      since,
      probes: 1,
      probeInMs: 10_000,
    });
    let res = await get('/readyz');
    expect(res.status).toBe(503); // any-failing: one paused sink is enough
    let body = JSON.parse(res.text);
    expect(body.readiness).toEqual({ sinks: 'any-failing' });
    expect(body.sinks.hub).toMatchObject({
      ok: false,
      state: 'paused',
      paused: { code: 'Unauthorized', since: new Date(since).toISOString() },
      lastError: expect.stringContaining('fix: give the identity the role'),
    });
    expect(body.sinks.file).toMatchObject({ ok: true, state: 'ok' });
    const text = parsePrometheusText((await get('/metrics')).text);
    expect(sampleValue(text, 'sef_sink_paused', { sink: 'hub', reason: 'Unauthorized' })).toBe(1);
    expect(sampleValue(text, 'sef_sink_paused', { sink: 'file' })).toBe(0);

    now += 60_000;
    observer.delivery?.({ type: 'resumed', sink: 'hub', code: 'Unauthorized', pausedForMs: 60_000 });
    observer.delivery?.({
      type: 'delivered',
      sink: 'hub',
      count: 1,
      latenciesMs: [60_000],
      recordIds: ['x'],
    });
    observer.outcome?.(poll(now));
    res = await get('/readyz');
    expect(res.status).toBe(200);
    body = JSON.parse(res.text);
    expect(body.sinks.hub).toMatchObject({ ok: true, state: 'ok' });
    expect(body.sinks.hub.paused).toBeUndefined();
    const after = parsePrometheusText((await get('/metrics')).text);
    expect(sampleValue(after, 'sef_sink_paused', { sink: 'hub' })).toBe(0);
    expect(after.filter((x) => x.name === 'sef_sink_paused' && x.labels.reason !== undefined)).toEqual([]);
  });

  it('/readyz: readiness.sinks ignore (the default) never counts sinks; all-failing only when every sink fails or pauses', () => {
    const paused = (sink: string) => ({
      type: 'paused' as const,
      sink,
      code: 'tls',
      message: 'untrusted CA; fix: add tls.ca',
      since: now,
      probes: 1,
      probeInMs: 10_000,
    });
    const failing = (sink: string) =>
      [1, 2, 3].map((attempts) => ({
        type: 'retry' as const,
        sink,
        attempts,
        delayMs: 1000,
        code: 'http-503',
        message: 'down',
      }));
    const ready = (sinkReadiness?: 'ignore' | 'all-failing' | 'any-failing') => {
      const health = new HealthTracker({
        pollIntervalMs: 1000,
        sinks: ['a', 'b'],
        now: () => now,
        ...(sinkReadiness === undefined ? {} : { sinkReadiness }),
      });
      health.recordPoll(poll(now));
      const states: boolean[] = [health.snapshot().ready];
      health.recordDeliveryEvent(paused('a'));
      states.push(health.snapshot().ready);
      for (const e of failing('b')) health.recordDeliveryEvent(e);
      states.push(health.snapshot().ready);
      expect(health.snapshot().readiness).toEqual({ sinks: sinkReadiness ?? 'ignore' });
      expect(health.snapshot().sinks).toMatchObject({ a: { state: 'paused' }, b: { state: 'failing' } });
      return states; // [nothing wrong, one paused, one paused + one failing]
    };
    expect(ready()).toEqual([true, true, true]);
    expect(ready('ignore')).toEqual([true, true, true]);
    expect(ready('all-failing')).toEqual([true, true, false]);
    expect(ready('any-failing')).toEqual([true, false, false]);
  });

  it('/readyz: 503 while the store cannot be written', async () => {
    const observer = createTelemetryObserver({ metrics, health: tracker });
    observer.outcome?.(poll(now));
    observer.commitFailed?.({ message: 'database or disk is full', full: true, consecutive: 1 });
    const res = await get('/readyz');
    expect(res.status).toBe(503);
    expect(JSON.parse(res.text).store).toEqual({ ok: false, error: 'disk full: database or disk is full' });
    observer.committed?.({ records: [], rows: 0, outcome: poll(now) });
    expect((await get('/readyz')).status).toBe(200);
  });

  it('/metrics serves the Prometheus text of everything the observer saw', async () => {
    const observer = createTelemetryObserver({ metrics, health: tracker });
    observer.ready?.({ stateDir: '.', sinks: ['otel'] });
    observer.outcome?.(poll(now));
    observer.outcome?.(failedPoll(now, 1));
    observer.committed?.({
      records: [makeRecord('scheduled'), makeRecord('started')],
      rows: 2,
      outcome: poll(now),
    });
    observer.delivery?.({
      type: 'delivered',
      sink: 'otel',
      count: 2,
      latenciesMs: [100, 200],
      recordIds: ['a', 'b'],
    });
    observer.delivery?.({
      type: 'retry',
      sink: 'otel',
      attempts: 1,
      delayMs: 1000,
      code: 'timeout',
      message: 'x',
    });
    observer.delivery?.({ type: 'drained', sink: 'otel' }); // counts nothing
    observer.delivery?.({ type: 'idle', sink: 'otel' });
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.type).toContain('text/plain');
    const s = parsePrometheusText(res.text);
    expect(sampleValue(s, 'sef_polls_total')).toBe(2);
    expect(sampleValue(s, 'sef_poll_failures_total', { reason: 'network' })).toBe(1);
    expect(sampleValue(s, 'sef_records_total', { transition: 'started' })).toBe(1);
    expect(sampleValue(s, 'sef_deliveries_total', { sink: 'otel' })).toBe(2);
    expect(sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'timeout' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_count', { sink: 'otel' })).toBe(2);
  });

  it('reports a clear error when the port is taken', async () => {
    const port = Number(new URL(server.url).port);
    await expect(startTelemetryServer({ port, metrics, health: () => tracker.snapshot() })).rejects.toThrow(
      `cannot listen for telemetry on 127.0.0.1:${port}: EADDRINUSE`,
    );
  });
});

/**
 * End to end through the real outbox (SQLite), the real DeliveryEngine and the otel sink against the real
 * OTLP receiver: a collector answering 503 or hanging delays records but never loses them; a 400 sends
 * exactly the offending record to dead letters; metrics and /readyz follow along.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryEngine } from '../../../../src/delivery/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import { createOtelSink } from '../../../../src/sinks/otel/index.ts';
import { otelOptionsSchema } from '../../../../src/sinks/otel/options.ts';
import { openStore, type Store } from '../../../../src/store/index.ts';
import {
  bindOutboxStats,
  createMetrics,
  createTelemetryObserver,
  HealthTracker,
  startTelemetryServer,
} from '../../../../src/telemetry/index.ts';
import { type OtlpHttpReceiver, startOtlpHttpReceiver } from '../../../support/otlp-receiver.ts';
import { parsePrometheusText, sampleValue } from '../../../support/prom-text.ts';
import { makeRecord } from '../../../support/records.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { makeContext } from './records.ts';

describe('otel sink behind the delivery engine', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let store: Store;
  let receiver: OtlpHttpReceiver;

  beforeEach(async () => {
    tmp = makeTempDir('sef-otel-');
    store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
    receiver = await startOtlpHttpReceiver();
  });
  afterEach(async () => {
    await receiver.close();
    store.close?.();
    tmp.cleanup();
  });

  it('503, a hang and a 400: every record is delivered or dead-lettered, none lost; metrics and /readyz agree', async () => {
    const sink = createOtelSink(
      'otel',
      otelOptionsSchema().parse({ endpoint: receiver.url, timeoutMs: 400, maxBatch: 1 }),
      makeContext(),
      {},
    );
    const metrics = createMetrics({ processMetrics: false });
    bindOutboxStats(metrics, () => store.stats());
    const health = new HealthTracker({
      pollIntervalMs: 1000,
      sinks: ['otel'],
      sinkFailingAfterAttempts: 3,
      sinkReadiness: 'any-failing',
    });
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink, backoff: { initialMs: 5, maxMs: 20 } }],
      logger: silentLogger(),
      rescanIntervalMs: 50,
      observer: createTelemetryObserver({ metrics, health }), // as `run` wires it (through the pipeline)
    });
    health.recordPoll({
      kind: 'document',
      document: { DocumentIncarnation: 1, Events: [] },
      observed: { wallMs: Date.now(), monotonicMs: 0 },
      changed: false,
    });
    const scrape = async () => parsePrometheusText(await metrics.registry.metrics());
    const telemetry = await startTelemetryServer({ port: 0, metrics, health: () => health.snapshot() });

    // First record: 503, 503, 503 (sink failing), then hangs (timeouts) until released, then accepted.
    // Second: 400. Third: accepted.
    receiver.enqueue({ status: 503 }, { status: 503 }, { status: 503 });
    receiver.setDefault({ hang: true });
    const records = [makeRecord('scheduled'), makeRecord('started'), makeRecord('completed')];
    store.commit(
      { v: 1 },
      records.map((record) => ({ record, sinks: ['otel'] })),
    );
    engine.start();
    engine.notify();

    await waitFor(() => receiver.attempts.length >= 3, 'three 503 answers');
    const notReady = await waitFor(async () => {
      const res = await fetch(`${telemetry.url}/readyz`);
      return res.status === 503
        ? ((await res.json()) as { sinks: Record<string, { state: string }> })
        : undefined;
    }, '/readyz reporting the failing sink');
    expect(notReady.sinks.otel?.state).toBe('failing');
    const pendingDuringOutage = parsePrometheusText(await (await fetch(`${telemetry.url}/metrics`)).text());
    expect(sampleValue(pendingDuringOutage, 'sef_outbox_pending', { sink: 'otel' })).toBe(3);

    await waitFor(
      async () =>
        sampleValue(await scrape(), 'sef_delivery_failures_total', { sink: 'otel', code: 'timeout' }),
      'a timed-out attempt',
    );
    receiver.enqueue({ status: 200 }, { status: 400, body: 'invalid' }); // record 1 accepted, record 2 rejected
    receiver.setDefault({ status: 200 });
    await waitFor(() => store.stats().find((s) => s.sink === 'otel')?.pending === 0, 'the outbox to drain');

    const delivered = receiver.acceptedRecords().map((r) => r.attributes['cloudevents.event_id']);
    expect(new Set(delivered)).toEqual(new Set([records[0]!.id, records[2]!.id]));
    const dead = store.listDeadLetters({ sink: 'otel' });
    expect(dead.map((d) => d.recordId)).toEqual([records[1]!.id]);

    const s = parsePrometheusText(await (await fetch(`${telemetry.url}/metrics`)).text());
    expect(sampleValue(s, 'sef_deliveries_total', { sink: 'otel' })).toBe(2);
    expect(
      sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'otlp-retryable-status' }),
    ).toBe(3);
    const timeouts = sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'timeout' })!;
    expect(timeouts).toBeGreaterThanOrEqual(1);
    expect(sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'http-400' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_retries_total', { sink: 'otel' })).toBe(3 + timeouts);
    expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'otel', reason: 'permanent' })).toBe(1);
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'otel' })).toBe(0);
    expect((await fetch(`${telemetry.url}/readyz`)).status).toBe(200);

    await engine.stop(1000);
    await telemetry.close();
  });
});

/**
 * The azuremonitor sink end to end with real components: the real @azure/monitor-ingestion SDK and the real
 * ManagedIdentityCredential (tokens from the IMDS simulator's managed identity endpoint) against the Logs
 * Ingestion API double over HTTPS with a private CA (./setup.ts), through the real DeliveryEngine and SQLite
 * outbox where the engine's part is under test (Retry-After, dead letters).
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryEngine } from '../../../../src/delivery/engine.ts';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import {
  AzureMonitorSink,
  azureMonitorOptionsSchema,
  azureMonitorSinkFactory,
  LOG_COLUMNS,
  toLogRow,
} from '../../../../src/sinks/azuremonitor/index.ts';
import type { DeliveryError, Sink } from '../../../../src/sinks/types.ts';
import { openStore } from '../../../../src/store/index.ts';
import { deliveryFailure } from '../../../support/delivery.ts';
import { FakeClock } from '../../../support/fake-clock.ts';
import { capturingLogger } from '../../../support/logs.ts';
import { azureError } from '../../../support/logs-ingestion-double.ts';
import { makeRecord } from '../../../support/records.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { type AzureMonitorSetup, RULE_ID, STREAM, startAzureMonitorSetup } from './setup.ts';

let setup: AzureMonitorSetup;
const sinks: Sink[] = [];
const tmp = makeTempDir('sef-azmon-test-');

beforeAll(async () => {
  setup = await startAzureMonitorSetup();
});
afterEach(async () => {
  for (const sink of sinks.splice(0)) await sink.close?.();
  setup.double.reset();
});
afterAll(async () => {
  await setup?.close();
  tmp.cleanup();
});

let counter = 0;
function records(n: number, transition: 'scheduled' | 'started' = 'scheduled'): LifecycleRecord[] {
  counter += 1;
  return Array.from({ length: n }, (_, i) =>
    makeRecord(transition, {
      eventId: `A2E00000-${String(counter).padStart(4, '0')}-4000-8000-${String(i).padStart(12, '0')}`,
    }),
  );
}

/** A log that keeps every line (JSON, through the project's redacting logger). */

async function sink(extra: Record<string, unknown> = {}, logger = silentLogger()): Promise<Sink> {
  const options = azureMonitorOptionsSchema().parse(setup.options(extra));
  const created = await azureMonitorSinkFactory.create('azmon', options, {
    logger,
    vm: () => undefined,
    stateDir: tmp.dir,
  });
  sinks.push(created);
  return created;
}

const rowIds = () => setup.double.rows().map((r) => r.RecordId);

describe('rows and request shape', () => {
  it('uploads one row per record with the documented columns, in the request shape Azure documents', async () => {
    const batch = [...records(2), ...records(1, 'started')];
    const s = await sink();
    await s.deliver(batch, new AbortController().signal);

    expect(setup.double.violations()).toEqual([]);
    const rows = setup.double.rows();
    expect(rows).toEqual(batch.map(toLogRow));
    for (const row of rows) {
      expect(Object.keys(row)).toEqual(LOG_COLUMNS.map((c) => c.name).filter((name) => name in row));
    }
    expect(rows[0]).toMatchObject({
      TimeGenerated: batch[0]!.time,
      RecordId: batch[0]!.id,
      RecordType: batch[0]!.type,
      EventId: batch[0]!.data.EventId,
      VmName: 'vm-web-01',
      AffectsThisVm: true,
    });
    expect(rows[0]).not.toHaveProperty('StartedAt'); // no value: left out, null in the table
    expect(rows[2]).toMatchObject({ Transition: 'started', EventStatus: 'Started' });

    const [request] = setup.double.requests();
    expect(request).toMatchObject({
      path: `/dataCollectionRules/${RULE_ID}/streams/${STREAM}`,
      apiVersion: '2023-01-01',
      contentEncoding: 'gzip',
      contentType: expect.stringMatching(/^application\/json/),
      status: 204,
    });
    // The token came from the simulator's managed identity endpoint, for the Azure Monitor audience.
    const tokenRequests = setup.simulator.admin.requests().log.filter((r) => r.endpoint === 'token');
    expect(tokenRequests.length).toBeGreaterThan(0);
    expect(setup.double.tokens().length).toBeGreaterThan(0);
  });

  it('sends nothing for an empty batch', async () => {
    const before = setup.double.requests().length;
    const s = await sink();
    await s.deliver([], new AbortController().signal);
    expect(setup.double.requests().length).toBe(before);
  });
});

describe('size limits', () => {
  it('413 for a request of several rows: splits it and delivers every row once, in order', async () => {
    const batch = records(8);
    const rowBytes = Buffer.byteLength(JSON.stringify(toLogRow(batch[0]!)));
    setup.double.maxRequestBytes = rowBytes * 3; // at most 3 rows per request
    try {
      const s = await sink();
      await s.deliver(batch, new AbortController().signal);
    } finally {
      setup.double.maxRequestBytes = 1024 * 1024;
    }
    expect(rowIds().slice(-8)).toEqual(batch.map((r) => r.id));
    const statuses = setup.double.requests().map((r) => r.status);
    expect(statuses).toContain(413);
    expect(setup.double.violations()).toEqual([]);
  });

  it('413 for one row: payload-too-large naming it; the rows before it delivered, none after it accepted', async () => {
    const batch = records(5);
    batch[3] = { ...batch[3]!, data: { ...batch[3]!.data, Description: 'y'.repeat(20_000) } };
    const before = setup.double.requests().length;
    setup.double.maxRequestBytes = 10_000;
    let error: DeliveryError;
    try {
      const s = await sink();
      error = await deliveryFailure(s.deliver(batch, new AbortController().signal));
    } finally {
      setup.double.maxRequestBytes = 1024 * 1024;
    }
    expect(error).toMatchObject({ retryable: false, code: 'payload-too-large', failedIndex: 3 });
    expect(error.message).toContain('HTTP 413');
    expect(error.message).toContain(`the log row of record ${batch[3]!.id} alone`);
    expect(error.message).not.toContain('record 3');
    expect(rowIds().slice(-3)).toEqual(batch.slice(0, 3).map((r) => r.id));
    // Only refused requests carried the rows from 3 on: none of them was accepted.
    const accepted = setup.double
      .requests()
      .slice(before)
      .filter((r) => r.status === 204)
      .flatMap((r) => r.rows.map((row) => row.RecordId));
    expect(accepted).toEqual(batch.slice(0, 3).map((r) => r.id));
  });

  it('a record of 1 MB or more is never sent: dead-lettered as payload-too-large after the rows before it', async () => {
    const batch = records(3);
    batch[1] = { ...batch[1]!, data: { ...batch[1]!.data, Description: 'z'.repeat(1_000_000) } };
    const before = setup.double.requests().length;
    const s = await sink();
    const error = await deliveryFailure(s.deliver(batch, new AbortController().signal));
    expect(error).toMatchObject({ retryable: false, code: 'payload-too-large', failedIndex: 1 });
    expect(error.message).toMatch(/record .* is \d+ bytes as a log row/);
    const sent = setup.double.requests().slice(before);
    expect(sent.flatMap((r) => r.rows.map((row) => row.RecordId))).toEqual([batch[0]!.id]);
  });
});

describe('failures', () => {
  it('429 with Retry-After: the engine waits exactly that long (fake clock), then delivers', async () => {
    const clock = new FakeClock();
    const store = openStore({
      stateDir: join(tmp.dir, 'state-retry-after'),
      logger: silentLogger(),
      now: () => clock.now(),
    });
    const s = await sink();
    const retries: Array<{ delayMs: number; code: string }> = [];
    const delivered: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink: s }],
      clock,
      logger: silentLogger(),
      rescanIntervalMs: Number.POSITIVE_INFINITY,
      observer: {
        delivery: (e) => {
          if (e.type === 'retry') retries.push({ delayMs: e.delayMs, code: e.code });
          if (e.type === 'delivered') delivered.push(...e.recordIds);
        },
      },
    });
    const [record] = records(1);
    setup.double.enqueue({
      status: 429,
      headers: { 'retry-after': '30' },
      body: azureError('TooManyRequests', 'Too many requests, retry after 30 seconds'),
    });
    try {
      store.commit({ n: 1 }, [{ record: record!, sinks: [s.name] }]);
      engine.start();
      engine.notify();
      await waitFor(() => retries.length === 1, 'the 429 recorded as a retryable failure');
      expect(retries).toEqual([{ delayMs: 30_000, code: 'http-429' }]);
      const before = setup.double.requests().length;
      await clock.advance(29_999);
      expect(setup.double.requests().length).toBe(before);
      await clock.advance(1);
      await waitFor(() => delivered.includes(record!.id), 'the retry after 30 s');
      expect(rowIds()).toContain(record!.id);
    } finally {
      const stopped = engine.stop(1000);
      await clock.advance(2000);
      await stopped;
      store.close();
    }
  });

  it('503 is retryable with the server Retry-After; a refused connection is a network error', async () => {
    setup.double.enqueue({
      status: 503,
      headers: { 'retry-after': '7' },
      body: azureError('ServiceUnavailable', 'busy'),
    });
    const s = await sink();
    const busy = await deliveryFailure(s.deliver(records(2), new AbortController().signal));
    expect(busy).toMatchObject({ retryable: true, code: 'http-503', retryAfterMs: 7000 });

    const closed = await sink({ endpoint: 'https://127.0.0.1:1' });
    const refused = await deliveryFailure(closed.deliver(records(1), new AbortController().signal));
    expect(refused).toMatchObject({ retryable: true, code: 'network' });
  });

  it('401 and 403 refuse the destination and name the fix; through the engine the sink pauses (nothing dead-lettered) and resumes by itself once the role is granted; the token appears nowhere', async () => {
    const { logger, output } = capturingLogger();
    const lines = (): string[] => output().split('\n').filter(Boolean);
    const s = await sink({}, logger);
    // A server that echoes the request's credentials back: the Authorization header and the bare token.
    setup.double.setResponder((request) => ({
      status: 403,
      body: azureError(
        'OperationFailed',
        `The authentication token provided does not have access to ingest data for the data collection rule with immutable Id '${RULE_ID}'. Authorization: Bearer ${request.token} token=${request.token}`,
      ),
    }));
    const forbidden = await deliveryFailure(s.deliver(records(2), new AbortController().signal));
    expect(forbidden).toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'http-403',
      failedIndex: 0,
    });
    expect(forbidden.message).toContain('Monitoring Metrics Publisher');
    expect(forbidden.message).toContain('OperationFailed');

    setup.double.setResponder((request) => ({
      status: 401,
      body: azureError('InvalidToken', `token ${request.token} is not valid for this tenant`),
    }));
    const unauthorized = await deliveryFailure(s.deliver(records(1), new AbortController().signal));
    expect(unauthorized).toMatchObject({ retryable: false, scope: 'destination', code: 'http-401' });
    expect(unauthorized.message).toMatch(/tenant/);

    // Through the engine and outbox, with the role assignment still propagating: the sink pauses, both
    // records stay pending (nothing dead-lettered, nothing retried as transient) and one record probes.
    const store = openStore({ stateDir: join(tmp.dir, 'state-paused'), logger: silentLogger() });
    const retries: string[] = [];
    const pausedCodes: string[] = [];
    const resumed: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink: s, backoff: { initialMs: 5, maxMs: 20 }, probeBackoff: { initialMs: 20, maxMs: 50 } }],
      logger,
      rescanIntervalMs: 50,
      observer: {
        delivery: (e) => {
          if (e.type === 'retry') retries.push(e.message);
          if (e.type === 'paused') pausedCodes.push(e.code);
          if (e.type === 'resumed') resumed.push(e.code);
        },
      },
    });
    setup.double.setResponder((request) => ({
      status: 403,
      body: azureError('OperationFailed', `no access for Authorization: Bearer ${request.token}`),
    }));
    const batch = records(2);
    const pending: string[] = [];
    try {
      store.commit(
        { n: 1 },
        batch.map((record) => ({ record, sinks: [s.name] })),
      );
      engine.start();
      engine.notify();
      await waitFor(() => pausedCodes.length >= 3, 'the sink paused, and two refused probes');
      expect(engine.paused()).toEqual([expect.objectContaining({ sink: s.name, code: 'http-403' })]);
      pending.push(...store.pending(s.name, 10).map((r) => r.lastError ?? ''));
      expect(store.pending(s.name, 10).map((r) => r.recordId)).toEqual(batch.map((r) => r.id));
      expect(store.listDeadLetters({ sink: s.name })).toEqual([]);

      setup.double.reset(); // the role assignment took effect
      await waitFor(() => store.pending(s.name, 1).length === 0, 'the sink to resume by itself and drain');
    } finally {
      await engine.stop(1000);
    }
    expect(store.listDeadLetters({ sink: s.name })).toEqual([]); // zero dead letters for this cause
    store.close();
    expect(retries).toEqual([]);
    expect(resumed).toEqual(['http-403']);
    expect(setup.double.rows().map((row) => String(row.RecordId))).toEqual(
      expect.arrayContaining(batch.map((r) => r.id)),
    );
    // The cause and its fix: logged once at error level by the engine, the sink's own lines at debug.
    const errorLines = lines().filter((l) => l.includes('"level":50'));
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]).toMatch(/sink paused: .*Monitoring Metrics Publisher/);
    expect(lines().filter((l) => l.includes('sink resumed'))).toHaveLength(1);

    const tokens = setup.double.tokens();
    expect(tokens.length).toBeGreaterThan(0);
    const texts = [forbidden.message, unauthorized.message, ...pending, ...lines()];
    for (const token of tokens) {
      for (const text of texts) expect(text).not.toContain(token);
      // nor any of its three parts (a server may echo the payload alone)
      for (const part of token.split('.').filter((p) => p.length > 16)) {
        for (const text of texts) expect(text).not.toContain(part);
      }
    }
  });

  it('404 (unknown DCR or stream) is permanent and names ruleId, streamName and endpoint', async () => {
    const s = await sink({ ruleId: 'dcr-ffffffffffffffffffffffffffffffff' });
    const error = await deliveryFailure(s.deliver(records(1), new AbortController().signal));
    expect(error).toMatchObject({ retryable: false, scope: 'destination', code: 'http-404' });
    expect(error.message).toMatch(/ruleId.*streamName.*endpoint/);
  });
});

describe('TLS', () => {
  it('trusts the endpoint only through tls.ca: without it the certificate problem is a permanent tls error', async () => {
    const options = setup.options();
    delete options.tls;
    const untrusted = await azureMonitorSinkFactory.create(
      'azmon-no-ca',
      azureMonitorOptionsSchema().parse(options),
      {
        logger: silentLogger(),
        vm: () => undefined,
        stateDir: tmp.dir,
      },
    );
    sinks.push(untrusted);
    const before = setup.double.requests().length;
    const error = await deliveryFailure(untrusted.deliver(records(1), new AbortController().signal));
    expect(error).toMatchObject({ retryable: false, code: 'tls' });
    expect(error.message).toMatch(/not issued by a trusted CA.*tls\.ca/);
    expect(setup.double.requests().length).toBe(before);

    // The same endpoint with the private CA as tls.ca: delivered.
    const trusted = await sink();
    const batch = records(1);
    await trusted.deliver(batch, new AbortController().signal);
    expect(rowIds()).toContain(batch[0]!.id);
  });

  it('refuses tls together with an HTTPS proxy the SDK would use instead, naming the fix', async () => {
    const saved = { https: process.env.HTTPS_PROXY, no: process.env.NO_PROXY };
    process.env.HTTPS_PROXY = 'http://127.0.0.1:3128';
    delete process.env.NO_PROXY;
    try {
      await expect(sink()).rejects.toThrow(/NO_PROXY.*NODE_EXTRA_CA_CERTS/);
    } finally {
      if (saved.https === undefined) delete process.env.HTTPS_PROXY;
      else process.env.HTTPS_PROXY = saved.https;
      if (saved.no !== undefined) process.env.NO_PROXY = saved.no;
    }
  });
});

describe('the sink object', () => {
  it('is an AzureMonitorSink with the documented batch size', async () => {
    const s = await sink();
    expect(s).toBeInstanceOf(AzureMonitorSink);
    expect(s.maxBatch).toBe(500);
  });
});

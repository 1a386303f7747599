/**
 * The sink compliance suite (docs/sinks.md): every entry of the sink registry, created through its registered
 * factory (stdout: with a captured stream), against its real local receiver, through the real DeliveryEngine
 * and a real SQLite outbox. A registered type without a harness fails the suite, so a new sink cannot skip it.
 *
 * Rules checked for each type: ordered at-least-once delivery across a retryable outage; retryable failures
 * retried, permanent ones dead-lettered (where the destination has a permanent failure); a permanent failure of
 * the k-th record of a batch reported with failedIndex k (records before it acknowledged, it dead-lettered, the
 * rest delivered in order; one-record-per-request sinks: the first failing record's index; a sink whose protocol
 * is all-or-nothing declares it and the engine isolates the record); a delivery that hangs
 * is aborted by the engine's delivery timeout and retried (the sink honours the signal); a deliver() with an
 * aborted signal rejects; close() twice is fine; configured secrets appear in no retry message and no
 * dead-letter error, even when the receiver echoes them back.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryEngine } from '../../../src/delivery/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { silentLogger } from '../../../src/log.ts';
import {
  DELIVERY_ERROR_CODE_FAMILIES,
  DELIVERY_ERROR_CODES,
  isDeliveryErrorCode,
} from '../../../src/sinks/delivery-errors.ts';
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import { createStdoutSink } from '../../../src/sinks/stdout/index.ts';
import { DeliveryError, type Sink, type SinkContext } from '../../../src/sinks/types.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { makeRecord } from '../../integration/sinks/otel/records.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { type OtlpHttpReceiver, startOtlpHttpReceiver } from '../../support/otlp-receiver.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

/** How a test drives one sink type's real receiver. */
interface Harness {
  /** Raw options, parsed with the factory's own schema. */
  options: Record<string, unknown>;
  /** Configured secret values that must never show up in an error. */
  secrets: string[];
  /** Builds the sink some other way than factory.create (stdout: a captured stream instead of fd 1). */
  create?(name: string): Promise<Sink>;
  /** Ids of the records that reached the receiver, in arrival order (duplicates included). */
  arrived(): string[];
  /** Make every following delivery fail; 'permanent' only where the destination has a permanent failure. */
  breakDestination(kind: 'retryable' | 'permanent'): void;
  repair(): void;
  /** Whether the destination has a permanent failure mode (file and stdout only fail retryably). */
  permanent: boolean;
  /** Make the destination stop answering (undefined: a local write that cannot hang, file and stdout). */
  hang?(): void;
  /**
   * Make the destination permanently reject this one record and accept every other (the receiver fails the
   * request, or the part of a batch, that carries it). Returns the record to commit: Event Hubs gets an oversized
   * copy, which the hub's message size limit rejects. Undefined where the destination has no permanent failure
   * (file, stdout). repair() lifts it.
   */
  poison?(record: LifecycleRecord): LifecycleRecord;
  /**
   * Why this batch sink cannot name the failing record (its protocol accepts or rejects a request as a whole):
   * it leaves failedIndex unset and the engine isolates the record. Unset: the sink must report failedIndex.
   */
  failedIndexUnknown?: string;
  close(): Promise<void>;
}

const SECRET = 'Sup3rS3cretT0ken-compliance-4711';
const ENV_SECRET = 'SEF_COMPLIANCE_SECRET';
const ENV_HUB = 'SEF_COMPLIANCE_EH_CONN';
const tmp = makeTempDir('sef-compliance-');
let double: EventHubsDouble;

let batches = 0;
/** Unique event ids, so a receiver's payload (a Slack message, an Adaptive Card) names its record. */
function records(n: number): LifecycleRecord[] {
  batches += 1;
  const tag = String(batches).padStart(4, '0');
  return Array.from({ length: n }, (_, i) =>
    makeRecord('scheduled', { eventId: `C0DE${tag}-0000-4000-8000-${String(i).padStart(12, '0')}` }),
  );
}

/** Record ids whose event id appears in a text payload, in order of the payloads. */
function idsInBodies(bodies: string[], known: readonly LifecycleRecord[]): string[] {
  const ids: string[] = [];
  for (const body of bodies) for (const r of known) if (body.includes(r.data.EventId)) ids.push(r.id);
  return ids;
}

let allRecords: LifecycleRecord[] = [];

function httpHarness(type: 'webhook' | 'slack' | 'teams') {
  return async (): Promise<Harness> => {
    const server = await HttpSinkServer.start({ status: 200, body: 'ok' });
    const options: Record<string, unknown> = { url: server.url(`/hook/${SECRET}`) };
    if (type === 'webhook') options.headers = { 'X-Api-Key': `\${${ENV_SECRET}}` };
    const poisoned = new Set<string>();
    const ok = () => server.requests.filter((_, i) => !failed.has(i)).map((r) => r.body);
    const failed = new Set<number>();
    let broken = false;
    return {
      options,
      secrets: [SECRET, server.url(`/hook/${SECRET}`)],
      arrived: () => idsInBodies(ok(), allRecords),
      breakDestination(kind) {
        broken = true;
        server.setDefault(
          kind === 'retryable'
            ? { status: 503, body: `busy, retry ${SECRET}` }
            : { status: 400, body: `rejected request to ${server.url(`/hook/${SECRET}`)}` },
        );
      },
      repair() {
        // requests answered while broken did not deliver
        if (broken) for (let i = 0; i < server.requests.length; i++) failed.add(i);
        broken = false;
        server.setDefault({ status: 200, body: 'ok' });
        server.setResponder(undefined);
        poisoned.clear();
      },
      poison(record) {
        poisoned.add(record.data.EventId);
        server.setResponder((request) => {
          if (![...poisoned].some((id) => request.body.includes(id))) return undefined;
          failed.add(server.requests.indexOf(request)); // answered 400: not delivered
          return { status: 400, body: `rejected record ${record.data.EventId} ${SECRET}` };
        });
        return record;
      },
      permanent: true,
      hang() {
        broken = true;
        server.setDefault({ hang: true });
      },
      close: () => server.close(),
    };
  };
}

const HARNESSES: Record<string, () => Promise<Harness>> = {
  webhook: httpHarness('webhook'),
  slack: httpHarness('slack'),
  teams: httpHarness('teams'),
  async otel(): Promise<Harness> {
    const receiver: OtlpHttpReceiver = await startOtlpHttpReceiver();
    return {
      options: { endpoint: receiver.url, headers: { authorization: `\${${ENV_SECRET}}` }, timeoutMs: 5000 },
      secrets: [SECRET],
      arrived: () => receiver.acceptedRecords().map((r) => String(r.attributes['cloudevents.event_id'])),
      breakDestination(kind) {
        receiver.setDefault(
          kind === 'retryable' ? { status: 503, body: SECRET } : { status: 400, body: `bad token ${SECRET}` },
        );
      },
      repair() {
        receiver.setDefault({ status: 200 });
        receiver.setResponder(undefined);
      },
      poison(record) {
        receiver.setResponder((received) =>
          received.some((r) => r.attributes['cloudevents.event_id'] === record.id)
            ? { status: 400, body: `invalid log record ${record.id} ${SECRET}` }
            : undefined,
        );
        return record;
      },
      failedIndexUnknown: 'an OTLP export request is accepted or rejected as a whole',
      permanent: true,
      hang: () => receiver.setDefault({ hang: true }),
      close: () => receiver.close(),
    };
  },
  async eventhubs(): Promise<Harness> {
    const hub = 'compliance';
    process.env[ENV_HUB] = double.connectionString(hub);
    return {
      options: {
        connectionString: `\${${ENV_HUB}}`,
        retry: { maxRetries: 0, retryDelayMs: 20, maxRetryDelayMs: 50, timeoutMs: 5000 },
      },
      secrets: [double.sasKey, double.connectionString(hub)],
      arrived: () => double.received(hub).map((e) => String(e.messageId)),
      breakDestination(kind) {
        double.setFault({ kind: kind === 'retryable' ? 'server-busy' : 'message-too-large', hub });
      },
      repair: () => double.clearFaults(),
      // Larger than the hub's message size limit (1 MiB on the double): the sink sends the records before it in
      // their own batch, then reports the oversized one's index.
      poison: (record) => ({ ...record, data: { ...record.data, Description: 'x'.repeat(1_100_000) } }),
      permanent: true,
      hang: () => double.setFault({ kind: 'never-settle', hub }),
      close: async () => {},
    };
  },
  async file(): Promise<Harness> {
    const path = join(tmp.dir, `out-${Math.random().toString(36).slice(2)}`, 'records.jsonl');
    let blocker: string | undefined;
    return {
      options: { path },
      secrets: [],
      arrived: () => {
        try {
          return readFileSync(path, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => (JSON.parse(l) as LifecycleRecord).id);
        } catch {
          return [];
        }
      },
      breakDestination() {
        // a regular file where the sink's directory should be: mkdir/open fail (retryable)
        blocker = join(path, '..');
        rmSync(blocker, { recursive: true, force: true });
        writeFileSync(blocker, 'not a directory');
      },
      repair() {
        if (blocker !== undefined) rmSync(blocker);
        blocker = undefined;
      },
      permanent: false,
      close: async () => {},
    };
  },
  async stdout(): Promise<Harness> {
    const lines: string[] = [];
    let failing = false;
    // A captured stream: a real Writable errors once and stays errored, while stdout (a pipe that fills up
    // or a reader that restarts) can fail one write and take the next, so only write() (and the error listener
    // the sink attaches) is provided.
    const stream = {
      on: () => stream,
      write(chunk: string, callback: (error?: Error | null) => void): boolean {
        if (failing) callback(new Error('EPIPE: broken pipe'));
        else {
          lines.push(...chunk.split('\n').filter(Boolean));
          callback();
        }
        return true;
      },
    } as unknown as Writable;
    return {
      options: {},
      secrets: [],
      create: async (name) => createStdoutSink(name, stream),
      arrived: () => lines.map((l) => (JSON.parse(l) as LifecycleRecord).id),
      breakDestination() {
        failing = true;
      },
      repair() {
        failing = false;
      },
      permanent: false,
      close: async () => {},
    };
  },
  async exec(): Promise<Harness> {
    const control = join(tmp.dir, `mode-${Math.random().toString(36).slice(2)}`);
    const out = `${control}.out`;
    const reject = `${control}.reject`;
    writeFileSync(control, 'ok');
    writeFileSync(out, '');
    writeFileSync(reject, '');
    const script = [
      "const fs = require('node:fs');",
      'const [control, out, reject] = process.argv.slice(1);',
      "let input = ''; process.stdin.on('data', (d) => { input += d; });",
      "process.stdin.on('end', () => {",
      "  const mode = fs.readFileSync(control, 'utf8');",
      "  if (mode === 'retryable') { process.stderr.write('busy'); process.exit(3); }",
      "  if (mode === 'permanent') { process.stderr.write('rejected'); process.exit(4); }",
      "  if (mode === 'hang') { setTimeout(() => {}, 600000); return; }",
      "  if (JSON.parse(input).id === fs.readFileSync(reject, 'utf8')) { process.stderr.write('rejected'); process.exit(4); }",
      "  fs.appendFileSync(out, JSON.parse(input).id + '\\n');",
      '});',
    ].join('\n');
    return {
      options: {
        command: process.execPath,
        args: ['-e', script, control, out, reject],
        permanentExitCodes: [4],
      },
      secrets: [],
      arrived: () => readFileSync(out, 'utf8').split('\n').filter(Boolean),
      breakDestination: (kind) => writeFileSync(control, kind),
      repair() {
        writeFileSync(control, 'ok');
        writeFileSync(reject, '');
      },
      poison(record) {
        writeFileSync(reject, record.id);
        return record;
      },
      permanent: true,
      hang: () => writeFileSync(control, 'hang'),
      close: async () => {},
    };
  },
};

function context(): SinkContext {
  return { logger: silentLogger(), vm: () => undefined, stateDir: tmp.dir };
}

beforeAll(async () => {
  process.env[ENV_SECRET] = SECRET;
  double = await startEventHubsDouble({ hubs: { compliance: 2 } });
});
afterAll(async () => {
  delete process.env[ENV_SECRET];
  delete process.env[ENV_HUB];
  await double.close();
  tmp.cleanup();
});

it('every registered sink type has a compliance harness', () => {
  const missing = SINK_FACTORIES.map((f) => f.type).filter((type) => !(type in HARNESSES));
  expect(missing, 'add a harness to test/unit/sinks/compliance.test.ts').toEqual([]);
  expect(SINK_FACTORIES.length).toBeGreaterThan(0);
});

it('docs/sinks.md publishes every delivery error code', () => {
  const docs = readFileSync(new URL('../../../docs/sinks.md', import.meta.url), 'utf8');
  const published = [
    ...Object.keys(DELIVERY_ERROR_CODES),
    ...DELIVERY_ERROR_CODE_FAMILIES.map((f) => f.form),
  ];
  expect(published.filter((code) => !docs.includes(`\`${code}\``))).toEqual([]);
});

describe.each(SINK_FACTORIES.map((f) => [f.type, f] as const))('sink type %s', (type, factory) => {
  let harness: Harness;
  let store: Store;
  let storeDir: ReturnType<typeof makeTempDir>;
  const cleanups: (() => Promise<void> | void)[] = [];
  /** Every DeliveryError code this sink type produced in the tests below (checked against the list at the end). */
  const producedCodes = new Set<string>();
  function noteCode(error: unknown): void {
    if (error instanceof DeliveryError) producedCodes.add(error.code);
  }

  async function build(name: string): Promise<Sink> {
    const sink =
      harness.create !== undefined
        ? await harness.create(name)
        : await factory.create(name, factory.optionsSchema.parse(harness.options), context());
    cleanups.push(async () => {
      await sink.close?.();
    });
    return sink;
  }

  function engineFor(sink: Sink, deliveryTimeoutMs?: number) {
    const messages: string[] = [];
    const codes: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [
        { sink, backoff: { initialMs: 5, maxMs: 20 }, ...(deliveryTimeoutMs ? { deliveryTimeoutMs } : {}) },
      ],
      logger: silentLogger(),
      rescanIntervalMs: 50,
      observer: {
        delivery: (e) => {
          if (e.type === 'deadLettered' && e.code !== undefined) producedCodes.add(e.code);
          if (e.type !== 'retry') return;
          producedCodes.add(e.code);
          messages.push(e.message);
          codes.push(e.code);
        },
      },
    });
    cleanups.push(() => engine.stop(1000));
    return { engine, messages, codes };
  }

  beforeAll(async () => {
    const make = HARNESSES[type];
    if (make === undefined) throw new Error(`no compliance harness for sink type ${type}`);
    harness = await make();
  });
  afterAll(async () => {
    await harness?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    store?.close?.();
    storeDir?.cleanup();
  });
  function freshStore() {
    storeDir = makeTempDir('sef-compliance-store-');
    store = openStore({ stateDir: storeDir.dir, logger: silentLogger() });
  }

  it('delivers every record at least once, in commit order, across a retryable outage; errors hold no secret', async () => {
    freshStore();
    const sink = await build(`c-${type}`);
    const batch = records(5);
    allRecords = [...allRecords, ...batch];
    const { engine, messages } = engineFor(sink);
    harness.breakDestination('retryable');
    store.commit(
      { v: 1 },
      batch.map((record) => ({ record, sinks: [sink.name] })),
    );
    engine.start();
    engine.notify();
    await waitFor(() => messages.length >= 2, 'two retryable failures');
    harness.repair();
    await waitFor(
      () => (store.stats().find((s) => s.sink === sink.name)?.pending ?? 0) === 0,
      'the outbox to drain',
    );

    const mine = new Set(batch.map((r) => r.id));
    const arrived = harness.arrived().filter((id) => mine.has(id));
    const firstSeen = arrived.filter((id, i) => arrived.indexOf(id) === i);
    expect(firstSeen).toEqual(batch.map((r) => r.id));
    expect(store.listDeadLetters({ sink: sink.name })).toEqual([]);
    for (const m of messages) for (const s of harness.secrets) expect(m).not.toContain(s);
  });

  it('dead-letters a permanently rejected record (retried never), with no secret in the error', async () => {
    freshStore();
    const sink = await build(`p-${type}`);
    const [record] = records(1);
    allRecords = [...allRecords, record!];
    const { engine, messages } = engineFor(sink);
    if (!harness.permanent) {
      // this destination only fails retryably: a failure is retried and the record is never dead-lettered
      harness.breakDestination('retryable');
      store.commit({ v: 1 }, [{ record: record!, sinks: [sink.name] }]);
      engine.start();
      engine.notify();
      await waitFor(() => messages.length >= 2, 'retries');
      expect(store.listDeadLetters({ sink: sink.name })).toEqual([]);
      harness.repair();
      await waitFor(() => (store.stats().find((s) => s.sink === sink.name)?.pending ?? 0) === 0, 'drain');
      return;
    }
    harness.breakDestination('permanent');
    store.commit({ v: 1 }, [{ record: record!, sinks: [sink.name] }]);
    engine.start();
    engine.notify();
    const dead = await waitFor(() => {
      const rows = store.listDeadLetters({ sink: sink.name });
      return rows.length > 0 ? rows : undefined;
    }, 'the dead letter');
    harness.repair();
    expect(dead.map((d) => d.recordId)).toEqual([record!.id]);
    expect(dead[0]!.reason).toBe('permanent');
    expect(messages).toEqual([]);
    for (const s of harness.secrets) expect(dead[0]!.error).not.toContain(s);
  });

  it('a permanent failure of the k-th record of a batch names it (failedIndex): records before it acknowledged, it dead-lettered, the rest retried in order', async () => {
    freshStore();
    const K = 2;
    const arrivedOf = (batch: readonly LifecycleRecord[]) => {
      const mine = new Set(batch.map((r) => r.id));
      return harness.arrived().filter((id) => mine.has(id));
    };
    if (harness.poison === undefined) {
      // A local write (file, stdout) has no permanent failure: a failed batch write is retryable and claims no
      // part of the batch, so the engine re-delivers all of it (the outage test above shows it end to end).
      expect(['file', 'stdout']).toContain(type);
      const sink = await build(`k-${type}`);
      const batch = records(5);
      allRecords = [...allRecords, ...batch];
      harness.breakDestination('retryable');
      const error = await sink.deliver(batch, new AbortController().signal).then(
        () => undefined,
        (e: unknown) => e,
      );
      harness.repair();
      noteCode(error);
      expect(error).toBeInstanceOf(DeliveryError);
      expect(error).toMatchObject({ retryable: true, failedIndex: undefined });
      expect(arrivedOf(batch)).toEqual([]);
      return;
    }

    // 1. deliver() called directly with a batch whose k-th record the receiver rejects. Sinks that send one
    //    record per request loop over the batch: the equivalent is the index of the first failing record.
    const direct = await build(`d-${type}`);
    const first = records(5);
    first[K] = harness.poison(first[K]!);
    allRecords = [...allRecords, ...first];
    const error = await direct.deliver(first, new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    harness.repair();
    noteCode(error);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(false);
    for (const s of harness.secrets) expect((error as DeliveryError).message).not.toContain(s);
    if (harness.failedIndexUnknown === undefined) {
      expect((error as DeliveryError).failedIndex).toBe(K);
      // The index is truthful: the records before it reached the destination, the ones after it did not.
      expect(arrivedOf(first)).toEqual(first.slice(0, K).map((r) => r.id));
    } else {
      expect((error as DeliveryError).failedIndex).toBeUndefined();
      expect(arrivedOf(first)).toEqual([]); // all or nothing, as the sink says
    }

    // 2. The same through the real engine and outbox: every deliver() call observed.
    const calls: Array<{ ids: string[]; failedIndex?: number | undefined; retryable?: boolean }> = [];
    const real = await build(`e-${type}`);
    const observed: Sink = {
      name: real.name,
      maxBatch: real.maxBatch,
      async deliver(batch, signal) {
        try {
          await real.deliver(batch, signal);
          calls.push({ ids: batch.map((r) => r.id) });
        } catch (e) {
          noteCode(e);
          calls.push({
            ids: batch.map((r) => r.id),
            ...(e instanceof DeliveryError ? { failedIndex: e.failedIndex, retryable: e.retryable } : {}),
          });
          throw e;
        }
      },
    };
    const batch = records(5);
    batch[K] = harness.poison(batch[K]!);
    allRecords = [...allRecords, ...batch];
    const ids = batch.map((r) => r.id);
    const { engine, messages } = engineFor(observed);
    store.commit(
      { v: 1 },
      batch.map((record) => ({ record, sinks: [observed.name] })),
    );
    engine.start();
    engine.notify();
    await waitFor(
      () =>
        (store.stats().find((s) => s.sink === observed.name)?.pending ?? 0) === 0 &&
        store.listDeadLetters({ sink: observed.name }).length > 0,
      'the outbox to drain around the dead letter',
    );
    harness.repair();

    const dead = store.listDeadLetters({ sink: observed.name });
    expect(dead.map((d) => [d.recordId, d.reason])).toEqual([[ids[K], 'permanent']]);
    for (const s of harness.secrets) expect(dead[0]!.error).not.toContain(s);
    expect(messages).toEqual([]); // nothing was retried as a failure: the rest simply followed
    // Every other record arrived exactly once (those before K were acknowledged, not re-sent), in commit order.
    expect(arrivedOf(batch)).toEqual(ids.filter((_, i) => i !== K));
    if (observed.maxBatch === 1) {
      // one record per request: each a batch of one; the k-th is the only failure
      expect(calls.map((c) => c.ids)).toEqual(ids.map((id) => [id]));
      expect(calls.filter((c) => c.retryable === false).map((c) => c.ids)).toEqual([[ids[K]]]);
    } else if (harness.failedIndexUnknown === undefined) {
      // one batch, failing at K with failedIndex K; then the rest in one batch
      expect(calls).toEqual([{ ids, failedIndex: K, retryable: false }, { ids: ids.slice(K + 1) }]);
    } else {
      // the sink cannot name the record: the engine re-delivers one record at a time to isolate it
      expect(calls[0]).toEqual({ ids, failedIndex: undefined, retryable: false });
      expect(calls.slice(1).map((c) => c.ids)).toEqual(ids.map((id) => [id]));
    }
  });

  it('a delivery that hangs is aborted by the engine timeout and retried; nothing is lost', async () => {
    freshStore();
    const sink = await build(`t-${type}`);
    const batch = records(2);
    allRecords = [...allRecords, ...batch];
    const { engine, codes } = engineFor(sink, 2500); // above Slack's and Teams' 1 message/s pacing
    if (harness.hang === undefined) {
      // a local write (file, stdout) cannot hang on a receiver: it is simply delivered
      expect(['file', 'stdout']).toContain(type);
    } else harness.hang();
    store.commit(
      { v: 1 },
      batch.map((record) => ({ record, sinks: [sink.name] })),
    );
    engine.start();
    engine.notify();
    if (harness.hang !== undefined) {
      await waitFor(
        () => codes.length >= 1,
        'the hung attempt aborted (its promise settled) and scheduled for retry',
      );
      harness.repair();
    }
    await waitFor(
      () => (store.stats().find((s) => s.sink === sink.name)?.pending ?? 0) === 0,
      'the outbox to drain',
    );
    const mine = new Set(batch.map((r) => r.id));
    const arrived = harness.arrived().filter((id) => mine.has(id));
    expect(arrived.filter((id, i) => arrived.indexOf(id) === i)).toEqual(batch.map((r) => r.id));
  });

  it('rejects a delivery whose signal is already aborted, and close() twice is fine', async () => {
    const sink = await build(`a-${type}`);
    const [record] = records(1);
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const error = await sink.deliver([record!], controller.signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    noteCode(error);
    expect(error).toMatchObject({ name: 'DeliveryError', retryable: true, code: 'aborted' });
    await sink.close?.();
    await expect(Promise.resolve(sink.close?.())).resolves.toBeUndefined();
  });

  it('every error code it produced is on the published list (src/sinks/delivery-errors.ts, docs/sinks.md)', () => {
    expect(producedCodes.size).toBeGreaterThan(0);
    expect([...producedCodes].filter((code) => !isDeliveryErrorCode(code))).toEqual([]);
  });
});

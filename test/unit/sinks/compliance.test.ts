/**
 * The sink compliance suite (docs/sinks.md): every entry of the sink registry, created through its registered
 * factory (stdout: with a captured stream), against its real local receiver, through the real DeliveryEngine
 * and a real SQLite outbox. Each type's harness lives beside that sink's tests, listed in test/support/sink-harnesses.ts;
 * a registered type without a harness fails the suite, so a new sink cannot skip it.
 *
 * Rules checked for each type: ordered at-least-once delivery across a retryable outage; retryable failures
 * retried; the two classes of permanent failure (docs/delivery.md): a failure of the record dead-lettered (where
 * the destination has one), a refusal of the destination (revoked credentials, a deleted endpoint or stream,
 * untrusted TLS; every type except the local file and stdout) pausing the sink with every record kept pending,
 * probed one record at a time, and resumed by itself once the destination accepts again; a permanent failure of
 * the k-th record of a batch reported with failedIndex k (records before it acknowledged, it dead-lettered, the
 * rest delivered in order; one-record-per-request sinks: the first failing record's index; a sink whose protocol
 * is all-or-nothing declares it and the engine isolates the record); a delivery that hangs
 * is aborted by the engine's delivery timeout and retried (the sink honours the signal); a deliver() with an
 * aborted signal rejects; close() twice is fine; configured secrets appear in no retry message and no
 * dead-letter error, even when the receiver echoes them back. Every type with a `tls` option (the HTTP sinks) also
 * runs once over TLS: its harness's receiver over HTTPS with a private CA (HarnessContext.tls), delivered with
 * tls.ca, and the destination's permanent `tls` without it.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryEngine, type PausedEvent, type ResumedEvent } from '../../../src/delivery/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { silentLogger } from '../../../src/log.ts';
import {
  DELIVERY_ERROR_CODE_FAMILIES,
  DELIVERY_ERROR_CODES,
  isDeliveryErrorCode,
} from '../../../src/sinks/delivery-errors.ts';
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import { DeliveryError, type Sink } from '../../../src/sinks/types.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import {
  ENV_SECRET,
  type Harness,
  type HarnessContext,
  RecordBatches,
  SECRET,
  sinkContext,
} from '../../support/sink-harness.ts';
import { SINK_HARNESSES } from '../../support/sink-harnesses.ts';
import { makeTestPki } from '../../support/tls-certs.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-compliance-');
const batches = new RecordBatches();
/** A batch of n records with unique event ids (every one remembered for harnesses that match payload text). */
const records = (n: number): LifecycleRecord[] => batches.next(n);
const harnessContext: HarnessContext = { known: () => batches.all(), dir: tmp.dir };

beforeAll(() => {
  process.env[ENV_SECRET] = SECRET;
});
afterAll(() => {
  delete process.env[ENV_SECRET];
  tmp.cleanup();
});

it('every registered sink type has a compliance harness', () => {
  const missing = SINK_FACTORIES.map((f) => f.type).filter((type) => !(type in SINK_HARNESSES));
  expect(missing, 'add a harness and a line in test/support/sink-harnesses.ts').toEqual([]);
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
        : await factory.create(name, factory.optionsSchema.parse(harness.options), sinkContext(tmp.dir));
    cleanups.push(async () => {
      await sink.close?.();
    });
    return sink;
  }

  function engineFor(sink: Sink, deliveryTimeoutMs?: number) {
    const messages: string[] = [];
    const codes: string[] = [];
    const paused: PausedEvent[] = [];
    const resumed: ResumedEvent[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [
        {
          sink,
          backoff: { initialMs: 5, maxMs: 20 },
          probeBackoff: { initialMs: 20, maxMs: 50 },
          ...(deliveryTimeoutMs ? { deliveryTimeoutMs } : {}),
        },
      ],
      logger: silentLogger(),
      rescanIntervalMs: 50,
      observer: {
        delivery: (e) => {
          if (e.type === 'deadLettered' && e.code !== undefined) producedCodes.add(e.code);
          if (e.type === 'paused') {
            producedCodes.add(e.code);
            paused.push(e);
          }
          if (e.type === 'resumed') resumed.push(e);
          if (e.type !== 'retry') return;
          producedCodes.add(e.code);
          messages.push(e.message);
          codes.push(e.code);
        },
      },
    });
    cleanups.push(() => engine.stop(1000));
    return { engine, messages, codes, paused, resumed };
  }

  beforeAll(async () => {
    const make = SINK_HARNESSES[type];
    if (make === undefined) throw new Error(`no compliance harness for sink type ${type}`);
    harness = await make(harnessContext);
  });
  afterAll(async () => {
    await harness?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    store?.close?.();
    storeDir?.cleanup();
  });
  /** Resolves once nothing is pending for `sink` any more. */
  const untilDrained = (sink: string, what: string) =>
    waitFor(() => (store.stats().find((s) => s.sink === sink)?.pending ?? 0) === 0, what);
  /** The ids of `batch` that reached the destination, each once, in the order they first arrived. */
  const firstArrivals = (batch: readonly LifecycleRecord[]): string[] => {
    const mine = new Set(batch.map((r) => r.id));
    const arrived = harness.arrived().filter((id) => mine.has(id));
    return arrived.filter((id, i) => arrived.indexOf(id) === i);
  };

  function freshStore() {
    storeDir = makeTempDir('sef-compliance-store-');
    store = openStore({ stateDir: storeDir.dir, logger: silentLogger() });
  }

  it('delivers every record at least once, in commit order, across a retryable outage; errors hold no secret', async () => {
    freshStore();
    const sink = await build(`c-${type}`);
    const batch = records(5);
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
    await untilDrained(sink.name, 'the outbox to drain');

    expect(firstArrivals(batch)).toEqual(batch.map((r) => r.id));
    expect(store.listDeadLetters({ sink: sink.name })).toEqual([]);
    for (const m of messages) for (const s of harness.secrets) expect(m).not.toContain(s);
  });

  it('dead-letters a record the destination refuses (a failure of the record: retried never, the sink not paused), with no secret in the error', async () => {
    freshStore();
    const sink = await build(`p-${type}`);
    const [record] = records(1);
    const { engine, messages, paused } = engineFor(sink);
    if (!harness.permanent) {
      // this destination only fails retryably: a failure is retried and the record is never dead-lettered
      harness.breakDestination('retryable');
      store.commit({ v: 1 }, [{ record: record!, sinks: [sink.name] }]);
      engine.start();
      engine.notify();
      await waitFor(() => messages.length >= 2, 'retries');
      expect(store.listDeadLetters({ sink: sink.name })).toEqual([]);
      harness.repair();
      await untilDrained(sink.name, 'drain');
      return;
    }
    harness.breakDestination('record');
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
    expect(paused).toEqual([]);
    expect(engine.paused()).toEqual([]);
    for (const s of harness.secrets) expect(dead[0]!.error).not.toContain(s);
  });

  it('pauses on a refusal of the destination (a failure of the destination): nothing dead-lettered, every record pending, one record per probe; resumes by itself once the destination accepts, in order', async () => {
    freshStore();
    if (harness.refusal === undefined) {
      // A local write (file, stdout) has no destination that could refuse everything: it only fails retryably.
      expect(['file', 'stdout']).toContain(type);
      return;
    }
    const real = await build(`r-${type}`);
    const probeSizes: number[] = [];
    const failures: DeliveryError[] = [];
    const observed: Sink = {
      name: real.name,
      maxBatch: real.maxBatch,
      async deliver(batch, signal) {
        try {
          await real.deliver(batch, signal);
        } catch (e) {
          noteCode(e);
          if (e instanceof DeliveryError) failures.push(e);
          if (engine.paused().length > 0) probeSizes.push(batch.length);
          throw e;
        }
      },
    };
    const batch = records(4);
    const { engine, messages, paused, resumed } = engineFor(observed);
    harness.breakDestination('destination');
    store.commit(
      { v: 1 },
      batch.map((record) => ({ record, sinks: [observed.name] })),
    );
    engine.start();
    engine.notify();
    await waitFor(() => paused.length >= 3, `the sink paused by "${harness.refusal}", and two probes`);

    // Sorted as a failure of the destination: the sink paused, nothing dead-lettered, nothing retried as transient.
    expect(failures[0]).toMatchObject({ retryable: false, scope: 'destination' });
    expect(engine.paused()).toEqual([
      expect.objectContaining({ sink: observed.name, code: failures[0]!.code }),
    ]);
    expect(store.listDeadLetters({ sink: observed.name })).toEqual([]);
    expect(messages).toEqual([]);
    expect(store.pending(observed.name, 100).map((r) => r.recordId)).toEqual(batch.map((r) => r.id));
    expect(probeSizes.every((n) => n === 1)).toBe(true); // each probe is the head record alone
    for (const p of paused) for (const s of harness.secrets) expect(p.message).not.toContain(s);
    for (const s of harness.secrets) {
      expect(store.pending(observed.name, 1)[0]!.lastError).not.toContain(s);
      expect(engine.paused()[0]!.message).not.toContain(s);
    }

    harness.repair(); // the credentials fixed, the endpoint back
    await untilDrained(observed.name, 'the paused sink to resume by itself and drain');
    expect(firstArrivals(batch)).toEqual(batch.map((r) => r.id));
    expect(resumed).toEqual([expect.objectContaining({ sink: observed.name, code: failures[0]!.code })]);
    expect(engine.paused()).toEqual([]);
    expect(store.listDeadLetters({ sink: observed.name })).toEqual([]);
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
    const ids = batch.map((r) => r.id);
    const { engine, messages, paused } = engineFor(observed);
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
    expect(paused).toEqual([]); // a failure of one record never pauses the sink
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
    await untilDrained(sink.name, 'the outbox to drain');
    expect(firstArrivals(batch)).toEqual(batch.map((r) => r.id));
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

/** True when a sink type's options schema has a `tls` key (src/sinks/http/tls.ts): every HTTP sink. */
function hasTlsOption(schema: unknown): boolean {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  return shape !== undefined && 'tls' in shape;
}

const TLS_FACTORIES = SINK_FACTORIES.filter((f) => hasTlsOption(f.optionsSchema));

it('the HTTP sinks (webhook, slack, teams, otel) have a tls option, so they run over TLS below', () => {
  expect(TLS_FACTORIES.map((f) => f.type)).toEqual(
    expect.arrayContaining(['webhook', 'slack', 'teams', 'otel']),
  );
});

describe.each(TLS_FACTORIES.map((f) => [f.type, f] as const))('sink type %s over TLS', (type, factory) => {
  const pkiDir = makeTempDir('sef-compliance-pki-');
  const pki = makeTestPki(pkiDir.dir);
  let harness: Harness;
  beforeAll(async () => {
    harness = await SINK_HARNESSES[type]!({ ...harnessContext, tls: pki });
  });
  afterAll(async () => {
    await harness?.close();
    pkiDir.cleanup();
  });

  it('delivers a batch with tls.ca trusting a private CA; without tls.ca the failure is the permanent `tls`', async () => {
    expect(
      harness.options.tls,
      `the ${type} harness ignores HarnessContext.tls: start its receiver over HTTPS and set options.tls`,
    ).toBeDefined();
    const trusting = await factory.create(
      `tls-${type}`,
      factory.optionsSchema.parse(harness.options),
      sinkContext(tmp.dir),
    );
    const batch = records(Math.min(3, trusting.maxBatch ?? 3));
    try {
      for (let i = 0; i < batch.length; i += trusting.maxBatch ?? batch.length) {
        await trusting.deliver(
          batch.slice(i, i + (trusting.maxBatch ?? batch.length)),
          new AbortController().signal,
        );
      }
    } finally {
      await trusting.close?.();
    }
    const mine = new Set(batch.map((r) => r.id));
    expect(harness.arrived().filter((id) => mine.has(id))).toEqual(batch.map((r) => r.id));

    const { tls: _trust, ...untrustingOptions } = harness.options;
    const untrusting = await factory.create(
      `no-ca-${type}`,
      factory.optionsSchema.parse(untrustingOptions),
      sinkContext(tmp.dir),
    );
    const error = await untrusting.deliver(records(1), new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    await untrusting.close?.();
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error).toMatchObject({ code: 'tls', retryable: false, scope: 'destination' });
    const message = (error as DeliveryError).message;
    expect(message).toMatch(/TLS: the server's certificate is not issued by a trusted CA/);
    for (const secret of harness.secrets) expect(message).not.toContain(secret);
    for (const pem of [pki.ca.cert, pki.server.key]) expect(message).not.toContain(pem.split('\n')[1]);
  });
});

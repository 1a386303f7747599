/**
 * The sink compliance suite (docs/sinks.md): every entry of the sink registry, created through its registered
 * factory (stdout: with a captured stream), against its real local receiver, through the real DeliveryEngine
 * and a real SQLite outbox. A registered type without a harness fails the suite, so a new sink cannot skip it.
 *
 * Rules checked for each type: ordered at-least-once delivery across a retryable outage; retryable failures
 * retried, permanent ones dead-lettered (where the destination has a permanent failure); a delivery that hangs
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
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import { createStdoutSink } from '../../../src/sinks/stdout/index.ts';
import type { Sink, SinkContext } from '../../../src/sinks/types.ts';
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
      repair: () => receiver.setDefault({ status: 200 }),
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
    // or a reader that restarts) can fail one write and take the next, so only write() is provided.
    const stream = {
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
    writeFileSync(control, 'ok');
    writeFileSync(out, '');
    const script = [
      "const fs = require('node:fs');",
      'const [control, out] = process.argv.slice(1);',
      "let input = ''; process.stdin.on('data', (d) => { input += d; });",
      "process.stdin.on('end', () => {",
      "  const mode = fs.readFileSync(control, 'utf8');",
      "  if (mode === 'retryable') { process.stderr.write('busy'); process.exit(3); }",
      "  if (mode === 'permanent') { process.stderr.write('rejected'); process.exit(4); }",
      "  if (mode === 'hang') { setTimeout(() => {}, 600000); return; }",
      "  fs.appendFileSync(out, JSON.parse(input).id + '\\n');",
      '});',
    ].join('\n');
    return {
      options: { command: process.execPath, args: ['-e', script, control, out], permanentExitCodes: [4] },
      secrets: [],
      arrived: () => readFileSync(out, 'utf8').split('\n').filter(Boolean),
      breakDestination: (kind) => writeFileSync(control, kind),
      repair: () => writeFileSync(control, 'ok'),
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

describe.each(SINK_FACTORIES.map((f) => [f.type, f] as const))('sink type %s', (type, factory) => {
  let harness: Harness;
  let store: Store;
  let storeDir: ReturnType<typeof makeTempDir>;
  const cleanups: (() => Promise<void> | void)[] = [];

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
          if (e.type !== 'retry') return;
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
    await expect(sink.deliver([record!], controller.signal)).rejects.toBeDefined();
    await sink.close?.();
    await expect(Promise.resolve(sink.close?.())).resolves.toBeUndefined();
  });
});

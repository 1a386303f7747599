/**
 * Event Hubs end to end through the real CLI (issue 5, acceptance): simulator → `node src/cli/main.ts run`
 * (a child process) → SQLite outbox → Event Hubs sink (the real SDK over real AMQP) → the AMQP test double.
 * Every forwarder also has a file sink: what it wrote is the reference of what was committed.
 *
 * 1. Two bundled scenarios (live-migration-freeze, user-reboot) plus admin-injected events, stepped through
 *    virtual time, with retryable faults at the double: every committed record arrives, duplicates only with the
 *    identical id, partition key = vmId, messageId = CloudEvent id, cloudEvents:* properties, structured body.
 * 2. SIGKILL of the forwarder while a send is in flight (the double holds the transfer unsettled) and right
 *    after the double accepted a batch, repeated with restarts; and connection drops mid-batch: at-least-once.
 *
 * The connection string reaches the child only through the SEF_TEST_EH_CONN environment variable (the config
 * says `${SEF_TEST_EH_CONN}`), as in production; the tests check the key never shows up in its logs.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { deriveIdentity, type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import { type ForwarderChild, readFileSinkRecords, spawnCli } from '../../../support/child.ts';
import {
  type EventHubsDouble,
  type ReceivedEvent,
  startEventHubsDouble,
} from '../../../support/event-hubs-double/index.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';

/** SIGKILLs in the kill loop (half while a send is in flight, half right after the double accepted a batch). */
const KILLS = Number(process.env.SEF_EH_KILLS ?? 16);
const CONN_ENV = 'SEF_TEST_EH_CONN';
const EH_SINK = 'hub';

const tmp = makeTempDir('sef-eh-run-');
let double: EventHubsDouble;
const simulators: RunningSimulator[] = [];
const children: ForwarderChild[] = [];

beforeAll(async () => {
  double = await startEventHubsDouble({ hubs: { scenarios: 4, kills: 2, drops: 4 } });
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await c.exited;
  }
  await Promise.all(simulators.splice(0).map((s) => s.close()));
  double.clearFaults();
});
afterAll(async () => {
  await double?.close();
  tmp.cleanup();
});

interface Forwarder {
  name: string;
  config: string;
  db: string;
  file: string;
  hub: string;
  sim: RunningSimulator;
}

/** Writes a config with a file sink and an eventhubs sink whose connection string is `${SEF_TEST_EH_CONN}`. */
function forwarderConfig(name: string, sim: RunningSimulator, hub: string): Forwarder {
  const stateDir = join(tmp.dir, `${name}-state`);
  const file = join(tmp.dir, `${name}.jsonl`);
  const config = join(tmp.dir, `${name}.yaml`);
  writeFileSync(
    config,
    [
      `stateDir: ${JSON.stringify(stateDir)}`,
      `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
      'log: { level: info }',
      'sinks:',
      `  - { name: file, type: file, path: ${JSON.stringify(file)} }`,
      `  - name: ${EH_SINK}`,
      '    type: eventhubs',
      `    connectionString: '\${${CONN_ENV}}'`,
      '    partitionKey: vmId',
      // These tests follow the records through the outbox; heartbeats (outside it) have their own test
      // (test/integration/pipeline/heartbeats.test.ts).
      '    heartbeats: false',
      '    retry: { maxRetries: 1, retryDelayMs: 20, maxRetryDelayMs: 100, timeoutMs: 1500 }',
      '    delivery: { backoff: { initialMs: 20, maxMs: 200 } }',
      '',
    ].join('\n'),
  );
  return { name, config, db: join(stateDir, 'forwarder.db'), file, hub, sim };
}

function start(fwd: Forwarder): ForwarderChild {
  const child = spawnCli(['run', '--config', fwd.config], { [CONN_ENV]: double.connectionString(fwd.hub) });
  children.push(child);
  return child;
}

async function stopGracefully(child: ForwarderChild): Promise<void> {
  child.child.kill('SIGTERM');
  expect(await child.exited, child.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
  expect(child.stderr()).not.toContain(double.sasKey);
}

function readDb<T>(db: string, sql: string, fallback: T): T {
  if (!existsSync(db)) return fallback;
  const conn = new DatabaseSync(db, { readOnly: true, timeout: 5000 });
  try {
    return (conn.prepare(sql).get() as T | undefined) ?? fallback;
  } finally {
    conn.close();
  }
}

/** The DocumentIncarnation of the last poll the forwarder committed (-1 before its first commit). */
function committedIncarnation(fwd: Forwarder): number {
  const row = readDb<{ json?: string }>(fwd.db, 'SELECT json FROM state LIMIT 1', {});
  if (row.json === undefined) return -1;
  return (JSON.parse(row.json) as { lastIncarnation: number | null }).lastIncarnation ?? -1;
}

/** Outbox rows not yet acknowledged by `sink` (or by any sink). */
function pendingRows(fwd: Forwarder, sink?: string): number {
  const where = sink === undefined ? '' : ` WHERE sink = '${sink}'`;
  return readDb<{ n: number }>(fwd.db, `SELECT COUNT(*) AS n FROM outbox${where}`, { n: 0 }).n;
}

/** Resolves once the forwarder committed a poll of the simulator's current document. */
async function committedCurrentDocument(fwd: Forwarder): Promise<void> {
  const incarnation = fwd.sim.admin.document().DocumentIncarnation;
  await waitFor(() => committedIncarnation(fwd) >= incarnation, `${fwd.name}: incarnation ${incarnation}`, {
    timeoutMs: 20_000,
    intervalMs: 20,
  });
}

/** Steps virtual time to every pending transition, waiting for the forwarder to commit each document. */
async function playToEnd(fwd: Forwarder): Promise<void> {
  await committedCurrentDocument(fwd);
  for (let next = fwd.sim.admin.nextTransitionAt(); next !== null; next = fwd.sim.admin.nextTransitionAt()) {
    fwd.sim.admin.advance(Math.max(0, next - fwd.sim.admin.now()));
    await committedCurrentDocument(fwd);
  }
}

/** Waits until both sinks acknowledged everything committed; on timeout the error carries the child's log tail. */
async function drained(fwd: Forwarder, child: ForwarderChild): Promise<void> {
  await committedCurrentDocument(fwd);
  try {
    await waitFor(() => pendingRows(fwd) === 0, `${fwd.name}: the outbox to drain`, {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
  } catch (error) {
    const pending = `pending ${EH_SINK} ${pendingRows(fwd, EH_SINK)}, file ${pendingRows(fwd, 'file')}`;
    throw new Error(`${(error as Error).message} (${pending}); log tail:\n${child.stderr().slice(-4000)}`);
  }
}

const bodyOf = (e: ReceivedEvent) => e.body as LifecycleRecord;

/**
 * Asserts at-least-once from the file sink (what was committed) to the double: every record arrived, nothing
 * else arrived, every copy is the identical event, and the mapping (partition key = vmId, messageId, cloudEvents:*
 * properties, structured-mode body) holds. Returns the number of duplicate deliveries.
 */
function expectAtLeastOnce(committed: LifecycleRecord[], received: ReceivedEvent[]): number {
  const byId = new Map(committed.map((r) => [r.id, r]));
  expect(byId.size, 'the file sink has distinct ids').toBe(committed.length);
  const receivedIds = new Set(received.map((e) => e.messageId));
  expect([...byId.keys()].filter((id) => !receivedIds.has(id))).toEqual([]);
  expect([...receivedIds].filter((id) => id === undefined || !byId.has(id))).toEqual([]);
  const partitionOfKey = new Map<string, string>();
  for (const event of received) {
    const record = byId.get(event.messageId!)!;
    expect(bodyOf(event)).toEqual(record);
    expect(event.contentType).toMatch(/^application\/cloudevents\+json(;|$)/);
    expect(event.partitionKey).toBe(record.vmid);
    expect(event.partitionKey).toBe(record.data.vm.vmId);
    const props = event.applicationProperties;
    expect(props['cloudEvents:id']).toBe(record.id);
    expect(props['cloudEvents:source']).toBe(record.source);
    expect(props['cloudEvents:type']).toBe(record.type);
    expect(props['cloudEvents:subject']).toBe(record.subject);
    expect(new Date(props['cloudEvents:time'] as Date | string).getTime()).toBe(
      new Date(record.time).getTime(),
    );
    // one key, one partition (per-VM order)
    const partition = partitionOfKey.get(event.partitionKey!) ?? event.partitionId;
    partitionOfKey.set(event.partitionKey!, partition);
    expect(event.partitionId).toBe(partition);
  }
  return received.length - receivedIds.size;
}

/** `${subject}:${transition}` of every record, sorted. */
const transitions = (records: LifecycleRecord[]) => records.map((r) => `${r.subject}:${r.transition}`).sort();

describe('simulator scenarios → run → outbox → Event Hubs sink → double', () => {
  it('delivers every committed record with partition key, messageId and cloudEvents properties despite retryable faults', {
    timeout: 120_000,
  }, async ({ annotate }) => {
    const freezeSim = await startSimulator({ scenario: 'live-migration-freeze', timeScale: 0 });
    const rebootSim = await startSimulator({ scenario: 'user-reboot', timeScale: 0 });
    simulators.push(freezeSim, rebootSim);
    const freeze = forwarderConfig('freeze', freezeSim, 'scenarios');
    const reboot = forwarderConfig('reboot', rebootSim, 'scenarios');
    // Retryable faults, consumed by the first transfers (each failure is retried until it succeeds).
    const faults = [
      { kind: 'server-busy', times: 3 },
      { kind: 'timeout', times: 1 },
      { kind: 'released', times: 1 },
      { kind: 'internal-error', times: 1 },
    ] as const;
    for (const fault of faults) double.setFault({ ...fault, hub: 'scenarios' });
    const faultsBefore = double.stats().faultsInjected;

    const running = [start(freeze), start(reboot)];
    await Promise.all(running.map((c) => c.ready));
    // Admin-driven events next to the user-reboot scenario: several records per commit (multi-record batches),
    // two of them canceled before they start.
    await committedCurrentDocument(reboot);
    const extra = (['Redeploy', 'Freeze', 'Reboot', 'Reboot'] as const).map((type) =>
      rebootSim.admin.injectEvent({ type, noticeSeconds: 1800, startedFor: 60 }),
    );
    await committedCurrentDocument(reboot);
    for (const e of extra.slice(2)) rebootSim.admin.removeEvent(e.id);
    await Promise.all([playToEnd(freeze), playToEnd(reboot)]);
    await Promise.all([drained(freeze, running[0]!), drained(reboot, running[1]!)]);
    await Promise.all(running.map(stopGracefully));

    const freezeRecords = readFileSinkRecords(freeze.file);
    const rebootRecords = readFileSinkRecords(reboot.file);
    const freezeId = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123';
    const rebootId = '5B8C6D3E-0001-4C1A-9E2B-000000000001';
    expect(transitions(freezeRecords)).toEqual(
      [`${freezeId}:completed`, `${freezeId}:scheduled`, `${freezeId}:started`].sort(),
    );
    expect(transitions(rebootRecords)).toEqual(
      [
        ...['scheduled', 'started', 'completed'].map((t) => `${rebootId}:${t}`),
        ...extra.slice(0, 2).flatMap((e) => ['scheduled', 'started', 'completed'].map((t) => `${e.id}:${t}`)),
        ...extra.slice(2).flatMap((e) => ['scheduled', 'canceled'].map((t) => `${e.id}:${t}`)),
      ].sort(),
    );
    expect(new Set(freezeRecords.map((r) => r.vmid))).toEqual(new Set([deriveIdentity('WestNO_0').vmId]));
    expect(new Set(rebootRecords.map((r) => r.vmid))).toEqual(new Set([deriveIdentity('sim-vm-0').vmId]));

    const received = double.received('scenarios');
    const duplicates = expectAtLeastOnce([...freezeRecords, ...rebootRecords], received);
    expect(double.stats().faultsInjected - faultsBefore).toBe(faults.reduce((n, f) => n + f.times, 0));
    expect(new Set(received.map((e) => e.partitionKey)).size).toBe(2);
    await annotate(
      `scenarios: ${freezeRecords.length + rebootRecords.length} records committed, ${received.length} ` +
        `received (${duplicates} duplicates) after ${faults.length} kinds of retryable faults`,
    );
  });
});

describe('at-least-once across SIGKILL mid-send and connection drops', () => {
  it(`holds over ${KILLS} SIGKILLs of the forwarder (in flight at the double, or just accepted)`, {
    timeout: 120_000,
  }, async ({ annotate }) => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const fwd = forwarderConfig('kills', sim, 'kills');
    const injected: string[] = [];
    const removed: string[] = [];
    let previous: string[] = [];
    let inFlightKills = 0;
    let acceptedKills = 0;
    let stranded = 0;

    for (let i = 0; i < KILLS; i++) {
      const child = start(fwd);
      await child.ready;
      const inFlight = i % 2 === 0;
      const faultsBefore = double.stats().faultsInjected;
      if (inFlight) {
        // Whatever the last kill left in the outbox goes out first, then every send hangs unsettled.
        await waitFor(() => pendingRows(fwd, EH_SINK) === 0, 'leftovers delivered', { timeoutMs: 20_000 });
        double.setFault({ kind: 'never-settle', hub: 'kills' });
      }
      // One document change: the previous round's events are canceled, two new ones are scheduled.
      for (const id of previous) sim.admin.removeEvent(id);
      removed.push(...previous);
      previous = [0, 1].map(() => sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 7200 }).id);
      injected.push(...previous);
      const fresh = new Set(previous);
      if (inFlight) {
        await waitFor(() => double.stats().faultsInjected > faultsBefore, 'a transfer held in flight');
      } else {
        await waitFor(
          () => double.received('kills').some((e) => fresh.has(bodyOf(e).subject)),
          'the double to accept the new records',
        );
      }
      child.child.kill('SIGKILL');
      expect((await child.exited).signal).toBe('SIGKILL');
      double.clearFaults();
      if (inFlight) {
        inFlightKills++;
        // The held records were never acknowledged: they are still in the outbox for the next run.
        const left = pendingRows(fwd, EH_SINK);
        expect(left).toBeGreaterThan(0);
        stranded += left;
      } else {
        acceptedKills++;
      }
    }

    const final = start(fwd);
    await final.ready;
    await drained(fwd, final);
    await stopGracefully(final);

    const committed = readFileSinkRecords(fwd.file);
    const fileIds = new Set(committed.map((r) => r.id));
    const distinctCommitted = committed.filter((r, i) => committed.findIndex((x) => x.id === r.id) === i);
    expect(distinctCommitted.length).toBe(fileIds.size);
    // Every transition the driver caused was committed (the file sink is itself at-least-once: dedupe by id).
    expect(transitions(distinctCommitted)).toEqual(
      [...injected.map((id) => `${id}:scheduled`), ...removed.map((id) => `${id}:canceled`)].sort(),
    );
    for (const r of committed) expect(r).toEqual(distinctCommitted.find((x) => x.id === r.id));
    const received = double.received('kills');
    const duplicates = expectAtLeastOnce(distinctCommitted, received);
    expect(inFlightKills + acceptedKills).toBe(KILLS);
    await annotate(
      `kills: ${KILLS} SIGKILLs (${inFlightKills} with a transfer in flight, ${stranded} records stranded and ` +
        `re-sent; ${acceptedKills} right after an accept), ${fileIds.size} records, ${received.length} received ` +
        `(${duplicates} duplicates with identical ids)`,
    );
  });

  it('holds when connections drop mid-batch while the forwarder runs', { timeout: 60_000 }, async ({
    annotate,
  }) => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const fwd = forwarderConfig('drops', sim, 'drops');
    const child = start(fwd);
    await child.ready;
    const injected: string[] = [];
    const injectMany = (n: number) => {
      for (let k = 0; k < n; k++)
        injected.push(sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 7200 }).id);
    };

    // 1. A batch held unsettled at the double, then every connection dropped under it.
    let faultsBefore = double.stats().faultsInjected;
    const connectionsBefore = double.stats().connectionsOpened;
    double.setFault({ kind: 'never-settle', hub: 'drops', times: 1 });
    injectMany(20);
    await waitFor(() => double.stats().faultsInjected > faultsBefore, 'a batch held in flight');
    expect(double.dropConnections()).toBeGreaterThan(0);
    await drained(fwd, child);

    // 2. The double drops the connection as a transfer arrives (twice in a row).
    faultsBefore = double.stats().faultsInjected;
    double.setFault({ kind: 'drop-connection', hub: 'drops', times: 2 });
    injectMany(20);
    await drained(fwd, child);
    expect(double.stats().faultsInjected - faultsBefore).toBe(2);

    // 3. Drops from outside while commits keep coming, one per committed document.
    for (let round = 0; round < 5; round++) {
      injectMany(5);
      await waitFor(
        () => committedIncarnation(fwd) >= sim.admin.document().DocumentIncarnation,
        'the commit of the new events',
      );
      double.dropConnections();
    }
    await drained(fwd, child);
    await stopGracefully(child);

    expect(double.stats().connectionsOpened - connectionsBefore).toBeGreaterThanOrEqual(4);
    const committed = readFileSinkRecords(fwd.file);
    expect(transitions(committed)).toEqual(injected.map((id) => `${id}:scheduled`).sort());
    const received = double.received('drops');
    const duplicates = expectAtLeastOnce(committed, received);
    await annotate(
      `drops: ${committed.length} records, ${received.length} received (${duplicates} duplicates), ` +
        `${double.stats().connectionsOpened - connectionsBefore} connections opened`,
    );
  });
});

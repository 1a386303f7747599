/**
 * The end-to-end fleet world of the fleet e2e tests:
 *
 * 20 simulated VMs (one simulator serving every identity) × scripted scenarios → 20 in-process Forwarder
 * instances (src/pipeline; 20 child processes would be too heavy on 2 cores) with the Event Hubs sink → the AMQP
 * double → fleet consumers as real `fleet run` child processes (Blob checkpoints in Azurite) → the fleet history:
 * a SQLite file (default) or a PostgreSQL database (`startFleetWorld({ database: 'postgres://…' })`).
 *
 * `startFleetWorld()` builds the components; the scenarios drive them:
 * - `runFleetScenario()`: consumer A runs alone, B joins (load balancing splits the partitions), A is SIGKILLed
 *   mid-stream and B takes over every partition, duplicates are injected by re-sending events, then B stops.
 * - `runSharedScenario()`: three consumers (one consumer group, each in its own working directory as on its own
 *   host) share the partitions; A is SIGKILLed mid-stream, B is stopped (SIGTERM) and started again; duplicates
 *   are re-sent; then the survivors stop.
 * They wait for each step (and fail naming the step that did not happen) but assert nothing: the callers
 * assert on the outcome and the history.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { EventHubProducerClient } from '@azure/event-hubs';
import { loadConfig } from '../../../src/config/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import {
  type FleetHistory,
  type IngestStats,
  isPostgresUrl,
  openHistory,
} from '../../../src/fleet/history/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { Forwarder } from '../../../src/pipeline/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../../support/fleet-config.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { type FleetChild, type RunningAzurite, spawnFleet, startAzurite } from './helpers.ts';

/** The Event Hub the forwarders send to and the consumers read. */
export const HUB = 'lifecycle';
/** The consumer group the fleet consumers share. */
export const GROUP = 'fleet';
/** How many simulated VMs (and forwarders) the world has. */
export const VM_COUNT = 20;
/** Partitions of the hub. */
export const PARTITIONS = 4;
/** The environment variable that holds a PostgreSQL URL for the consumers (a secret, never on a command line). */
export const DATABASE_ENV = 'SEF_FLEET_DB';

/** The scripted scenario of each VM and the transitions its timeline must show. */
export const VARIANTS = {
  'freeze-completed': ['scheduled', 'started', 'completed'],
  'reboot-canceled': ['scheduled', 'canceled'],
  'redeploy-rescheduled-completed': ['scheduled', 'updated', 'started', 'completed'],
  'hardware-failure': ['started', 'completed'],
  'preempt-vm-deleted': ['scheduled', 'started'],
  'terminate-pending': ['scheduled'],
} as const;
/** A scripted VM scenario (a key of VARIANTS). */
export type Variant = keyof typeof VARIANTS;
const NAMES = Object.keys(VARIANTS) as Variant[];

function variantOf(i: number): Variant {
  return i >= 18 ? 'terminate-pending' : NAMES[i % 5]!;
}

/** One simulated VM with its in-process forwarder and every record that forwarder committed. */
export interface FleetVm {
  name: string;
  variant: Variant;
  /** The simulator's event id, set by the scenario. */
  eventId: string;
  forwarder: Forwarder;
  controller: AbortController;
  running: Promise<unknown>;
  committed: LifecycleRecord[];
}

export interface FleetWorldOptions {
  /** A postgres:// URL of an empty database; default: a SQLite file in the world's temp directory. */
  database?: string;
}

/** The running components of the fleet world. Close it in afterAll. */
export interface FleetWorld {
  tmpDir: string;
  azurite: RunningAzurite;
  double: EventHubsDouble;
  sim: RunningSimulator;
  vms: FleetVm[];
  /** Fleet consumer child processes started by the scenarios (killed by close()). */
  children: FleetChild[];
  /** The consumers' history: a SQLite file path or a postgres:// URL. */
  database: string;
  kind: 'sqlite' | 'postgres';
  /** How many records the scripted scenarios produce in total. */
  expectedRecords(): number;
  /** Every record the forwarders committed (to Event Hubs), each once. */
  committedRecords(): LifecycleRecord[];
  /**
   * The consumers' history, opened read-only on first use (after a consumer created it) and closed by close();
   * rejects while it does not exist yet.
   */
  history(): Promise<FleetHistory>;
  /** Rows in the history's records table; 0 while the history does not exist yet. */
  recordCount(): Promise<number>;
  /** The history's ingest counters (all consumers, all partitions); zeros while it does not exist yet. */
  ingestStats(): Promise<IngestStats>;
  /** Stops forwarders, consumers, the double, the simulator and Azurite, and removes the temp directory. */
  close(): Promise<void>;
}

/**
 * Starts Azurite, the Event Hubs double, the simulator with VM_COUNT VMs and one running Forwarder per VM.
 * Sets process.env.SEF_FLEET_EH (the sink resolves its secret from the environment, as in production);
 * close() removes it.
 */
export async function startFleetWorld(options: FleetWorldOptions = {}): Promise<FleetWorld> {
  const tmp = makeTempDir('sef-fleet-');
  const database = options.database ?? join(tmp.dir, 'fleet.db');
  const vms: FleetVm[] = [];
  const children: FleetChild[] = [];
  let azurite: RunningAzurite | undefined;
  let double: EventHubsDouble | undefined;
  let sim: RunningSimulator | undefined;
  let reader: Promise<FleetHistory> | undefined;

  const history = (): Promise<FleetHistory> => {
    reader ??= openHistory({ database, readOnly: true, poolSize: 1 });
    const opening = reader;
    opening.catch(() => {
      if (reader === opening) reader = undefined; // not created yet: try again next time
    });
    return opening;
  };

  const close = async (): Promise<void> => {
    delete process.env.SEF_FLEET_EH;
    for (const vm of vms) vm.controller.abort();
    await Promise.allSettled(vms.map((vm) => vm.running));
    for (const c of children)
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await Promise.allSettled(children.map((c) => c.exited));
    if (reader) await (await reader.catch(() => undefined))?.close();
    await double?.close();
    await sim?.close();
    await azurite?.close();
    tmp.cleanup();
  };

  try {
    mkdirSync(join(tmp.dir, 'azurite'));
    azurite = await startAzurite(join(tmp.dir, 'azurite'));
    double = await startEventHubsDouble({ hubs: { [HUB]: PARTITIONS }, consumerGroups: ['$Default', GROUP] });
    sim = await startSimulator({ timeScale: 0 });
    process.env.SEF_FLEET_EH = double.connectionString(HUB);
    for (let i = 0; i < VM_COUNT; i++) {
      const name = i % 2 === 0 ? `web_${i}` : `api-${i}`;
      sim.admin.addVm(name, {
        availabilitySet: `set-${name}`, // each VM sees only its own events
        identity: { location: i < 10 ? 'westeurope' : 'norwayeast', zone: String(1 + (i % 3)) },
      });
      const config = loadConfig({
        overrides: {
          stateDir: join(tmp.dir, 'vms', name),
          imds: { endpoint: sim.vmUrl(name), pollIntervalMs: 200, firstRequestTimeoutMs: 5000 },
          log: { level: 'silent' },
          sinks: [
            {
              name: 'eventhubs',
              type: 'eventhubs',
              connectionString: { env: 'SEF_FLEET_EH' },
              retry: { maxRetries: 1, retryDelayMs: 50, maxRetryDelayMs: 200, timeoutMs: 3000 },
            },
          ],
        },
      });
      const committed: LifecycleRecord[] = [];
      const forwarder = new Forwarder({
        config,
        logger: silentLogger(),
        bootTimeMs: Date.now() - 3_600_000,
        observer: { committed: (info) => committed.push(...info.records) },
      });
      const controller = new AbortController();
      vms.push({
        name,
        variant: variantOf(i),
        eventId: '',
        forwarder,
        controller,
        running: forwarder.run(controller.signal),
        committed,
      });
    }
  } catch (error) {
    await close();
    throw error;
  }

  return {
    tmpDir: tmp.dir,
    azurite,
    double,
    sim,
    vms,
    children,
    database,
    kind: isPostgresUrl(database) ? 'postgres' : 'sqlite',
    expectedRecords: () => vms.reduce((n, vm) => n + VARIANTS[vm.variant].length, 0),
    committedRecords: () => vms.flatMap((vm) => vm.committed),
    history,
    recordCount: async () => {
      try {
        const [row] = await (await history()).db.all('SELECT count(*) AS n FROM records');
        return Number(row?.n ?? 0);
      } catch {
        return 0; // not created yet
      }
    },
    ingestStats: async () => {
      try {
        return await (await history()).stats();
      } catch {
        return { received: 0, accepted: 0, duplicates: 0, rejected: 0, heartbeats: 0 };
      }
    },
    close,
  };
}

/** The partitions a consumer process reports owning (its dashboard's /api/status). */
export async function partitionsOf(child: FleetChild): Promise<string[]> {
  const { dashboard } = await child.ready;
  const res = await fetch(`${dashboard}/api/status`);
  return ((await res.json()) as { partitions: string[] }).partitions;
}

/**
 * Starts `fleet run` as a consumer named `name`, in its own working directory (`hosts/<name>`, as on its own
 * host) with its config file there (`--config fleet.yaml`). SQLite: the config names the file; PostgreSQL: the
 * config says `database: { env: SEF_FLEET_DB }` and the URL is in the child's environment only.
 */
export function startConsumer(world: FleetWorld, name: string): FleetChild {
  const cwd = join(world.tmpDir, 'hosts', name);
  mkdirSync(cwd, { recursive: true });
  const postgres = world.kind === 'postgres';
  writeFleetConfig(join(cwd, 'fleet.yaml'), {
    group: GROUP,
    database: postgres ? { env: DATABASE_ENV } : world.database,
  });
  const env: Record<string, string> = {
    SEF_FLEET_EH: world.double.connectionString(HUB),
    SEF_FLEET_BLOB: world.azurite.connectionString,
    ...(postgres ? { [DATABASE_ENV]: world.database } : {}),
  };
  const child = spawnFleet(['--config', 'fleet.yaml'], env, { cwd });
  world.children.push(child);
  return child;
}

/** Waits until every listed VM's forwarder has committed `count(vm)` records. */
async function forwardersCommitted(
  list: FleetVm[],
  count: (vm: FleetVm) => number,
  what: string,
): Promise<void> {
  await waitFor(() => list.every((vm) => vm.committed.length >= count(vm)), what, { timeoutMs: 30_000 });
}

/** The simulator event each scripted scenario starts with. */
function firstEvent(vm: FleetVm) {
  const base = { resources: [vm.name] };
  switch (vm.variant) {
    case 'freeze-completed':
      return { ...base, type: 'Freeze', noticeSeconds: 900, durationInSeconds: 5 };
    case 'reboot-canceled':
      return { ...base, type: 'Reboot', noticeSeconds: 900 };
    case 'redeploy-rescheduled-completed':
      return { ...base, type: 'Redeploy', noticeSeconds: 600 };
    case 'hardware-failure':
      return { ...base, type: 'Reboot', status: 'Started' as const };
    case 'preempt-vm-deleted':
      return { ...base, type: 'Preempt', noticeSeconds: 30 };
    case 'terminate-pending':
      return { ...base, type: 'Terminate', noticeSeconds: 600 };
  }
}

/** Phase 1: every VM gets its maintenance event; waits until the history holds the first records. */
async function phase1(world: FleetWorld, what: string): Promise<void> {
  const { sim, vms } = world;
  for (const vm of vms) vm.eventId = sim.admin.injectEvent(firstEvent(vm)).id;
  await forwardersCommitted(vms, () => 1, 'every VM to commit its first record');
  await waitFor(async () => (await world.recordCount()) === VM_COUNT, what, { timeoutMs: 30_000 });
}

/** Phase 2 (starts, reschedules, cancellations): starts the changes; `whileFlowing` runs as they flow. */
async function phase2(world: FleetWorld, whileFlowing: () => Promise<void>): Promise<void> {
  const { sim, vms } = world;
  for (const vm of vms) {
    if (vm.variant === 'freeze-completed' || vm.variant === 'preempt-vm-deleted') {
      sim.admin.setStatus(vm.eventId, 'Started');
    } else if (vm.variant === 'reboot-canceled') sim.admin.removeEvent(vm.eventId);
    else if (vm.variant === 'redeploy-rescheduled-completed') {
      sim.admin.reschedule(vm.eventId, sim.admin.now() + 1_200_000);
    }
  }
  await whileFlowing();
  const committed = (vm: FleetVm) =>
    vm.variant === 'hardware-failure' || vm.variant === 'terminate-pending' ? 1 : 2;
  await forwardersCommitted(vms, committed, 'phase 2 records');
}

/** Phase 3: preempted VMs are deleted, redeploys start, the started maintenance completes. */
async function phase3(world: FleetWorld): Promise<void> {
  const { sim, vms } = world;
  // Preempted VMs are deleted: their forwarders stop, no terminal record ever comes.
  for (const vm of vms.filter((v) => v.variant === 'preempt-vm-deleted')) vm.controller.abort();
  for (const vm of vms.filter((v) => v.variant === 'redeploy-rescheduled-completed')) {
    sim.admin.setStatus(vm.eventId, 'Started');
  }
  await forwardersCommitted(
    vms.filter((v) => v.variant === 'redeploy-rescheduled-completed'),
    () => 3,
    'redeploys started',
  );
  for (const vm of vms) {
    if (['freeze-completed', 'redeploy-rescheduled-completed', 'hardware-failure'].includes(vm.variant)) {
      sim.admin.removeEvent(vm.eventId);
    }
  }
  await forwardersCommitted(vms, (vm) => VARIANTS[vm.variant].length, 'every scripted record');
}

/** Waits until the listed consumers together own every partition. */
async function ownEveryPartition(consumers: FleetChild[], what: string): Promise<void> {
  await waitFor(
    async () => {
      const owned = new Set((await Promise.all(consumers.map(partitionsOf))).flat());
      return owned.size === PARTITIONS;
    },
    what,
    { timeoutMs: 30_000 },
  );
}

/** Waits until the history holds every committed record. */
async function everyRecordStored(world: FleetWorld): Promise<void> {
  const total = world.expectedRecords();
  await waitFor(
    async () => (await world.recordCount()) === total,
    `every record in the ${world.kind} history`,
    {
      timeoutMs: 30_000,
    },
  );
}

/** Re-sends `count` already-delivered events (same CloudEvent ids) and waits until they are counted duplicates. */
async function resendDuplicates(world: FleetWorld, count: number): Promise<void> {
  const { double } = world;
  const duplicatesBefore = (await world.ingestStats()).duplicates;
  const resend = double.received(HUB).slice(0, count);
  const producer = new EventHubProducerClient(double.connectionString(HUB));
  try {
    for (const event of resend) {
      await producer.sendBatch(
        [{ body: event.body, contentType: event.contentType, messageId: event.messageId }],
        event.partitionKey === undefined ? {} : { partitionKey: event.partitionKey },
      );
    }
  } finally {
    await producer.close();
  }
  await waitFor(
    async () => (await world.ingestStats()).duplicates >= duplicatesBefore + count,
    'the re-sent duplicates to be seen and ignored',
    { timeoutMs: 30_000 },
  );
}

/** A consumer process's exit. */
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** How the two-consumer scenario ended for the consumer processes. */
export interface FleetScenarioOutcome {
  /** Consumer A's exit after it was killed mid-stream (expected: signal SIGKILL). */
  consumerAExit: Exit;
  /** Consumer B's exit after SIGTERM at the end (expected: code 0). */
  consumerBExit: Exit;
}

/**
 * Drives the scripted scenarios through two consumer processes (A killed mid-stream, B taking over), re-sends
 * 10 delivered events as duplicates and stops B. On return the history holds every committed record and the
 * duplicates have been counted; the forwarders keep running until world.close().
 */
export async function runFleetScenario(world: FleetWorld): Promise<FleetScenarioOutcome> {
  const a = startConsumer(world, 'a');
  await a.ready;
  await phase1(world, 'consumer A to ingest phase 1');

  // B joins: the SDK's load balancing hands it part of the partitions.
  const b = startConsumer(world, 'b');
  await b.ready;
  await waitFor(async () => (await partitionsOf(b)).length > 0, 'consumer B to claim partitions', {
    timeoutMs: 30_000,
  });

  // A dies without warning while the phase 2 records flow.
  let consumerAExit: Exit | undefined;
  await phase2(world, async () => {
    a.child.kill('SIGKILL');
    consumerAExit = await a.exited;
  });
  await phase3(world);
  await ownEveryPartition([b], 'consumer B to own every partition after A died');
  await everyRecordStored(world);
  await resendDuplicates(world, 10);
  b.child.kill('SIGTERM');
  const consumerBExit = await b.exited;
  return { consumerAExit: consumerAExit!, consumerBExit };
}

/** How the three-consumer scenario ended for the consumer processes. */
export interface SharedScenarioOutcome {
  /** A, SIGKILLed mid-stream (expected: signal SIGKILL). */
  killed: Exit;
  /** B's first run, stopped with SIGTERM mid-stream (expected: code 0). */
  restarted: Exit;
  /** B's second run and C, stopped with SIGTERM at the end (expected: code 0). */
  final: Exit[];
  /** Every consumer process's stderr and stdout ready line, by run ("a", "b", "b2", "c"). */
  logs: Record<string, string>;
  ready: Record<string, { dashboard: string | null; database: string; consumerGroup: string }>;
}

/**
 * Three consumers of one group on one history, each in its own working directory: they share the partitions;
 * A is SIGKILLed while phase 2 flows and B is stopped (SIGTERM) and started again at the same time; the
 * survivors (B's second run, C) take every partition over; 10 events are re-sent as duplicates; then B and C
 * stop. On return the history holds every committed record and the duplicates have been counted.
 */
export async function runSharedScenario(world: FleetWorld): Promise<SharedScenarioOutcome> {
  const a = startConsumer(world, 'a');
  const b = startConsumer(world, 'b');
  const c = startConsumer(world, 'c');
  const ready: SharedScenarioOutcome['ready'] = {};
  [ready.a, ready.b, ready.c] = await Promise.all([a.ready, b.ready, c.ready]);
  await waitFor(
    async () => (await Promise.all([a, b, c].map(partitionsOf))).every((p) => p.length > 0),
    'the three consumers to share the partitions',
    { timeoutMs: 30_000 },
  );
  await phase1(world, 'the consumers to ingest phase 1');

  let killed: Exit | undefined;
  let restarted: Exit | undefined;
  let b2: FleetChild | undefined;
  await phase2(world, async () => {
    a.child.kill('SIGKILL');
    b.child.kill('SIGTERM');
    [killed, restarted] = await Promise.all([a.exited, b.exited]);
    b2 = startConsumer(world, 'b');
    ready.b2 = await b2.ready;
  });
  await phase3(world);
  await ownEveryPartition([b2!, c], "B's second run and C to own every partition");
  await everyRecordStored(world);
  await resendDuplicates(world, 10);
  b2!.child.kill('SIGTERM');
  c.child.kill('SIGTERM');
  const final = await Promise.all([b2!.exited, c.exited]);
  return {
    killed: killed!,
    restarted: restarted!,
    final,
    logs: { a: a.stderr(), b: b.stderr(), b2: b2!.stderr(), c: c.stderr() },
    ready,
  };
}

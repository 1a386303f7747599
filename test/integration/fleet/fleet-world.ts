/**
 * The end-to-end fleet world shared by the fleet e2e test (`npm test`) and the dashboard browser test
 * (`npm run test:browser`), so both see the same data:
 *
 * 20 simulated VMs (one simulator serving every identity) × scripted scenarios → 20 in-process Forwarder
 * instances (src/pipeline; 20 child processes would be too heavy on 2 cores) with the Event Hubs sink → the AMQP
 * double → the fleet consumer as real child processes (Blob checkpoints in Azurite) → SQLite.
 *
 * `startFleetWorld()` builds the components; `runFleetScenario()` drives the scenario: consumer A runs alone,
 * B joins (load balancing splits the partitions), A is SIGKILLed mid-stream and B takes over every partition,
 * duplicates are injected by re-sending events, then B stops. It waits for each step (and fails naming the step
 * that did not happen) but asserts nothing: the callers assert on the outcome and the database.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { EventHubProducerClient } from '@azure/event-hubs';
import { loadConfig } from '../../../src/config/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
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
  /** The simulator's event id, set by runFleetScenario(). */
  eventId: string;
  forwarder: Forwarder;
  controller: AbortController;
  running: Promise<unknown>;
  committed: LifecycleRecord[];
}

/** The running components of the fleet world. Close it in afterAll. */
export interface FleetWorld {
  tmpDir: string;
  azurite: RunningAzurite;
  double: EventHubsDouble;
  sim: RunningSimulator;
  vms: FleetVm[];
  /** Fleet consumer child processes started by runFleetScenario() (killed by close()). */
  children: FleetChild[];
  /** The fleet consumers' SQLite database. */
  databasePath: string;
  /** How many records the scripted scenarios produce in total. */
  expectedRecords(): number;
  /** Runs a `SELECT … AS n` against the database (read-only); 0 while the database or schema does not exist. */
  dbCount(sql: string): number;
  /** Stops forwarders, consumers, the double, the simulator and Azurite, and removes the temp directory. */
  close(): Promise<void>;
}

/** How the scenario ended for the two consumer processes. */
export interface FleetScenarioOutcome {
  /** Consumer A's exit after it was killed mid-stream (expected: signal SIGKILL). */
  consumerAExit: { code: number | null; signal: NodeJS.Signals | null };
  /** Consumer B's exit after SIGTERM at the end (expected: code 0). */
  consumerBExit: { code: number | null; signal: NodeJS.Signals | null };
}

/**
 * Starts Azurite, the Event Hubs double, the simulator with VM_COUNT VMs and one running Forwarder per VM.
 * Sets process.env.SEF_FLEET_EH (the sink resolves its secret from the environment, as in production);
 * close() removes it.
 */
export async function startFleetWorld(): Promise<FleetWorld> {
  const tmp = makeTempDir('sef-fleet-');
  const databasePath = join(tmp.dir, 'fleet.db');
  const vms: FleetVm[] = [];
  const children: FleetChild[] = [];
  let azurite: RunningAzurite | undefined;
  let double: EventHubsDouble | undefined;
  let sim: RunningSimulator | undefined;

  const close = async (): Promise<void> => {
    delete process.env.SEF_FLEET_EH;
    for (const vm of vms) vm.controller.abort();
    await Promise.allSettled(vms.map((vm) => vm.running));
    for (const c of children)
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await Promise.allSettled(children.map((c) => c.exited));
    await double?.close();
    await sim?.close();
    await azurite?.close();
    tmp.cleanup();
  };

  try {
    mkdirSync(join(tmp.dir, 'azurite'));
    azurite = await startAzurite(join(tmp.dir, 'azurite'));
    double = await startEventHubsDouble({ hubs: { [HUB]: 4 }, consumerGroups: ['$Default', GROUP] });
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
    databasePath,
    expectedRecords: () => vms.reduce((n, vm) => n + VARIANTS[vm.variant].length, 0),
    dbCount: (sql) => {
      if (!existsSync(databasePath)) return 0;
      const db = new DatabaseSync(databasePath, { readOnly: true, timeout: 5000 });
      try {
        return Number((db.prepare(sql).get() as { n: number } | undefined)?.n ?? 0);
      } catch {
        return 0; // schema not created yet
      } finally {
        db.close();
      }
    },
    close,
  };
}

async function partitionsOf(child: FleetChild): Promise<string[]> {
  const { dashboard } = await child.ready;
  const res = await fetch(`${dashboard}/api/status`);
  return ((await res.json()) as { partitions: string[] }).partitions;
}

function fleetConfigFile(world: FleetWorld, name: string): string {
  return writeFleetConfig(join(world.tmpDir, `${name}.yaml`), { group: GROUP, database: world.databasePath });
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

/**
 * Drives the scripted scenarios through two consumer processes (A killed mid-stream, B taking over), re-sends
 * 10 delivered events as duplicates and stops B. On return the database holds every committed record and the
 * duplicates have been counted; the forwarders keep running until world.close().
 */
export async function runFleetScenario(world: FleetWorld): Promise<FleetScenarioOutcome> {
  const { sim, double, vms } = world;
  const childEnv = {
    SEF_FLEET_EH: double.connectionString(HUB),
    SEF_FLEET_BLOB: world.azurite.connectionString,
  };
  const a = spawnFleet(['--config', fleetConfigFile(world, 'a')], childEnv);
  world.children.push(a);
  await a.ready;

  // Phase 1: every VM gets its maintenance event.
  for (const vm of vms) vm.eventId = sim.admin.injectEvent(firstEvent(vm)).id;
  await forwardersCommitted(vms, () => 1, 'every VM to commit its first record');
  await waitFor(
    () => world.dbCount('SELECT count(*) AS n FROM records') === VM_COUNT,
    'consumer A to ingest phase 1',
    { timeoutMs: 30_000 },
  );

  // B joins: the SDK's load balancing hands it part of the partitions.
  const b = spawnFleet(['--config', fleetConfigFile(world, 'b')], childEnv);
  world.children.push(b);
  await b.ready;
  await waitFor(async () => (await partitionsOf(b)).length > 0, 'consumer B to claim partitions', {
    timeoutMs: 30_000,
  });

  // Phase 2: starts, reschedules, cancellations; A dies without warning while they flow.
  for (const vm of vms) {
    if (vm.variant === 'freeze-completed' || vm.variant === 'preempt-vm-deleted') {
      sim.admin.setStatus(vm.eventId, 'Started');
    } else if (vm.variant === 'reboot-canceled') sim.admin.removeEvent(vm.eventId);
    else if (vm.variant === 'redeploy-rescheduled-completed') {
      sim.admin.reschedule(vm.eventId, sim.admin.now() + 1_200_000);
    }
  }
  a.child.kill('SIGKILL');
  const consumerAExit = await a.exited;
  const phase2 = (vm: FleetVm) =>
    vm.variant === 'hardware-failure' || vm.variant === 'terminate-pending' ? 1 : 2;
  await forwardersCommitted(vms, phase2, 'phase 2 records');

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
  // Phase 3: the started maintenance completes.
  for (const vm of vms) {
    if (['freeze-completed', 'redeploy-rescheduled-completed', 'hardware-failure'].includes(vm.variant)) {
      sim.admin.removeEvent(vm.eventId);
    }
  }
  await forwardersCommitted(vms, (vm) => VARIANTS[vm.variant].length, 'every scripted record');

  const total = world.expectedRecords();
  await waitFor(
    async () => (await partitionsOf(b)).length === 4,
    'consumer B to own every partition after A died',
    { timeoutMs: 30_000 },
  );
  await waitFor(
    () => world.dbCount('SELECT count(*) AS n FROM records') === total,
    'every record in SQLite',
    {
      timeoutMs: 30_000,
    },
  );

  // Duplicates: re-send 10 already-delivered events (same CloudEvent ids).
  const duplicatesBefore = world.dbCount("SELECT value AS n FROM ingest_stats WHERE name = 'duplicates'");
  const resend = double.received(HUB).slice(0, 10);
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
    () =>
      world.dbCount("SELECT value AS n FROM ingest_stats WHERE name = 'duplicates'") >= duplicatesBefore + 10,
    'the re-sent duplicates to be seen and ignored',
    { timeoutMs: 30_000 },
  );
  b.child.kill('SIGTERM');
  const consumerBExit = await b.exited;
  return { consumerAExit, consumerBExit };
}

/**
 * `fleet` from the linux-x64 single executable, as released, with no Node.js on PATH: the executable's `run`
 * sends a VM's lifecycle records to the project's Event Hubs AMQP double, the executable's `fleet run` consumes
 * them (consumer group, Blob checkpoints and ownership in Azurite) into its SQLite history and serves the
 * dashboard (its page, script and stylesheet built into the executable), and the executable's `fleet report`
 * reads the maintenance history back. This proves the fleet's Azure Storage packages (optional peers of the npm package) are inside the executable. Then the executable's
 * `fleet migrate` copies that history into a real PostgreSQL server (test/support/postgres.ts) and its
 * `fleet report --database postgres://…` reads the same summary back: node-postgres (a chunk of the bundle,
 * scripts/package/bundle.ts) and the lazily imported PostgreSQL store work inside the executable.
 */
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContainerClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FleetHistory, openHistory } from '../../src/fleet/history/index.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type RunningAzurite, startAzurite } from '../integration/fleet/helpers.ts';
import { expectDashboardAssets } from '../support/dashboard-assets.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../support/fleet-config.ts';
import { createTestDatabase, type PostgresServer, startPostgresServer } from '../support/postgres.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { artifact, type Child, FILES, pathWithout, start, whichIn } from './release.ts';

const HUB = 'lifecycle';
const GROUP = 'fleet';

const tmp = makeTempDir('sef-pkg-fleet-');
let exe: string;
let env: Record<string, string>;
let azurite: RunningAzurite;
let double: EventHubsDouble;
let sim: RunningSimulator;
let postgres: PostgresServer;
const children: Child[] = [];

beforeAll(async () => {
  // A copy outside the repository, so nothing can be found in ./node_modules up the tree.
  exe = join(tmp.dir, 'scheduled-events-forwarder');
  copyFileSync(artifact(FILES.executable('linux-x64')), exe);
  chmodSync(exe, 0o755);
  env = { PATH: pathWithout(tmp.dir, []), HOME: tmp.dir, HTTP_PROXY: '', HTTPS_PROXY: '', NO_PROXY: '' };
  mkdirSync(join(tmp.dir, 'azurite'));
  [azurite, double, sim, postgres] = await Promise.all([
    startAzurite(join(tmp.dir, 'azurite')),
    startEventHubsDouble({ hubs: { [HUB]: 2 }, consumerGroups: ['$Default', GROUP] }),
    startSimulator({}),
    startPostgresServer(),
  ]);
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.allSettled(children.map((c) => c.exited));
  await Promise.allSettled([azurite?.close(), double?.close(), sim?.close(), postgres?.stop()]);
  tmp.cleanup();
});

/**
 * Reads the fleet history the executable writes (read-only, through the project's own FleetHistory); undefined
 * while the database or its schema does not exist yet.
 */
async function readHistory<T>(
  database: string,
  read: (history: FleetHistory) => Promise<T>,
): Promise<T | undefined> {
  let history: FleetHistory;
  try {
    history = await openHistory({ database, readOnly: true });
  } catch {
    return undefined;
  }
  try {
    return await read(history);
  } finally {
    await history.close();
  }
}

/** The transitions of one maintenance event in the history, in time order ([] until it is there). */
async function transitionsOf(database: string, eventId: string): Promise<string[]> {
  const entries = await readHistory(database, async (history) => {
    const detail = await history.event(eventId);
    if (detail === undefined) return [];
    const sources = detail.observations.map((o) => o.source);
    const timelines = await Promise.all(sources.map((source) => history.timeline(source)));
    return timelines.flat().filter((entry) => entry.eventId === eventId);
  });
  return (entries ?? []).map((entry) => entry.transition);
}

describe('fleet from the linux-x64 executable without Node.js', () => {
  it('turns the records of a forwarder into maintenance history, dashboard and report', async () => {
    expect(whichIn(env.PATH!, 'node')).toBe(false);
    const database = join(tmp.dir, 'fleet.db');
    const fleetConfig = writeFleetConfig(join(tmp.dir, 'fleet.yaml'), { group: GROUP, database });
    const fleet = start(
      exe,
      ['fleet', 'run', '--config', fleetConfig],
      { ...env, SEF_FLEET_EH: double.connectionString(HUB), SEF_FLEET_BLOB: azurite.connectionString },
      tmp.dir,
    );
    children.push(fleet);
    await waitFor(() => fleet.stdout().includes('\n'), 'fleet run to print its ready line', {
      timeoutMs: 60_000,
    });
    const ready = JSON.parse(fleet.stdout().split('\n')[0]!) as { dashboard: string; consumerGroup: string };
    expect(ready.consumerGroup).toBe(GROUP);
    // The dashboard's page, script and stylesheet are built into the executable.
    await expectDashboardAssets(ready.dashboard);
    await waitFor(
      async () => {
        const status = (await (await fetch(`${ready.dashboard}/api/status`)).json()) as {
          partitions: string[];
        };
        return status.partitions.length === 2;
      },
      'the fleet consumer to claim both partitions (ownership blobs in Azurite)',
      { timeoutMs: 60_000 },
    );

    // One VM's forwarder: the executable's `run` with the Event Hubs sink.
    const forwarderConfig = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      forwarderConfig,
      [
        `imds: { endpoint: "${sim.url}", pollIntervalMs: 200 }`,
        `stateDir: ${join(tmp.dir, 'vm-state')}`,
        'sinks:',
        '  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH } }',
        '',
      ].join('\n'),
    );
    const forwarder = start(
      exe,
      ['run', '--config', forwarderConfig],
      { ...env, SEF_TEST_EH: double.connectionString(HUB) },
      tmp.dir,
    );
    children.push(forwarder);

    const event = sim.admin.injectEvent({
      type: 'Freeze',
      noticeSeconds: 900,
      durationInSeconds: 5,
      resources: ['sim-vm-0'],
    });
    const transitions = () => transitionsOf(database, event.id);
    await waitFor(
      async () => (await transitions()).length === 1,
      'the scheduled record in the fleet history',
      {
        timeoutMs: 60_000,
      },
    );
    sim.admin.setStatus(event.id, 'Started');
    await waitFor(async () => (await transitions()).length === 2, 'the started record in the fleet history', {
      timeoutMs: 60_000,
    });
    sim.admin.removeEvent(event.id);
    await waitFor(
      async () => (await transitions()).length === 3,
      'the completed record in the fleet history',
      {
        timeoutMs: 60_000,
      },
    );
    expect(await transitions()).toEqual(['scheduled', 'started', 'completed']);

    forwarder.kill('SIGTERM');
    expect(await forwarder.exited).toBe(0);
    fleet.kill('SIGTERM');
    expect(await fleet.exited).toBe(0);
    expect(fleet.stderr()).not.toMatch(/AccountKey=|SharedAccessKey=/);

    // The history, read back by the executable's own report.
    const report = start(exe, ['fleet', 'report', '--database', database, '--json'], env, tmp.dir);
    expect(await report.exited).toBe(0);
    const summary = JSON.parse(report.stdout()) as {
      events: number;
      records: number;
      byStatus: Record<string, number>;
      byType: Record<string, number>;
      byTransition: Record<string, number>;
      ingest: { accepted: number; rejected: number };
    };
    expect(summary.events).toBe(1);
    expect(summary.records).toBe(3);
    expect(summary.byStatus).toEqual({ completed: 1 });
    expect(summary.byType).toEqual({ Freeze: 1 });
    expect(summary.byTransition).toEqual({ completed: 1, scheduled: 1, started: 1 });
    expect(summary.ingest.accepted).toBe(3);
    expect(summary.ingest.rejected).toBe(0);
    const events = await readHistory(database, async (history) => (await history.events()).items);
    expect(events?.map((e) => ({ id: e.eventId, status: e.status }))).toEqual([
      { id: event.id, status: 'completed' },
    ]);
    // Ownership and checkpoints went to Blob storage (Azurite) through the executable's Storage packages.
    const container = new ContainerClient(azurite.connectionString, 'fleet-checkpoints');
    const blobs: string[] = [];
    for await (const blob of container.listBlobsFlat()) blobs.push(blob.name);
    expect(blobs.some((name) => name.includes('/ownership/'))).toBe(true);
    expect(blobs.some((name) => name.includes('/checkpoint/'))).toBe(true);

    // The same history in PostgreSQL, through the executable's node-postgres: `fleet migrate` writes it,
    // `fleet report --database postgres://…` reads it back.
    const pgDatabase = await createTestDatabase(postgres.adminUrl);
    try {
      const password = new URL(pgDatabase.url).password;
      const migrate = start(
        exe,
        ['fleet', 'migrate', '--from', database, '--to', pgDatabase.url],
        env,
        tmp.dir,
      );
      expect(await migrate.exited, migrate.stderr()).toBe(0);
      const copied = JSON.parse(migrate.stdout()) as { to: string; accepted: number };
      expect(copied.accepted).toBe(3);
      expect(copied.to).toMatch(/^postgres(ql)?:\/\//);
      expect(migrate.stdout() + migrate.stderr()).not.toContain(password);

      const pgReport = start(exe, ['fleet', 'report', '--database', pgDatabase.url, '--json'], env, tmp.dir);
      expect(await pgReport.exited, pgReport.stderr()).toBe(0);
      const pgSummary = JSON.parse(pgReport.stdout()) as typeof summary;
      expect(pgSummary.events).toBe(1);
      expect(pgSummary.records).toBe(3);
      expect(pgSummary.byStatus).toEqual({ completed: 1 });
      expect(pgSummary.byType).toEqual({ Freeze: 1 });
      expect(pgSummary.byTransition).toEqual({ completed: 1, scheduled: 1, started: 1 });
      expect(pgReport.stderr()).not.toContain(password);
    } finally {
      await pgDatabase.drop();
    }
  });
});

/**
 * `fleet` from the linux-x64 single executable, as released, with no Node.js on PATH: the executable's `run`
 * sends a VM's lifecycle records to the project's Event Hubs AMQP double, the executable's `fleet run` consumes
 * them (consumer group, Blob checkpoints and ownership in Azurite) into its SQLite history and serves the
 * dashboard, and the executable's `fleet report` reads the maintenance history back. This proves the fleet's
 * Azure Storage packages (optional peers of the npm package) are inside the executable.
 */
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ContainerClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type RunningAzurite, startAzurite } from '../integration/fleet/helpers.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../support/fleet-config.ts';
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
const children: Child[] = [];

beforeAll(async () => {
  // A copy outside the repository, so nothing can be found in ./node_modules up the tree.
  exe = join(tmp.dir, 'scheduled-events-forwarder');
  copyFileSync(artifact(FILES.executable('linux-x64')), exe);
  chmodSync(exe, 0o755);
  env = { PATH: pathWithout(tmp.dir, []), HOME: tmp.dir, HTTP_PROXY: '', HTTPS_PROXY: '', NO_PROXY: '' };
  mkdirSync(join(tmp.dir, 'azurite'));
  [azurite, double, sim] = await Promise.all([
    startAzurite(join(tmp.dir, 'azurite')),
    startEventHubsDouble({ hubs: { [HUB]: 2 }, consumerGroups: ['$Default', GROUP] }),
    startSimulator({}),
  ]);
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.allSettled(children.map((c) => c.exited));
  await Promise.allSettled([azurite?.close(), double?.close(), sim?.close()]);
  tmp.cleanup();
});

/** Rows of a read-only query on the fleet database; [] while it or its schema does not exist yet. */
function query(database: string, sql: string, ...params: string[]): Array<Record<string, unknown>> {
  try {
    const db = new DatabaseSync(database, { readOnly: true, timeout: 5000 });
    try {
      return db.prepare(sql).all(...params) as Array<Record<string, unknown>>;
    } finally {
      db.close();
    }
  } catch {
    return [];
  }
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
    const transitions = () =>
      query(database, 'SELECT transition FROM records WHERE event_id = ? ORDER BY time', event.id).map(
        (r) => r.transition,
      );
    await waitFor(() => transitions().length === 1, 'the scheduled record in the fleet history', {
      timeoutMs: 60_000,
    });
    sim.admin.setStatus(event.id, 'Started');
    await waitFor(() => transitions().length === 2, 'the started record in the fleet history', {
      timeoutMs: 60_000,
    });
    sim.admin.removeEvent(event.id);
    await waitFor(() => transitions().length === 3, 'the completed record in the fleet history', {
      timeoutMs: 60_000,
    });
    expect(transitions()).toEqual(['scheduled', 'started', 'completed']);

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
    const rows = query(database, 'SELECT event_id AS id, status FROM events');
    expect(rows).toEqual([{ id: event.id, status: 'completed' }]);
    // Ownership and checkpoints went to Blob storage (Azurite) through the executable's Storage packages.
    const container = new ContainerClient(azurite.connectionString, 'fleet-checkpoints');
    const blobs: string[] = [];
    for await (const blob of container.listBlobsFlat()) blobs.push(blob.name);
    expect(blobs.some((name) => name.includes('/ownership/'))).toBe(true);
    expect(blobs.some((name) => name.includes('/checkpoint/'))).toBe(true);
  });
});

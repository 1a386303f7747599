/**
 * Hostile records through the hub, for both stores: good lifecycle records and a few hostile bodies (an object
 * where a string belongs, a NUL character, a 300 KB description, a wrong specversion) sent with the
 * EventHubProducerClient into one partition of the AMQP double, read by a real `fleet run` child process (Blob
 * checkpoints in Azurite) into a SQLite file or a PostgreSQL database (its URL through an env secret).
 *
 * The good records are stored, the hostile ones are in the `rejected` table with their reasons, the records
 * sent after them are ingested, the consumer never retried a commit, and the partition's checkpoint in Azurite
 * moves past them to the last event.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { EventHubProducerClient } from '@azure/event-hubs';
import { ContainerClient } from '@azure/storage-blob';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type FleetHistory, openHistory } from '../../../src/fleet/history/index.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../../support/fleet-config.ts';
import { freezeLifecycle } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { type FleetChild, spawnFleet, startAzurite } from './helpers.ts';

const HUB = 'lifecycle';
const GROUP = 'fleet';
const CONTAINER = 'fleet-checkpoints';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, 60_000);

/** The hostile bodies, each with what its rejection reason must say. */
function hostileBodies(base: LifecycleRecord): Array<{ body: unknown; reason: RegExp }> {
  return [
    {
      body: {
        ...base,
        id: 'hostile-object',
        data: { ...base.data, vm: { ...base.data.vm, name: { evil: true } } },
      },
      reason: /data\.vm\.name/,
    },
    { body: { ...base, id: 'hostile-nul\u0000x' }, reason: /NUL/ },
    {
      body: { ...base, id: 'hostile-large', data: { ...base.data, Description: 'x'.repeat(300 * 1024) } },
      reason: /Description: longer than|bytes of UTF-8, more than/,
    },
    { body: { ...base, id: 'hostile-specversion', specversion: '0.3' }, reason: /specversion/ },
  ];
}

async function send(double: EventHubsDouble, bodies: unknown[]): Promise<void> {
  const producer = new EventHubProducerClient(double.connectionString(HUB));
  try {
    for (const body of bodies) await producer.sendBatch([{ body }], { partitionId: '0' });
  } finally {
    await producer.close();
  }
}

/** The sequence number the consumer group's checkpoint of `partition` holds in Azurite, or undefined. */
async function checkpointOf(container: ContainerClient, partition: string): Promise<number | undefined> {
  for await (const blob of container.listBlobsFlat({ includeMetadata: true })) {
    if (blob.name.toLowerCase().endsWith(`/${GROUP}/checkpoint/${partition}`))
      return Number(blob.metadata?.sequencenumber);
  }
  return undefined;
}

describe.each(['sqlite', 'postgres'] as const)('hostile records through the hub (%s)', (kind) => {
  it('stores the good records, rejects the hostile ones with reasons and checkpoints past them', async () => {
    const tmp = makeTempDir('sef-fleet-hostile-');
    cleanups.push(() => tmp.cleanup());
    mkdirSync(join(tmp.dir, 'azurite'));
    const azurite = await startAzurite(join(tmp.dir, 'azurite'));
    cleanups.push(() => azurite.close());
    const double = await startEventHubsDouble({ hubs: { [HUB]: 2 }, consumerGroups: ['$Default', GROUP] });
    cleanups.push(() => double.close());
    let database = join(tmp.dir, 'fleet.db');
    if (kind === 'postgres') {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      cleanups.push(() => db.drop());
      database = db.url;
    }

    const config = writeFleetConfig(join(tmp.dir, 'fleet.yaml'), {
      group: GROUP,
      database: kind === 'postgres' ? { env: 'SEF_FLEET_DB' } : database,
    });
    const consumer: FleetChild = spawnFleet(['--config', config], {
      SEF_FLEET_EH: double.connectionString(HUB),
      SEF_FLEET_BLOB: azurite.connectionString,
      ...(kind === 'postgres' ? { SEF_FLEET_DB: database } : {}),
    });
    cleanups.push(async () => {
      if (consumer.child.exitCode === null && consumer.child.signalCode === null)
        consumer.child.kill('SIGKILL');
      await consumer.exited;
    });
    const { dashboard } = await consumer.ready;

    const before = freezeLifecycle('web_1', 'G1');
    const after = freezeLifecycle('web_2', 'G2');
    const hostile = hostileBodies(freezeLifecycle('web_3', 'H1')[0]!);
    await send(double, before);
    await send(
      double,
      hostile.map((h) => h.body),
    );
    await send(double, after);
    const events = double.received(HUB);
    expect(events.every((e) => e.partitionId === '0')).toBe(true);
    expect(events).toHaveLength(before.length + hostile.length + after.length);
    const lastSequence = events.at(-1)!.sequenceNumber;

    const history: FleetHistory = await openHistory({ database, readOnly: true, poolSize: 1 });
    cleanups.push(() => history.close());
    await waitFor(async () => {
      const s = await history.stats();
      return s.accepted === 6 && s.rejected === 4;
    }, 'the good records stored and the hostile ones rejected');

    // The good ones, before and after the hostile ones, are stored; nothing of the hostile ones is.
    const stored = (await history.db.all('SELECT id FROM records ORDER BY sequence_number')).map((r) =>
      String(r.id),
    );
    expect(stored).toEqual([...before, ...after].map((r) => r.id));
    expect((await history.events()).items.map((e) => e.eventId).sort()).toEqual(['G1', 'G2']);
    expect((await history.timeline(after[0]!.source)).map((t) => t.transition)).toEqual([
      'scheduled',
      'started',
      'completed',
    ]);

    // The hostile ones are in `rejected`, with their reasons, in the order they were sent.
    const rejected = await history.db.all(
      'SELECT partition_id, sequence_number, reason, body FROM rejected ORDER BY sequence_number',
    );
    expect(rejected).toHaveLength(hostile.length);
    rejected.forEach((row, i) => {
      expect({ partition: String(row.partition_id), reason: String(row.reason) }).toEqual({
        partition: '0',
        reason: expect.stringMatching(hostile[i]!.reason),
      });
      expect(String(row.body)).not.toContain('\u0000');
    });
    expect(rejected.map((r) => Number(r.sequence_number))).toEqual(
      events.slice(before.length, before.length + hostile.length).map((e) => e.sequenceNumber),
    );

    // The partition's checkpoint moved past them, to the last event; no commit was ever retried.
    const container = new ContainerClient(azurite.connectionString, CONTAINER);
    await waitFor(
      async () => (await checkpointOf(container, '0')) === lastSequence,
      "partition 0's checkpoint to reach the last event",
    );
    const status = (await (await fetch(`${dashboard}/api/status`)).json()) as {
      commitRetries: number;
      rejected: number;
      accepted: number;
    };
    expect(status).toMatchObject({ commitRetries: 0, rejected: 4, accepted: 6 });
    expect(consumer.stderr()).not.toContain('cannot commit the batch');
    expect(consumer.stderr()).toContain('records that failed validation were kept in the rejected table');

    consumer.child.kill('SIGTERM');
    expect((await consumer.exited).code).toBe(0);
  });
});

/**
 * What a batch writes into the SQLite fleet history's WAL, page by page (docs/fleet.md, Sizing): SQLite rewrites
 * an index's entry whenever an update sets one of its columns, even to the value it holds, so ingest leaves a VM's
 * name out of its vms update, and a latest heartbeat's VM name and counted state out of its update, when they stay.
 * Seen from the WAL: a batch that approves scheduled events and brings each VM's next heartbeat writes the rows
 * and the indexes whose values move (the heartbeats' enqueue time), and no page of vms_by_name or
 * latest_heartbeats_by_state_name. Schema step 14 dropped the two indexes no query reads; the timeline by VM name
 * still answers without them.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import type { ForwarderEvent } from '../../../src/domain/index.ts';
import { openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { heartbeatOf, iso, record } from '../../support/fleet-records.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-fleet-index-writes-');
afterAll(() => tmp.cleanup());

const VMS = Array.from({ length: 40 }, (_, i) => `web_${i}`);
let sequence = 0;
const raw = (body: ForwarderEvent, at: number): RawFleetEvent => ({
  body,
  partitionId: '0',
  sequenceNumber: sequence++,
  enqueuedAt: new Date(iso(at)),
});

/** Frames per b-tree (table or index name) in the WAL of `path`, from its frame headers and dbstat. */
function walFramesByTree(path: string): Map<string, number> {
  const wal = `${path}-wal`;
  const size = statSync(wal).size;
  const fd = openSync(wal, 'r');
  const pages: number[] = [];
  try {
    const header = Buffer.alloc(32);
    readSync(fd, header, 0, 32, 0);
    const pageSize = header.readUInt32BE(8);
    const frame = Buffer.alloc(24);
    for (let at = 32; at + 24 + pageSize <= size; at += 24 + pageSize) {
      readSync(fd, frame, 0, 24, at);
      pages.push(frame.readUInt32BE(0));
    }
  } finally {
    closeSync(fd);
  }
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const tree = new Map<number, string>();
    for (const row of db.prepare('SELECT name, pageno FROM dbstat').all())
      tree.set(Number(row.pageno), String(row.name));
    const frames = new Map<string, number>();
    for (const page of pages) {
      const name = tree.get(page) ?? '(free)';
      frames.set(name, (frames.get(name) ?? 0) + 1);
    }
    return frames;
  } finally {
    db.close();
  }
}

/**
 * Copies the WAL into the file and empties it, then holds a read snapshot of that state (returned: end it after
 * reading the WAL), so that no checkpoint (the history's checkpointer thread, or the writer's own) lets the writer
 * start the WAL over before the test has read it.
 */
async function emptiedWal(path: string): Promise<() => void> {
  const db = new DatabaseSync(path, { timeout: 5000 });
  try {
    await waitFor(() => {
      const [result] = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').all();
      return result?.busy === 0 && result.log === 0;
    }, 'an empty WAL');
  } finally {
    db.close();
  }
  const snapshot = new DatabaseSync(path, { readOnly: true });
  snapshot.exec('BEGIN');
  snapshot.prepare('SELECT count(*) FROM maintenance').get();
  return () => {
    snapshot.exec('COMMIT');
    snapshot.close();
  };
}

describe('the SQLite fleet history, page by page', () => {
  it('leaves the indexes of values that stay out of a batch that changes only others', async () => {
    const path = join(tmp.dir, 'history.db');
    const now = { at: 2000 };
    const history = await openHistory({ database: path, now: () => new Date(iso(now.at)) });
    try {
      // Each VM: a Freeze scheduled at 10 s (its own event, zone and scale set) and a heartbeat at 20 s.
      const fields = (vm: string, i: number) => ({
        vm,
        eventId: `E-${vm}`,
        zone: String((i % 3) + 1),
        scaleSet: `ss-${i % 4}`,
      });
      await history.ingest(
        VMS.flatMap((vm, i) => [
          raw(record('scheduled', { ...fields(vm, i), at: 10 }), 10),
          raw(heartbeatOf({ vm, at: 20, zone: fields(vm, i).zone, scaleSet: fields(vm, i).scaleSet }), 20),
        ]),
      );
      const endSnapshot = await emptiedWal(path);
      // Then each VM approves its event (it stays scheduled, pending, due at 900 s) and sends its next heartbeat.
      now.at = 3700;
      const approved = (vm: string, i: number) =>
        record('approved', {
          ...fields(vm, i),
          at: 60,
          extra: {
            approval: {
              approvedAt: iso(60),
              rule: 'approve-freeze',
              leader: true,
              posted: true,
              dryRun: false,
              hooks: [],
            },
          },
        });
      const result = await history.ingest(
        VMS.flatMap((vm, i) => [
          raw(approved(vm, i), 60),
          raw(
            heartbeatOf({
              vm,
              at: 3620,
              sequence: 3,
              zone: fields(vm, i).zone,
              scaleSet: fields(vm, i).scaleSet,
            }),
            3620,
          ),
        ]),
      );
      expect(result).toMatchObject({ accepted: VMS.length, heartbeats: VMS.length, rejected: 0 });
      const frames = walFramesByTree(path);
      endSnapshot();
      // What changed was written: the rows, and the indexes whose values moved.
      for (const tree of ['maintenance', 'vms', 'latest_heartbeats', 'latest_heartbeats_by_enqueued'])
        expect(frames.get(tree) ?? 0, tree).toBeGreaterThan(0);
      // What stayed was not.
      for (const tree of ['vms_by_name', 'latest_heartbeats_by_state_name'])
        expect(frames.get(tree) ?? 0, tree).toBe(0);
      // And the history says what happened.
      const { items } = await history.events({}, { limit: 100 });
      expect(items).toHaveLength(VMS.length);
      for (const event of items)
        expect(event).toMatchObject({ status: 'scheduled', approval: 'us', records: 2 });
      const coverage = await history.coverage();
      expect(coverage.byState.reporting).toBe(VMS.length);
      // Schema step 14: neither index is there, and a VM's timeline by name finds its records.
      const indexes = (await history.db.all("SELECT name FROM sqlite_schema WHERE type = 'index'")).map((r) =>
        String(r.name),
      );
      expect(indexes).toContain('vms_by_name');
      expect(indexes).not.toContain('records_by_vm_name');
      expect(indexes).not.toContain('observations_by_source');
      expect((await history.timeline('web_7')).map((t) => t.transition)).toEqual(['scheduled', 'approved']);
    } finally {
      await history.close();
    }
  });

  it('drops the two indexes from a history of schema step 13 (which has them), and finds a VM by name after', async () => {
    const path = join(tmp.dir, 'step13.db');
    const now = () => new Date(iso(2000));
    const first = await openHistory({ database: path, now });
    await first.ingest([raw(record('scheduled', { vm: 'db_3', eventId: 'E9', at: 10 }), 10)]);
    // What step 13 left: both indexes, and no step 14.
    await first.db.transaction(async (tx) => {
      await tx.run('CREATE INDEX records_by_vm_name ON records (vm_name)');
      await tx.run('CREATE INDEX observations_by_source ON observations (source, first_seen_at)');
      await tx.run('DELETE FROM schema_migrations WHERE version > 13');
    });
    await first.close();
    const history = await openHistory({ database: path, now });
    try {
      const indexes = (await history.db.all("SELECT name FROM sqlite_schema WHERE type = 'index'")).map((r) =>
        String(r.name),
      );
      expect(indexes).not.toContain('records_by_vm_name');
      expect(indexes).not.toContain('observations_by_source');
      const [step] = await history.db.all('SELECT max(version) AS v FROM schema_migrations');
      expect(Number(step?.v)).toBe(14);
      expect((await history.timeline('db_3')).map((t) => [t.eventId, t.transition])).toEqual([
        ['E9', 'scheduled'],
      ]);
      expect(await history.timeline('db_4')).toEqual([]);
    } finally {
      await history.close();
    }
  });
});

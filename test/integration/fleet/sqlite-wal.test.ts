/**
 * The SQLite fleet history's WAL. The writer checkpoints every 10,000 pages (about 40 MB), not at SQLite's default
 * 1,000 (4 MB): a page changed by many ingest batches is then copied into the file once per checkpoint rather than
 * once every few batches. Beside it a thread of its own copies committed pages into the file while commits arrive
 * (a PASSIVE checkpoint on its own connection), so that ingest's commits do not wait for those copies. Seen from
 * the file system: without that thread 8 MB committed in 16 transactions all stay in the WAL; with it they reach
 * the database file while the writer goes on, the WAL still starts over (it stays under 10,000 pages however much
 * is committed), and closing leaves every row in the file and no WAL behind.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../../src/fleet/history/sqlite-database.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-fleet-wal-');
afterAll(() => tmp.cleanup());

const HALF_MB = new Uint8Array(512 * 1024).fill(7);
const MB = 1024 * 1024;

describe('the SQLite fleet history WAL', () => {
  it('runs to 10,000 pages before the writer checkpoints it', async () => {
    const path = join(tmp.dir, 'writer-only.db');
    const db = openSqliteDatabase({ path, backgroundCheckpoints: false });
    try {
      await db.run('CREATE TABLE filler (body BLOB NOT NULL)');
      for (let i = 0; i < 16; i++) await db.run('INSERT INTO filler (body) VALUES (?)', [HALF_MB]);
      const walBytes = statSync(`${path}-wal`).size;
      // 8 MB of blobs plus their pages' headers: all of it still in the WAL, none yet in the file.
      expect(walBytes).toBeGreaterThan(8 * MB);
      expect(walBytes).toBeLessThan(10_000 * 4096);
      expect(statSync(path).size).toBeLessThan(MB);
    } finally {
      await db.close();
    }
  });

  it('has committed pages copied into the file by a thread of its own, and the WAL start over', async () => {
    const path = join(tmp.dir, 'background.db');
    const db = openSqliteDatabase({ path });
    try {
      await db.run('CREATE TABLE filler (body BLOB NOT NULL)');
      for (let i = 0; i < 16; i++) await db.run('INSERT INTO filler (body) VALUES (?)', [HALF_MB]);
      // Far below the writer's 10,000 pages: only the checkpointer thread copies them into the file.
      await waitFor(() => statSync(path).size > 8 * MB, 'the 8 MB committed in the database file');
      // 50 MB more: the WAL starts over again and again instead of growing with what is committed.
      for (let i = 0; i < 100; i++) await db.run('INSERT INTO filler (body) VALUES (?)', [HALF_MB]);
      expect(statSync(`${path}-wal`).size).toBeLessThan(10_000 * 4096 + 2 * MB);
    } finally {
      await db.close();
    }
    // The checkpointer closes before the writer, so the writer's close copies what is left and removes the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false);
    const check = new DatabaseSync(path, { readOnly: true });
    try {
      expect(check.prepare('SELECT count(*) AS n, sum(length(body)) AS bytes FROM filler').get()).toEqual({
        n: 116,
        bytes: 116 * HALF_MB.length,
      });
    } finally {
      check.close();
    }
  });
});

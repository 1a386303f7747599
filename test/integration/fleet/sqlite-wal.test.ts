/**
 * The SQLite fleet history checkpoints its WAL every 10,000 pages (about 40 MB), not at SQLite's default 1,000
 * (4 MB): a page changed by many ingest batches is then copied into the file once per checkpoint rather than
 * once every few batches. Seen from the file system: 8 MB committed in 16 transactions all stay in the WAL,
 * where the default would have copied them into the file and restarted the WAL at about 4 MB.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase } from '../../../src/fleet/history/sqlite-database.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-wal-');
afterAll(() => tmp.cleanup());

describe('the SQLite fleet history WAL', () => {
  it('runs to 10,000 pages before a commit checkpoints it', async () => {
    const path = join(tmp.dir, 'history.db');
    const db = openSqliteDatabase({ path });
    try {
      await db.run('CREATE TABLE filler (body BLOB NOT NULL)');
      const half = new Uint8Array(512 * 1024).fill(7);
      for (let i = 0; i < 16; i++) await db.run('INSERT INTO filler (body) VALUES (?)', [half]);
      const walBytes = statSync(`${path}-wal`).size;
      // 8 MB of blobs plus their pages' headers: all of it still in the WAL.
      expect(walBytes).toBeGreaterThan(8 * 1024 * 1024);
      expect(walBytes).toBeLessThan(10_000 * 4096);
    } finally {
      await db.close();
    }
  });
});

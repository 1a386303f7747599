/**
 * A SQLite fleet history shared by two processes on one host (`fleet run` and `fleet import` on one file): a
 * write that meets the other process's write lock waits on a timer, not in SQLite's synchronous busy wait, so
 * the waiting process keeps answering /healthz and the dashboard meanwhile; it writes once the lock is free and
 * gives up after 5 s with SQLite's own "database is locked", as before.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startDashboard } from '../../../src/fleet/dashboard/server.ts';
import { openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { openSqliteDatabase } from '../../../src/fleet/history/sqlite-database.ts';
import { silentLogger } from '../../../src/log.ts';
import { FakeClock, settle } from '../../support/fake-clock.ts';
import { freezeLifecycle } from '../../support/fleet-records.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-lock-');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

/** A promise with its state readable at any moment. */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => undefined);
  return { promise: watched, settled: () => settled };
}

/** Another process holding the file's write lock (test/support/sqlite-lock-holder.ts) until release(). */
async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [join(import.meta.dirname, '..', '..', 'support', 'sqlite-lock-holder.ts'), file],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await Promise.race([lines.next(), exited.then(([code]) => ({ value: `exited ${code}` }))]);
  expect(first.value).toBe('locked');
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    child.stdin!.end('release\n');
    await exited;
  };
  cleanups.push(release);
  return { release };
}

let seq = 0;
const raw = (body: unknown): RawFleetEvent => ({
  body,
  partitionId: '0',
  sequenceNumber: seq++,
  enqueuedAt: new Date(0),
});

describe('SQLite fleet history: another process holds the write lock', () => {
  it('the waiting process answers /healthz and the dashboard meanwhile, then writes when the lock is free', async () => {
    const database = join(tmp.dir, 'shared', 'fleet.db');
    const history = await openHistory({ database });
    cleanups.push(() => history.close());
    const dashboard = await startDashboard({ history, logger: silentLogger() });
    cleanups.push(() => dashboard.close());

    const holder = await holdWriteLock(database);
    const write = tracked(history.ingest(freezeLifecycle('web_1', 'E1').map(raw)));
    // Both answer while the write waits for the lock the other process holds (with SQLite's synchronous busy
    // wait, neither request could be served before the write had failed).
    const health = await fetch(new URL('/healthz', dashboard.url));
    expect(health.status).toBe(200);
    const summary = (await (await fetch(new URL('/api/summary', dashboard.url))).json()) as {
      records: number;
    };
    expect(summary.records).toBe(0);
    expect(write.settled()).toBe(false);

    await holder.release();
    expect(await write.promise).toMatchObject({ accepted: 3, rejected: 0 });
    const after = (await (await fetch(new URL('/api/summary', dashboard.url))).json()) as { records: number };
    expect(after.records).toBe(3);
  });
});

describe('SQLite write-lock wait (fake clock)', () => {
  /** A history database on a fake clock, and a second connection to the same file (SQLite locks it alike). */
  function shared(name: string) {
    const path = join(tmp.dir, name, 'fleet.db');
    const clock = new FakeClock();
    const db = openSqliteDatabase({ path, clock });
    cleanups.push(() => db.close());
    const other = new DatabaseSync(path, { timeout: 0 });
    cleanups.push(() => {
      if (other.isTransaction) other.exec('ROLLBACK');
      other.close();
    });
    return { db, clock, other };
  }

  it('retries on a timer while the lock is held and writes as soon as it is free', async () => {
    const { db, clock, other } = shared('retry');
    await db.run('CREATE TABLE t (v INTEGER)');
    other.exec('BEGIN IMMEDIATE');
    const write = tracked(db.run('INSERT INTO t VALUES (1)'));
    await clock.advance(4_000);
    expect(write.settled()).toBe(false);
    expect(clock.pendingTimers).toBe(1); // the next attempt
    other.exec('COMMIT');
    await clock.advance(50);
    expect(await write.promise).toEqual({ changes: 1 });
    await settle();
    expect(clock.pendingTimers).toBe(0);
  });

  it('gives up after 5 s with SQLite\'s "database is locked", and the next write goes through', async () => {
    const { db, clock, other } = shared('deadline');
    await db.run('CREATE TABLE t (v INTEGER)');
    other.exec('BEGIN IMMEDIATE');
    const write = tracked(db.run('INSERT INTO t VALUES (1)'));
    await clock.advance(4_990);
    expect(write.settled()).toBe(false);
    await clock.advance(10);
    await expect(write.promise).rejects.toMatchObject({ errcode: 5, message: 'database is locked' });
    other.exec('ROLLBACK');
    expect(await db.run('INSERT INTO t VALUES (2)')).toEqual({ changes: 1 });
  });
});

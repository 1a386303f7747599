import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import {
  DATABASE_FILE,
  openStore,
  openStoreForInspection,
  RESERVE_FILE,
  SCHEMA_VERSION,
  type Store,
  StoreOpenError,
  StoreWriteError,
} from '../../../src/store/index.ts';
import { captureLogger, makeRecord } from '../../support/delivery.ts';
import { setPageLimit } from '../../support/store.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

let tmp: { dir: string; cleanup: () => void };
const open: Store[] = [];
function openAt(dir = tmp.dir, extra: Partial<Parameters<typeof openStore>[0]> = {}): Store {
  const store = openStore({ stateDir: dir, logger: silentLogger(), ...extra });
  open.push(store);
  return store;
}

beforeEach(() => {
  tmp = makeTempDir('sef-store-');
});
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  tmp.cleanup();
});

describe('opening', () => {
  it('creates a WAL database with FULL sync, the current schema, private permissions and a reserve file', () => {
    const dir = join(tmp.dir, 'state');
    const store = openAt(dir);
    const raw = new DatabaseSync(join(dir, DATABASE_FILE), { readOnly: true });
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(raw.prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION });
    raw.close();
    expect(store.integrityCheck()).toBe('ok');
    if (process.platform !== 'win32') {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(join(dir, DATABASE_FILE)).mode & 0o777).toBe(0o600);
    }
    expect(statSync(join(dir, RESERVE_FILE)).size).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(store.loadState()).toBeUndefined();
  });

  it('refuses a directory on the Azure temporary disk (Linux and Windows rules) unless allowed', () => {
    expect(() =>
      openStore({ stateDir: '/mnt/resource/sef', logger: silentLogger(), platform: 'linux' }),
    ).toThrow(/refusing state directory .*temporary disk/);
    expect(() => openStore({ stateDir: 'D:\\sef', logger: silentLogger(), platform: 'win32' })).toThrow(
      StoreOpenError,
    );
    expect(existsSync('/mnt/resource/sef')).toBe(false);
  });

  it('refuses a database written by a newer schema version without touching it', () => {
    openAt().close();
    open.pop();
    const raw = new DatabaseSync(join(tmp.dir, DATABASE_FILE));
    raw.exec(`PRAGMA user_version=${SCHEMA_VERSION + 5}`);
    raw.close();
    expect(() => openAt()).toThrow(/schema version \d+, newer than this forwarder supports/);
    expect(readdirSync(tmp.dir).filter((f) => f.includes('corrupt'))).toEqual([]);
  });

  it('migrates from an empty (version 0) database file', () => {
    new DatabaseSync(join(tmp.dir, DATABASE_FILE)).close();
    const store = openAt();
    store.commit({ v: 1 }, []);
    expect(store.loadState()).toEqual({ v: 1 });
  });
});

describe('corruption', () => {
  it('quarantines a garbage file, keeps it, starts fresh and logs loudly', () => {
    const garbage = Buffer.from('this is not a sqlite database at all '.repeat(200));
    writeFileSync(join(tmp.dir, DATABASE_FILE), garbage);
    const { logger, lines } = captureLogger();
    const store = openAt(tmp.dir, { logger });
    expect(store.integrityCheck()).toBe('ok');
    store.commit({ fresh: true }, [{ record: makeRecord(1), sinks: ['a'] }]);
    expect(store.pending('a', 10)).toHaveLength(1);
    const kept = readdirSync(tmp.dir).filter((f) => f.startsWith(`${DATABASE_FILE}.corrupt-`));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(tmp.dir, kept[0] as string))).toEqual(garbage);
    const loud = lines().find((l) => String(l.msg).includes('STATE DATABASE IS CORRUPT'));
    expect(loud?.level).toBe(50);
    expect(JSON.parse(store.getMeta('store.lastQuarantine') ?? '{}').file).toContain('.corrupt-');
  });

  it('quarantines a truncated database', () => {
    const store = openAt();
    for (let i = 0; i < 50; i++) store.commit({ i }, [{ record: makeRecord(i), sinks: ['a', 'b'] }]);
    store.close();
    open.pop();
    const path = join(tmp.dir, DATABASE_FILE);
    truncateSync(path, Math.floor(statSync(path).size / 2));
    const { logger, lines } = captureLogger();
    const reopened = openAt(tmp.dir, { logger });
    expect(reopened.integrityCheck()).toBe('ok');
    expect(readdirSync(tmp.dir).some((f) => f.startsWith(`${DATABASE_FILE}.corrupt-`))).toBe(true);
    expect(lines().some((l) => String(l.msg).includes('STATE DATABASE IS CORRUPT'))).toBe(true);
  });
});

describe('state-directory lock', () => {
  it('refuses a second store on the same directory until the first closes', () => {
    const first = openAt();
    expect(() => openAt()).toThrow(
      /another forwarder process \(pid \d+\) is already using the state directory/,
    );
    first.close();
    open.splice(open.indexOf(first), 1);
    expect(openAt().integrityCheck()).toBe('ok');
  });

  it('takes over the lock of a SIGKILLed process', async () => {
    const storeModule = join(import.meta.dirname, '../../../src/store/index.ts');
    const logModule = join(import.meta.dirname, '../../../src/log.ts');
    const script =
      `const { openStore } = await import(${JSON.stringify(storeModule)});` +
      `const { silentLogger } = await import(${JSON.stringify(logModule)});` +
      // Held in a global: an unreachable store (and its lock connection) may be garbage-collected and closed.
      `globalThis.store = openStore({ stateDir: ${JSON.stringify(tmp.dir)}, logger: silentLogger() });` +
      `process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += String(c);
    });
    const exited = new Promise((r) => child.on('exit', r));
    await waitFor(() => out.includes('ready'), 'child store to open');
    expect(() => openAt()).toThrow(new RegExp(`pid ${child.pid}`));
    child.kill('SIGKILL');
    await exited;
    expect(openAt().integrityCheck()).toBe('ok');
  });
});

describe('outbox', () => {
  it('commits state and one row per record per sink in one transaction, in commit order', () => {
    const store = openAt();
    store.commit({ step: 1 }, [
      { record: makeRecord(1), sinks: ['a', 'b'] },
      { record: makeRecord(2), sinks: ['a'] },
    ]);
    store.commit({ step: 2 }, [{ record: makeRecord(3), sinks: ['a', 'b'] }]);
    expect(store.loadState()).toEqual({ step: 2 });
    const a = store.pending('a', 10);
    expect(a.map((r) => r.recordId)).toEqual(['rec-1', 'rec-2', 'rec-3']);
    expect(a[0]?.record).toEqual(makeRecord(1));
    expect(a[0]?.bytes).toBe(Buffer.byteLength(JSON.stringify(makeRecord(1))));
    expect(store.pending('b', 10).map((r) => r.recordId)).toEqual(['rec-1', 'rec-3']);
    expect(store.pending('a', 2)).toHaveLength(2);
    store.ack('a', [a[0]?.seq as number]);
    expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(['rec-2', 'rec-3']);
  });

  it('persists failed attempts across reopen', () => {
    let store = openAt();
    store.commit({}, [{ record: makeRecord(1), sinks: ['a'] }]);
    const [row] = store.pending('a', 1);
    store.recordFailure('a', [row?.seq as number], {
      attempts: 3,
      nextAttemptAt: 123456,
      error: 'http-503: down',
    });
    store.close();
    open.pop();
    store = openAt();
    expect(store.pending('a', 1)[0]).toMatchObject({
      attempts: 3,
      nextAttemptAt: 123456,
      lastError: 'http-503: down',
    });
    expect(store.stats()).toEqual([
      expect.objectContaining({
        sink: 'a',
        pending: 1,
        nextAttemptAt: 123456,
        headAttempts: 3,
        deadLetters: 0,
      }),
    ]);
  });

  it('dead letters and replays to the end of the queue with attempts reset', () => {
    let now = 1000;
    const store = openAt(tmp.dir, { now: () => now });
    store.commit(
      {},
      [1, 2, 3].map((n) => ({ record: makeRecord(n), sinks: ['a'] })),
    );
    const rows = store.pending('a', 10);
    store.recordFailure('a', [rows[0]?.seq as number], { attempts: 7, nextAttemptAt: 5000, error: 'x' });
    store.deadLetter('a', [rows[0]?.seq as number], { reason: 'permanent', error: 'http-400: bad payload' });
    expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(['rec-2', 'rec-3']);
    const dl = store.listDeadLetters({ sink: 'a' });
    expect(dl).toEqual([
      expect.objectContaining({
        recordId: 'rec-1',
        reason: 'permanent',
        error: 'http-400: bad payload',
        attempts: 7,
      }),
    ]);
    expect(dl[0]?.record).toEqual(makeRecord(1));
    now = 2000;
    expect(store.replayDeadLetters({ id: dl[0]?.id as number })).toBe(1);
    const after = store.pending('a', 10);
    expect(after.map((r) => r.recordId)).toEqual(['rec-2', 'rec-3', 'rec-1']);
    expect(after[2]).toMatchObject({ attempts: 0, nextAttemptAt: 0, createdAt: 2000 });
    expect(store.listDeadLetters()).toEqual([]);
    expect(store.replayDeadLetters({ sink: 'nope' })).toBe(0);
  });

  it('a queue within its caps (or empty) is checked without a write transaction: an idle forwarder writes nothing', () => {
    let now = 0;
    const store = openAt(tmp.dir, { now: () => now });
    const caps = { maxAgeMs: 60_000, maxPendingRows: 5, maxPendingBytes: 1_000_000 };
    expect(store.enforceCapsByReason('a', caps, 0)).toEqual({ expired: 0, overflow: 0 }); // empty
    now = 1000;
    store.commit({}, [{ record: makeRecord(1), sinks: ['a'] }]);
    // Another connection holds the write lock: a write transaction would wait for it and fail (SQLITE_BUSY).
    const other = new DatabaseSync(join(tmp.dir, 'forwarder.db'), { timeout: 0 });
    other.exec('BEGIN IMMEDIATE');
    try {
      expect(store.enforceCapsByReason('a', caps, 2000)).toEqual({ expired: 0, overflow: 0 });
      expect(store.enforceCapsByReason('b', caps, 2000)).toEqual({ expired: 0, overflow: 0 });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    // Over a cap, it writes (moves the row) as before.
    expect(store.enforceCapsByReason('a', caps, 1000 + 60_001)).toEqual({ expired: 1, overflow: 0 });
  });

  it('enforces row, byte and age caps on the oldest rows, as dead letters', () => {
    let now = 0;
    const store = openAt(tmp.dir, { now: () => now });
    for (let i = 1; i <= 10; i++) {
      now = i * 1000;
      store.commit({}, [{ record: makeRecord(i), sinks: ['a'] }]);
    }
    expect(store.enforceCapsByReason('a', { maxAgeMs: 7500 }, 10_000)).toEqual({ expired: 2, overflow: 0 });
    expect(store.enforceCapsByReason('a', { maxPendingRows: 5 }, 10_000)).toEqual({
      expired: 0,
      overflow: 3,
    });
    const newestThree = store
      .pending('a', 10)
      .slice(-3)
      .reduce((sum, r) => sum + r.bytes, 0);
    expect(store.enforceCapsByReason('a', { maxPendingBytes: newestThree }, 10_000)).toEqual({
      expired: 0,
      overflow: 2,
    });
    expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(['rec-8', 'rec-9', 'rec-10']);
    const reasons = store.listDeadLetters().map((d) => `${d.recordId}:${d.reason}`);
    expect(reasons).toEqual([
      'rec-1:expired',
      'rec-2:expired',
      'rec-3:overflow',
      'rec-4:overflow',
      'rec-5:overflow',
      'rec-6:overflow',
      'rec-7:overflow',
    ]);
    expect(store.stats()[0]).toMatchObject({ pending: 3, deadLetters: 7, oldestCreatedAt: 8000 });
  });

  describe('dead-letter caps', () => {
    /** `count` records committed for sink `a` and moved to dead letters, oldest first. */
    function deadLetters(store: Store, from: number, to: number, sink = 'a'): void {
      const records = [];
      for (let i = from; i <= to; i++) records.push({ record: makeRecord(i), sinks: [sink] });
      store.commit({}, records);
      const seqs = store.pending(sink, 1000).map((r) => r.seq);
      store.deadLetter(sink, seqs, { reason: 'permanent', error: 'http-400: rejected' });
    }
    const ids = (store: Store, sink = 'a') => store.listDeadLetters({ sink }).map((d) => d.recordId);

    it('drops the oldest beyond the row cap and the byte cap, for good, and counts them per sink', () => {
      const store = openAt();
      deadLetters(store, 1, 10);
      deadLetters(store, 1, 2, 'b');
      const bytes = store.listDeadLetters({ sink: 'a' }).map((d) => d.bytes);
      expect(store.enforceDeadLetterCaps('a', { maxDeadLetterRows: 6 })).toMatchObject({
        rows: 4,
        bytes: bytes.slice(0, 4).reduce((n, b) => n + b, 0),
      });
      expect(ids(store)).toEqual(['rec-5', 'rec-6', 'rec-7', 'rec-8', 'rec-9', 'rec-10']);
      const newestThree = bytes.slice(-3).reduce((n, b) => n + b, 0);
      expect(store.enforceDeadLetterCaps('a', { maxDeadLetterBytes: newestThree + 1 })).toMatchObject({
        rows: 3,
      });
      expect(ids(store)).toEqual(['rec-8', 'rec-9', 'rec-10']);
      expect(ids(store, 'b')).toEqual(['rec-1', 'rec-2']); // another sink's dead letters are its own
      expect(store.stats().map((s) => [s.sink, s.deadLetters, s.deadLettersDropped])).toEqual([
        ['a', 3, 7],
        ['b', 2, 0],
      ]);
      // The count survives a restart and the queue being gone (nothing else of sink a is left after a replay).
      store.replayDeadLetters({ sink: 'a' });
      for (const row of store.pending('a', 10)) store.ack('a', [row.seq]);
      store.close();
      const reopened = openAt();
      expect(reopened.stats().find((s) => s.sink === 'a')).toMatchObject({
        pending: 0,
        deadLetters: 0,
        deadLettersDropped: 7,
      });
    });

    it('within the caps it reads only (an index) and writes nothing, even while another connection holds the write lock', () => {
      const store = openAt();
      deadLetters(store, 1, 3);
      const plan = new DatabaseSync(join(tmp.dir, DATABASE_FILE), { readOnly: true });
      const detail = (
        plan
          .prepare(
            'EXPLAIN QUERY PLAN SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM dead_letters WHERE sink = ?',
          )
          .all('a') as Array<{ detail: string }>
      ).map((r) => r.detail);
      plan.close();
      expect(detail.join(' ')).toMatch(/USING COVERING INDEX dead_letters_by_sink_size/);
      const other = new DatabaseSync(join(tmp.dir, DATABASE_FILE), { timeout: 0 });
      other.exec('BEGIN IMMEDIATE');
      try {
        expect(store.enforceDeadLetterCaps('a', { maxDeadLetterRows: 3, maxDeadLetterBytes: 1e9 })).toEqual({
          rows: 0,
          bytes: 0,
        });
        expect(store.enforceDeadLetterCaps('a', {})).toEqual({ rows: 0, bytes: 0 });
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect(ids(store)).toEqual(['rec-1', 'rec-2', 'rec-3']);
    });

    it('a version-1 database keeps its dead letters through the migration that indexes their sizes', () => {
      const path = join(tmp.dir, DATABASE_FILE);
      const store = openAt();
      deadLetters(store, 1, 2);
      store.close();
      open.splice(0);
      // Back to what a version-1 forwarder left: its index, user_version 1.
      const raw = new DatabaseSync(path);
      raw.exec(
        'DROP INDEX dead_letters_by_sink_size; CREATE INDEX dead_letters_by_sink ON dead_letters (sink, id); PRAGMA user_version=1',
      );
      raw.close();
      const view = openStoreForInspection({ stateDir: tmp.dir, logger: silentLogger(), readOnly: true });
      expect(view?.stats()).toEqual([expect.objectContaining({ sink: 'a', deadLetters: 2 })]); // read as it is
      view?.close();
      const migrated = openAt();
      expect(ids(migrated)).toEqual(['rec-1', 'rec-2']);
      const check = new DatabaseSync(path, { readOnly: true });
      expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION });
      const indexes = check
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'dead_letters'")
        .all() as Array<{ name: string }>;
      check.close();
      expect(indexes.map((i) => i.name)).toEqual(['dead_letters_by_sink_size']);
      expect(migrated.enforceDeadLetterCaps('a', { maxDeadLetterRows: 1 })).toMatchObject({ rows: 1 });
      expect(ids(migrated)).toEqual(['rec-2']);
    });
  });

  it('keeps meta values', () => {
    const store = openAt();
    expect(store.getMeta('approvals')).toBeUndefined();
    store.setMeta('approvals', '{"x":1}');
    expect(store.getMeta('approvals')).toBe('{"x":1}');
  });
});

describe('disk full (max_page_count)', () => {
  it('throws StoreWriteError(full), leaves state and rows unchanged, still acks, and recovers when space returns', () => {
    const store = openAt();
    store.commit({ step: 1 }, [{ record: makeRecord(1), sinks: ['a'] }]);
    setPageLimit(store, 1); // clamps to the current size: any growth fails
    const big = Array.from({ length: 200 }, (_, i) => ({ record: makeRecord(100 + i), sinks: ['a', 'b'] }));
    let thrown: unknown;
    try {
      store.commit({ step: 2 }, big);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StoreWriteError);
    expect((thrown as StoreWriteError).full).toBe(true);
    expect((thrown as Error).message).toMatch(/full/);
    expect(store.loadState()).toEqual({ step: 1 });
    expect(store.pending('a', 1000)).toHaveLength(1);
    expect(store.pending('b', 1000)).toHaveLength(0);
    // The drain path still works while full.
    store.ack('a', [store.pending('a', 1)[0]?.seq as number]);
    expect(store.pending('a', 10)).toHaveLength(0);
    // Space returns: the same diff commits, nothing lost.
    setPageLimit(store, undefined);
    store.commit({ step: 2 }, big);
    expect(store.loadState()).toEqual({ step: 2 });
    expect(store.pending('b', 1000)).toHaveLength(200);
    expect(store.integrityCheck()).toBe('ok');
  });

  it('honours the maxPageCount open option', () => {
    const store = openAt(tmp.dir, { maxPageCount: 40 });
    let committed = 0;
    let error: unknown;
    for (let i = 0; i < 1000 && error === undefined; i++) {
      try {
        store.commit({ i }, [{ record: makeRecord(i), sinks: ['a'] }]);
        committed++;
      } catch (e) {
        error = e;
      }
    }
    expect(error).toBeInstanceOf(StoreWriteError);
    expect((error as StoreWriteError).full).toBe(true);
    expect(store.pending('a', 5000)).toHaveLength(committed);
    expect(store.loadState()).toEqual({ i: committed - 1 });
  });
});

describe('inspection', () => {
  it('returns undefined for a missing state directory without creating anything', () => {
    const dir = join(tmp.dir, 'absent');
    expect(openStoreForInspection({ stateDir: dir, logger: silentLogger() })).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
  });

  it('reads a store held by a running forwarder', () => {
    const store = openAt();
    store.commit({}, [{ record: makeRecord(1), sinks: ['a'] }]);
    const view = openStoreForInspection({ stateDir: tmp.dir, logger: silentLogger(), readOnly: true });
    expect(view?.stats()).toEqual([expect.objectContaining({ sink: 'a', pending: 1 })]);
    view?.close();
  });
});

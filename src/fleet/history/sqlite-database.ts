/**
 * The embedded fleet store: one SQLite file (node:sqlite, WAL).
 *
 * - Writes (ingest, pruning, migrations) run on the caller's connection, one transaction at a time: a queue
 *   orders them, BEGIN IMMEDIATE takes SQLite's write lock. While another process holds that lock (`fleet run`
 *   and `fleet import` on one file), the attempt is repeated on a timer instead of SQLite's synchronous busy
 *   wait, so the event loop keeps serving /healthz, the dashboard and the consumer's renewals meanwhile.
 * - Reads run in worker threads on read-only connections of their own, so a long dashboard query never
 *   holds the consumer's event loop (ingest, checkpoints, ownership renewal). WAL lets them read while a write
 *   commits. One reader starts with the database; a second starts the first time a query arrives while every
 *   reader is busy (the summary's independent statements, two dashboard users), so they run side by side as
 *   they do on PostgreSQL's pooled connections. Like those, each statement sees its own snapshot. The worker's code is a self-contained string (it only needs node:sqlite and node:worker_threads),
 *   so it runs the same from the sources, the npm package and the single executable.
 */
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { type Clock, sleep, systemClock } from '../../clock.ts';
import { createPrivateFile } from '../../platform.ts';
import { SQLITE_BUSY, sqliteErrorCode } from '../../store/errors.ts';
import type { SqlDatabase, SqlExecutor, SqlRow, SqlValue } from './sql.ts';

const { mkdirSync, existsSync } = process.getBuiltinModule('node:fs');

/**
 * How long SQLite's lock waits last: a write waits this long for another process's write lock before it fails
 * with SQLITE_BUSY ("database is locked"); the reader threads wait the same, as SQLite's busy timeout.
 */
const BUSY_TIMEOUT_MS = 5_000;
/** The pause between attempts to take the write lock: doubling from the first to the last. */
const LOCK_RETRY_FIRST_MS = 1;
const LOCK_RETRY_LAST_MS = 50;

/** Reader threads at most: one per core of a small consumer host. */
const MAX_READERS = 2;

const READER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.path, { readOnly: true, timeout: workerData.busyTimeoutMs });
const statements = new Map();
parentPort.on('message', (message) => {
  if (message.close) { db.close(); parentPort.close(); return; }
  try {
    let entry = statements.get(message.sql);
    if (entry === undefined) {
      const statement = db.prepare(message.sql);
      const names = statement.columns().map((c) => c.name);
      // Rows as arrays when every column has its own name (a row's names are then sent once per answer).
      const columns = new Set(names).size === names.length ? names : undefined;
      if (columns !== undefined) statement.setReturnArrays(true);
      entry = { statement, columns };
      if (statements.size > 200) statements.clear();
      statements.set(message.sql, entry);
    }
    const rows = entry.statement.all(...message.params);
    parentPort.postMessage({ id: message.id, rows, columns: entry.columns });
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: String(error && error.message || error) });
  }
});
`;

/**
 * The checkpointer thread: copies the WAL's committed pages into the file on a connection of its own (a PASSIVE
 * checkpoint, which neither waits for nor blocks the writer or the readers), at most every `intervalMs` while
 * commits arrive. It stops at its first failure other than SQLITE_BUSY (another checkpoint running), saying why;
 * the writer's own checkpoints (WAL_AUTOCHECKPOINT_PAGES) go on as without it.
 */
const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.path, { timeout: 0 });
let last = 0;
let timer;
let stopped = false;
function checkpoint() {
  timer = undefined;
  if (stopped) return;
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch (error) {
    if (error && (error.errcode & 0xff) === ${SQLITE_BUSY}) return;
    stopped = true;
    parentPort.postMessage({ error: String(error && error.message || error) });
  } finally {
    last = Date.now();
  }
}
parentPort.on('message', (message) => {
  if (message.close) {
    if (timer !== undefined) clearTimeout(timer);
    db.close();
    parentPort.close();
    return;
  }
  if (timer === undefined && !stopped)
    timer = setTimeout(checkpoint, Math.max(0, last + workerData.intervalMs - Date.now()));
});
`;

/**
 * At most this often the checkpointer copies the WAL into the file while commits arrive: at the benchmark's ingest
 * rate about 8 batches' pages per checkpoint, so a page several of them change is copied once.
 */
const CHECKPOINT_INTERVAL_MS = 250;

/**
 * Copies committed pages into the file in a thread of its own, so that ingest's commits do not wait for it: the
 * writer's commit appends its pages to the WAL (and syncs it) and returns; the checkpointer's copies and the file's
 * sync run beside the next batches. The WAL's pages are then mostly in the file already when the writer's own
 * checkpoint comes due (WAL_AUTOCHECKPOINT_PAGES): that one copies what is left and lets the WAL start over.
 */
class SqliteCheckpointer {
  readonly #worker: Worker;
  readonly #path: string;
  /** Settles when the thread has ended, whenever that was (a thread that failed has ended before close). */
  readonly #exited: Promise<void>;
  #failure: string | undefined;

  constructor(path: string) {
    this.#path = path;
    this.#worker = new Worker(CHECKPOINTER_SOURCE, {
      eval: true,
      workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS },
      resourceLimits: { maxOldGenerationSizeMb: 32 },
    });
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.unref();
    this.#worker.on('message', (message: { error?: string }) =>
      this.#stopped(message.error ?? 'no reason given'),
    );
    this.#worker.on('error', (error) => this.#stopped(error.message));
  }

  #stopped(reason: string): void {
    if (this.#failure !== undefined) return;
    this.#failure = reason;
    process.emitWarning(
      `fleet history ${this.#path}: background checkpoints stopped (${reason}); the writer checkpoints alone, ` +
        'every 10,000 pages of WAL, so ingest goes on (fix the cause the message names, then restart)',
    );
  }

  committed(): void {
    if (this.#failure === undefined) this.#worker.postMessage({});
  }

  async close(): Promise<void> {
    // Held until it has closed its connection: an unreferenced thread would let the process end (exit code 0)
    // while a caller awaits this, before it reports what it was closing for (a failed open, say).
    this.#worker.ref();
    this.#worker.postMessage({ close: true });
    await this.#exited;
  }
}

/** A reader thread's answer: an error, or rows — as arrays of `columns`' values when it names them. */
interface ReaderAnswer {
  id: number;
  rows?: unknown[];
  columns?: string[] | undefined;
  error?: string;
}

/**
 * The rows of an answer as objects. The reader sends a statement's rows as arrays with its column names once,
 * because copying a row object between threads copies every column's name with it: a page of 100 maintenance rows
 * costs half as much to send as values alone (the summary's pending page, docs/fleet.md).
 */
function rowsOf(answer: ReaderAnswer): SqlRow[] {
  const rows = answer.rows ?? [];
  const columns = answer.columns;
  if (columns === undefined) return rows as SqlRow[];
  return rows.map((values) => {
    const row: SqlRow = {};
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = (values as unknown[])[i];
    return row;
  });
}

interface Pending {
  resolve(rows: SqlRow[]): void;
  reject(error: Error): void;
}

/** Queries of a read-only connection in a worker thread. */
class SqliteReader {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #failure: Error | undefined;

  constructor(path: string) {
    this.#worker = new Worker(READER_SOURCE, {
      eval: true,
      workerData: { path, busyTimeoutMs: BUSY_TIMEOUT_MS },
      // A reader needs little heap: rows are copied out page by page.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    this.#worker.unref();
    this.#worker.on('message', (message: ReaderAnswer) => {
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      if (message.error !== undefined) pending.reject(new Error(message.error));
      else pending.resolve(rowsOf(message));
    });
    this.#worker.on('error', (error) => this.#fail(error));
    this.#worker.on('exit', () => this.#fail(new Error('the fleet database reader thread stopped')));
  }

  /** Queries sent and not answered yet. */
  get busy(): number {
    return this.#pending.size;
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  all(sql: string, params: readonly SqlValue[]): Promise<SqlRow[]> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ id, sql, params });
    }).finally(() => {
      if (this.#pending.size === 0) this.#worker.unref();
    }) as Promise<SqlRow[]>;
  }

  async close(): Promise<void> {
    if (this.#failure) return;
    this.#failure = new Error('the fleet database is closed');
    this.#worker.postMessage({ close: true });
    await this.#worker.terminate();
  }
}

/** Up to MAX_READERS readers: a query goes to the least busy, and a new reader starts when all are busy. */
class SqliteReaders {
  readonly #path: string;
  readonly #readers: SqliteReader[];

  constructor(path: string) {
    this.#path = path;
    this.#readers = [new SqliteReader(path)];
  }

  all(sql: string, params: readonly SqlValue[]): Promise<SqlRow[]> {
    let reader = this.#readers.reduce((a, b) => (b.busy < a.busy ? b : a));
    if (reader.busy > 0 && this.#readers.length < MAX_READERS) {
      reader = new SqliteReader(this.#path);
      this.#readers.push(reader);
    }
    return reader.all(sql, params);
  }

  async close(): Promise<void> {
    await Promise.all(this.#readers.map((reader) => reader.close()));
  }
}

/** Statements on the writer connection (the caller's thread). */
class SqliteWriter implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  readonly #db: DatabaseSync;
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  async all(sql: string, params: readonly SqlValue[] = []): Promise<SqlRow[]> {
    return this.#db.prepare(sql).all(...(params as SQLInputValue[])) as SqlRow[];
  }
  async run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
    return { changes: Number(this.#db.prepare(sql).run(...(params as SQLInputValue[])).changes) };
  }
  async lockKey(): Promise<void> {
    // One writer at a time already (BEGIN IMMEDIATE).
  }
  async lockKeys(): Promise<void> {}
}

export interface OpenSqliteOptions {
  /** The SQLite file (created with its directory unless readOnly). */
  path: string;
  /** Open an existing file for reading only (reports, a read-only dashboard). */
  readOnly?: boolean;
  /** The timers of the write-lock wait (tests: a fake clock). */
  clock?: Clock;
  /** Checkpoints in a thread of their own too (SqliteCheckpointer; default true). False: the writer's only. */
  backgroundCheckpoints?: boolean;
}

/** Thrown when a read-only open finds no database file. */
export class MissingDatabaseError extends Error {
  constructor(path: string) {
    super(`fleet database ${path} does not exist (give the path fleet run writes, or its --database URL)`);
    this.name = 'MissingDatabaseError';
  }
}

/**
 * Takes SQLite's write lock (BEGIN IMMEDIATE) without blocking the event loop. The connection has no busy
 * timeout, so a lock another process holds is SQLITE_BUSY at once; the attempt is repeated on a timer until
 * BUSY_TIMEOUT_MS have passed, then that SQLITE_BUSY ("database is locked") is thrown, as SQLite's own busy wait
 * would have after blocking the thread for as long.
 */
async function beginImmediate(db: DatabaseSync, clock: Clock): Promise<void> {
  const deadline = clock.monotonic() + BUSY_TIMEOUT_MS;
  for (let pause = LOCK_RETRY_FIRST_MS; ; pause = Math.min(pause * 2, LOCK_RETRY_LAST_MS)) {
    try {
      db.exec('BEGIN IMMEDIATE');
      return;
    } catch (error) {
      if (sqliteErrorCode(error) !== SQLITE_BUSY || clock.monotonic() >= deadline) throw error;
    }
    await sleep(clock, Math.min(pause, deadline - clock.monotonic()));
  }
}

/**
 * Pages the WAL may hold before a commit copies them into the file (SQLite's default: 1,000, 4 MB). An ingest
 * batch of 100 records changes pages all over the records', observations' and heartbeats' B-trees; the WAL keeps
 * each changed page once per commit, the checkpoint once per checkpoint, so the longer the WAL runs between
 * checkpoints the more of a page's changes one copy into the file carries. A probe at 10,000 VMs × 90 days
 * (the benchmark's fleet, loads in turns): 71 → 62 KB written per record and 2,336 → 2,520 records/s at 10,000
 * pages. The WAL file grows to about 40 MB and stays that size while the history is open (SQLite reuses it).
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/** Opens (creating when writable) a fleet history SQLite file. */
export function openSqliteDatabase(options: OpenSqliteOptions): SqlDatabase {
  const path = resolve(options.path);
  const readOnly = options.readOnly ?? false;
  if (readOnly && !existsSync(path)) throw new MissingDatabaseError(path);
  if (!readOnly) mkdirSync(dirname(path), { recursive: true });
  // A new history is readable by its owner only (0600, like the forwarder's state; SQLite gives its -wal and -shm
  // files the same mode). An existing file keeps the mode its operator gave it.
  if (!readOnly && !existsSync(path)) createPrivateFile(path);
  const clock = options.clock ?? systemClock;
  const db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS, readOnly });
  if (!readOnly) {
    db.exec('PRAGMA journal_mode=WAL');
    db.exec('PRAGMA synchronous=FULL');
    db.exec(`PRAGMA wal_autocheckpoint=${WAL_AUTOCHECKPOINT_PAGES}`);
  }
  // From here on a lock is waited for by beginImmediate, on a timer (WAL: a transaction that holds the write
  // lock meets no other lock; reads run on the reader threads).
  db.exec('PRAGMA busy_timeout=0');
  const writer = new SqliteWriter(db);
  const reader = new SqliteReaders(path);
  const checkpointer =
    readOnly || options.backgroundCheckpoints === false ? undefined : new SqliteCheckpointer(path);
  let queue: Promise<unknown> = Promise.resolve();

  const transaction = <T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => {
    const run = queue.then(async () => {
      await beginImmediate(db, clock);
      try {
        const result = await fn(writer);
        db.exec('COMMIT');
        checkpointer?.committed();
        return result;
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });
    queue = run.catch(() => undefined);
    return run;
  };

  return {
    dialect: 'sqlite',
    description: path,
    all: (sql, params = []) => reader.all(sql, params),
    run: (sql, params = []) => transaction((tx) => tx.run(sql, params)),
    lockKey: async () => undefined,
    lockKeys: async () => undefined,
    transaction,
    withMigrationLock: transaction,
    close: async () => {
      await queue;
      await reader.close();
      // Before the writer: the last connection to close copies the WAL into the file and removes it.
      await checkpointer?.close();
      if (db.isOpen) db.close();
    },
  };
}

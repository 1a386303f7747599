/**
 * The durable store: one SQLite database (node:sqlite, WAL + synchronous=FULL) holding the transform state,
 * one outbox queue per sink, dead letters and a small key-value table. One writer connection per process; a
 * state-directory lock keeps a second forwarder out. Opening lives in database.ts, the interfaces by role in
 * types.ts. See docs/delivery.md.
 */

import type { DatabaseSync } from 'node:sqlite';
import type { LifecycleRecord } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import { redactText } from '../redact.ts';
import { RESERVE_BYTES, RESERVE_RETRY_MS, runIntegrityCheck, UNLIMITED_PAGES } from './database.ts';
import { SQLITE_FULL, sqliteErrorCode, toWriteError } from './errors.ts';
import type { StateDirLock } from './lock.ts';
import { emptySinkQueueStats } from './queue-stats.ts';
import type {
  Caps,
  CapsResult,
  DeadLetterCaps,
  DeadLetterDrop,
  DeadLetterReason,
  DeadLetterRow,
  DiskUsage,
  OutboxRow,
  SinkQueueStats,
  Store,
} from './types.ts';

const { closeSync, existsSync, fsyncSync, openSync, statfsSync, statSync, unlinkSync, writeSync } =
  process.getBuiltinModule('node:fs');

/**
 * Which writes may spend the disk-full reserve on SQLITE_FULL: the drain path (acks, retry bookkeeping,
 * dead-letter moves: so delivered records can still be acknowledged) and commits that carry records (so
 * transitions seen on a full disk are made durable instead of waiting in memory, where a stop would lose them).
 */
type ReserveUse = 'drain' | 'records' | undefined;

/**
 * Meta key prefix (one key per sink) counting the dead letters the dead-letter caps dropped: JSON
 * `{"rows": N, "bytes": B}`, kept after the sink's queue is gone (shown by `outbox status`).
 */
export const DEAD_LETTERS_DROPPED_META = 'deadLetters.dropped:';

/** The reserve is re-created once the disk has at least this much free beyond the reserve itself. */
const RESERVE_HEADROOM_BYTES = 1024 * 1024;

export interface StoreInternals {
  db: DatabaseSync;
  stateDir: string;
  databasePath: string;
  logger: Logger;
  now: () => number;
  lock?: StateDirLock;
  /** Path of the reserve file; undefined for read-only inspection. */
  reservePath?: string;
}

/** The SQLite-backed Store. Construct through openStore() / openStoreForInspection(). */
export class SqliteStore implements Store {
  readonly stateDir: string;
  readonly databasePath: string;
  readonly #db: DatabaseSync;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #lock: StateDirLock | undefined;
  readonly #reservePath: string | undefined;
  #reserveReleased = false;
  #lastReserveAttempt = 0;

  constructor(internals: StoreInternals) {
    this.#db = internals.db;
    this.stateDir = internals.stateDir;
    this.databasePath = internals.databasePath;
    this.#logger = internals.logger;
    this.#now = internals.now;
    this.#lock = internals.lock;
    this.#reservePath = internals.reservePath;
    if (this.#reservePath !== undefined) this.#ensureReserve();
  }

  loadState<T>(): T | undefined {
    const row = this.#db.prepare('SELECT json FROM state WHERE id = 1').get() as { json: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.json) as T);
  }

  commit(
    state: unknown,
    deliveries: ReadonlyArray<{ record: LifecycleRecord; sinks: readonly string[] }>,
  ): void {
    const now = this.#now();
    const use: ReserveUse = deliveries.length > 0 ? 'records' : undefined;
    this.#write('commit of state and outbox rows', use, () => {
      this.#db
        .prepare(
          'INSERT INTO state (id, json, updated_at) VALUES (1, ?, ?) ' +
            'ON CONFLICT (id) DO UPDATE SET json = excluded.json, updated_at = excluded.updated_at',
        )
        .run(JSON.stringify(state ?? null), now);
      const insert = this.#db.prepare(
        'INSERT INTO outbox (sink, record_id, record_source, record, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      );
      for (const { record, sinks } of deliveries) {
        const json = JSON.stringify(record);
        const bytes = Buffer.byteLength(json);
        for (const sink of sinks) insert.run(sink, record.id, record.source, json, bytes, now);
      }
    });
  }

  pending(sink: string, limit: number): OutboxRow[] {
    const rows = this.#db
      .prepare(
        'SELECT seq, sink, record_id, record, attempts, next_attempt_at, created_at, bytes, last_error ' +
          'FROM outbox WHERE sink = ? ORDER BY seq LIMIT ?',
      )
      .all(sink, Math.max(1, Math.floor(limit))) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      seq: Number(r.seq),
      sink: String(r.sink),
      recordId: String(r.record_id),
      record: JSON.parse(String(r.record)) as LifecycleRecord,
      attempts: Number(r.attempts),
      nextAttemptAt: Number(r.next_attempt_at),
      createdAt: Number(r.created_at),
      bytes: Number(r.bytes),
      lastError: r.last_error === null ? null : String(r.last_error),
    }));
  }

  ack(sink: string, seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    this.#write('acknowledging delivered rows', 'drain', () => {
      const del = this.#db.prepare('DELETE FROM outbox WHERE sink = ? AND seq = ?');
      for (const seq of seqs) del.run(sink, seq);
    });
  }

  recordFailure(
    sink: string,
    seqs: readonly number[],
    failure: { attempts: number; nextAttemptAt: number; error: string },
  ): void {
    if (seqs.length === 0) return;
    this.#write('recording a failed attempt', 'drain', () => {
      const update = this.#db.prepare(
        'UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE sink = ? AND seq = ?',
      );
      // Redacted before SQLite sees it: neither the database nor its WAL ever holds a credential a receiver echoed.
      const error = redactText(failure.error);
      for (const seq of seqs) update.run(failure.attempts, failure.nextAttemptAt, error, sink, seq);
    });
  }

  deadLetter(sink: string, seqs: readonly number[], why: { reason: DeadLetterReason; error: string }): void {
    if (seqs.length === 0) return;
    this.#write('moving rows to dead letters', 'drain', () => this.#moveToDeadLetters(sink, seqs, why));
  }

  #moveToDeadLetters(
    sink: string,
    seqs: readonly number[],
    why: { reason: DeadLetterReason; error: string },
  ): void {
    const now = this.#now();
    const copy = this.#db.prepare(
      'INSERT INTO dead_letters (sink, original_seq, record_id, record_source, record, bytes, created_at, attempts, ' +
        'reason, error, dead_lettered_at) SELECT sink, seq, record_id, record_source, record, bytes, created_at, ' +
        'attempts, ?, ?, ? FROM outbox WHERE sink = ? AND seq = ?',
    );
    const del = this.#db.prepare('DELETE FROM outbox WHERE sink = ? AND seq = ?');
    const error = redactText(why.error); // before SQLite (database and WAL) sees it
    for (const seq of seqs) {
      copy.run(why.reason, error, now, sink, seq);
      del.run(sink, seq);
    }
  }

  enforceCapsByReason(sink: string, caps: Caps, nowMs: number): CapsResult {
    const result: CapsResult = { overflow: 0, expired: 0 };
    if (
      caps.maxAgeMs === undefined &&
      caps.maxPendingRows === undefined &&
      caps.maxPendingBytes === undefined
    ) {
      return result;
    }
    // Read first: a write transaction, even one that changes nothing, writes SQLite's WAL index (-shm), and an
    // idle forwarder writes nothing (docs/performance.md).
    const queue = this.#db
      .prepare(
        'SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b, MIN(created_at) AS oldest FROM outbox WHERE sink = ?',
      )
      .get(sink) as { n: number; b: number; oldest: number | null };
    const expiredNone =
      caps.maxAgeMs === undefined || queue.oldest === null || Number(queue.oldest) >= nowMs - caps.maxAgeMs;
    const withinRows = caps.maxPendingRows === undefined || Number(queue.n) <= caps.maxPendingRows;
    const withinBytes = caps.maxPendingBytes === undefined || Number(queue.b) <= caps.maxPendingBytes;
    if (expiredNone && withinRows && withinBytes) return result;
    this.#write('moving rows beyond the sink caps to dead letters', 'drain', () => {
      if (caps.maxAgeMs !== undefined) {
        const cutoff = nowMs - caps.maxAgeMs;
        const expired = this.#seqs('SELECT seq FROM outbox WHERE sink = ? AND created_at < ? ORDER BY seq', [
          sink,
          cutoff,
        ]);
        this.#moveToDeadLetters(sink, expired, {
          reason: 'expired',
          error: `pending longer than the sink's maxAge (${caps.maxAgeMs} ms)`,
        });
        result.expired = expired.length;
      }
      const victims: number[] = [];
      const rows = this.#db
        .prepare('SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM outbox WHERE sink = ?')
        .get(sink) as { n: number; b: number };
      let count = Number(rows.n);
      let bytes = Number(rows.b);
      const overRows = () => caps.maxPendingRows !== undefined && count > caps.maxPendingRows;
      const overBytes = () => caps.maxPendingBytes !== undefined && bytes > caps.maxPendingBytes;
      if (overRows() || overBytes()) {
        const iter = this.#db
          .prepare('SELECT seq, bytes FROM outbox WHERE sink = ? ORDER BY seq')
          .iterate(sink);
        for (const row of iter as Iterable<{ seq: number; bytes: number }>) {
          if (!overRows() && !overBytes()) break;
          victims.push(Number(row.seq));
          count -= 1;
          bytes -= Number(row.bytes);
        }
      }
      this.#moveToDeadLetters(sink, victims, {
        reason: 'overflow',
        error: `sink queue over its caps (maxPendingRows ${caps.maxPendingRows ?? 'none'}, maxPendingBytes ${
          caps.maxPendingBytes ?? 'none'
        })`,
      });
      result.overflow = victims.length;
    });
    if (result.overflow + result.expired > 0) {
      this.#logger.error(
        { sink, ...result, caps },
        'sink queue over its caps: moved the oldest pending records to dead letters (replay with `deadletters replay`)',
      );
    }
    return result;
  }

  enforceDeadLetterCaps(sink: string, caps: DeadLetterCaps): DeadLetterDrop {
    const none: DeadLetterDrop = { rows: 0, bytes: 0 };
    const { maxDeadLetterRows: maxRows, maxDeadLetterBytes: maxBytes } = caps;
    if (maxRows === undefined && maxBytes === undefined) return none;
    // Read first, from the index (sink, id, bytes): within the caps nothing is written (docs/performance.md).
    const totals = () =>
      this.#db
        .prepare('SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM dead_letters WHERE sink = ?')
        .get(sink) as { n: number; b: number };
    const within = (t: { n: number; b: number }) =>
      (maxRows === undefined || Number(t.n) <= maxRows) &&
      (maxBytes === undefined || Number(t.b) <= maxBytes);
    if (within(totals())) return none;
    let drop = none;
    this.#write('dropping dead letters beyond the caps', 'drain', () => {
      const total = totals();
      let rows = Number(total.n);
      let bytes = Number(total.b);
      const found: DeadLetterDrop = { rows: 0, bytes: 0 };
      const oldest = this.#db
        .prepare('SELECT id, bytes FROM dead_letters WHERE sink = ? ORDER BY id')
        .iterate(sink);
      for (const row of oldest as Iterable<{ id: number; bytes: number }>) {
        if (within({ n: rows, b: bytes })) break;
        found.firstId ??= Number(row.id);
        found.lastId = Number(row.id);
        found.rows += 1;
        found.bytes += Number(row.bytes);
        rows -= 1;
        bytes -= Number(row.bytes);
      }
      if (found.rows === 0 || found.lastId === undefined) return;
      this.#db.prepare('DELETE FROM dead_letters WHERE sink = ? AND id <= ?').run(sink, found.lastId);
      const key = DEAD_LETTERS_DROPPED_META + sink;
      const before = parseDropped(
        (this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)
          ?.value,
      );
      this.#db
        .prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)')
        .run(key, JSON.stringify({ rows: before.rows + found.rows, bytes: before.bytes + found.bytes }));
      drop = found;
    });
    return drop;
  }

  #seqs(sql: string, params: Array<string | number>): number[] {
    return (this.#db.prepare(sql).all(...params) as Array<{ seq: number }>).map((r) => Number(r.seq));
  }

  stats(): SinkQueueStats[] {
    const bySink = new Map<string, SinkQueueStats>();
    const get = (sink: string): SinkQueueStats => {
      let s = bySink.get(sink);
      if (s === undefined) {
        s = emptySinkQueueStats(sink);
        bySink.set(sink, s);
      }
      return s;
    };
    const pending = this.#db
      .prepare(
        'SELECT sink, COUNT(*) AS n, SUM(bytes) AS b, MIN(created_at) AS oldest, MIN(seq) AS head ' +
          'FROM outbox GROUP BY sink',
      )
      .all() as Array<{ sink: string; n: number; b: number; oldest: number; head: number }>;
    const headRow = this.#db.prepare(
      'SELECT next_attempt_at, attempts, last_error FROM outbox WHERE seq = ?',
    );
    for (const row of pending) {
      const s = get(row.sink);
      s.pending = Number(row.n);
      s.pendingBytes = Number(row.b);
      s.oldestCreatedAt = Number(row.oldest);
      const head = headRow.get(row.head) as
        | { next_attempt_at: number; attempts: number; last_error: string | null }
        | undefined;
      if (head !== undefined) {
        s.nextAttemptAt = Number(head.next_attempt_at);
        s.headAttempts = Number(head.attempts);
        s.lastError = head.last_error;
      }
    }
    const dead = this.#db
      .prepare('SELECT sink, COUNT(*) AS n FROM dead_letters GROUP BY sink')
      .all() as Array<{
      sink: string;
      n: number;
    }>;
    for (const row of dead) get(row.sink).deadLetters = Number(row.n);
    const dropped = this.#db
      .prepare('SELECT key, value FROM meta WHERE substr(key, 1, length(?1)) = ?1')
      .all(DEAD_LETTERS_DROPPED_META) as Array<{ key: string; value: string }>;
    for (const row of dropped) {
      const rows = parseDropped(row.value).rows;
      if (rows > 0) get(row.key.slice(DEAD_LETTERS_DROPPED_META.length)).deadLettersDropped = rows;
    }
    return [...bySink.values()].sort((a, b) => a.sink.localeCompare(b.sink));
  }

  listDeadLetters(filter: { sink?: string; id?: number; limit?: number } = {}): DeadLetterRow[] {
    const { where, params } = deadLetterWhere(filter);
    const rows = this.#db
      .prepare(`SELECT * FROM dead_letters ${where} ORDER BY id LIMIT ?`)
      .all(...params, filter.limit ?? -1) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      id: Number(r.id),
      sink: String(r.sink),
      originalSeq: Number(r.original_seq),
      recordId: String(r.record_id),
      recordSource: String(r.record_source),
      record: JSON.parse(String(r.record)) as LifecycleRecord,
      bytes: Number(r.bytes),
      createdAt: Number(r.created_at),
      attempts: Number(r.attempts),
      reason: String(r.reason) as DeadLetterReason,
      error: String(r.error),
      deadLetteredAt: Number(r.dead_lettered_at),
    }));
  }

  replayDeadLetters(filter: { sink?: string; id?: number; limit?: number } = {}): number {
    const matching = deadLetterWhere(filter);
    // The oldest `limit` matching dead letters (all when no limit), selected once for both statements.
    const where = `WHERE id IN (SELECT id FROM dead_letters ${matching.where} ORDER BY id LIMIT ?)`;
    const params = [...matching.params, filter.limit ?? -1];
    let moved = 0;
    this.#write('replaying dead letters', undefined, () => {
      const now = this.#now();
      const result = this.#db
        .prepare(
          'INSERT INTO outbox (sink, record_id, record_source, record, bytes, created_at) ' +
            `SELECT sink, record_id, record_source, record, bytes, ? FROM dead_letters ${where} ORDER BY id`,
        )
        .run(now, ...params);
      moved = Number(result.changes);
      this.#db.prepare(`DELETE FROM dead_letters ${where}`).run(...params);
    });
    if (moved > 0) this.#logger.info({ ...filter, count: moved }, 'dead letters moved back to the outbox');
    return moved;
  }

  setMeta(key: string, value: string): void {
    this.#write(`writing meta key ${key}`, undefined, () => {
      this.#db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(key, value);
    });
  }

  getMeta(key: string): string | undefined {
    const row = this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as
      | { value: string }
      | undefined;
    return row?.value;
  }

  integrityCheck(): string {
    return runIntegrityCheck(this.#db);
  }

  compact(): void {
    try {
      this.#db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      this.#db.exec('PRAGMA incremental_vacuum');
    } catch (error) {
      this.#logger.warn({ err: error }, 'store compaction (checkpoint/vacuum) failed; will retry later');
    }
  }

  diskUsage(): DiskUsage {
    const size = (path: string | undefined) => {
      try {
        return path === undefined ? 0 : statSync(path).size;
      } catch {
        return 0;
      }
    };
    const dbBytes = size(this.databasePath);
    const walBytes = size(`${this.databasePath}-wal`);
    const shmBytes = size(`${this.databasePath}-shm`);
    return {
      dbBytes,
      walBytes,
      shmBytes,
      reserveBytes: size(this.#reservePath),
      totalBytes: dbBytes + walBytes + shmBytes,
    };
  }

  /**
   * Limit the database to `pages` pages (forces SQLITE_FULL); undefined removes the limit. Not part of any Store
   * interface: tests reach it through test/support/store.ts.
   */
  setPageLimit(pages: number | undefined): void {
    this.#db.exec(`PRAGMA max_page_count=${pages === undefined ? UNLIMITED_PAGES : Math.floor(pages)}`);
  }

  close(): void {
    if (this.#db.isOpen) {
      try {
        this.#db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      } catch {
        // a busy or full disk must not prevent closing; WAL is replayed on next open
      }
      this.#db.close();
    }
    this.#lock?.release();
  }

  /**
   * Run `fn` in one IMMEDIATE transaction. On SQLITE_FULL in the drain path (acks, retry bookkeeping,
   * dead-letter moves) or in a commit that carries records, release the reserve file once and retry, so a full
   * disk never wedges delivery nor leaves observed transitions only in memory. After a successful write, a
   * released reserve is re-created as soon as the disk has room for it again.
   */
  #write(what: string, use: ReserveUse, fn: () => void): void {
    try {
      this.#transaction(fn);
    } catch (error) {
      if (use === undefined || sqliteErrorCode(error) !== SQLITE_FULL || !this.#releaseReserve(use)) {
        throw toWriteError(what, error);
      }
      try {
        this.#transaction(fn);
      } catch (retryError) {
        throw toWriteError(what, retryError);
      }
    }
    this.#maybeRestoreReserve();
  }

  #transaction(fn: () => void): void {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      fn();
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.isTransaction) {
        try {
          this.#db.exec('ROLLBACK');
        } catch {
          // the transaction is gone either way
        }
      }
      throw error;
    }
  }

  #ensureReserve(): void {
    const path = this.#reservePath;
    if (path === undefined) return;
    try {
      if (existsSync(path) && statSync(path).size >= RESERVE_BYTES) return;
      const fd = openSync(path, 'w', 0o600);
      try {
        const chunk = Buffer.alloc(256 * 1024);
        for (let written = 0; written < RESERVE_BYTES; written += chunk.length) writeSync(fd, chunk);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      this.#reserveReleased = false;
    } catch (error) {
      try {
        unlinkSync(path);
      } catch {
        // nothing to clean up
      }
      this.#reserveReleased = true;
      this.#logger.warn({ err: error }, 'could not create the disk-full reserve file; will retry later');
    }
  }

  #releaseReserve(use: 'drain' | 'records'): boolean {
    if (this.#reservePath === undefined || this.#reserveReleased) return false;
    try {
      unlinkSync(this.#reservePath);
    } catch {
      // already gone
    }
    this.#reserveReleased = true;
    this.#lastReserveAttempt = Number.NEGATIVE_INFINITY;
    this.#logger.error(
      { reserveBytes: RESERVE_BYTES, reserveFile: this.#reservePath },
      use === 'records'
        ? 'DISK FULL: released the disk-full reserve file to commit the transitions just observed; once that ' +
            'space is used up, new transitions wait in memory until space is freed (the reserve is re-created then)'
        : 'DISK FULL: released the reserve file so delivered records can still be acknowledged; ' +
            'new records cannot be committed until space is freed',
    );
    return true;
  }

  /**
   * Re-create a released reserve when the disk has room for it again (free space above the reserve plus
   * headroom, so re-creating it does not fill the disk at once). A failed attempt is retried at most every
   * RESERVE_RETRY_MS (each one writes up to 4 MiB).
   */
  #maybeRestoreReserve(): void {
    if (!this.#reserveReleased || this.#reservePath === undefined) return;
    const free = this.#freeBytes();
    if (free !== undefined && free < RESERVE_BYTES + RESERVE_HEADROOM_BYTES) return;
    const now = this.#now();
    if (Math.abs(now - this.#lastReserveAttempt) < RESERVE_RETRY_MS) return;
    this.#lastReserveAttempt = now;
    this.#ensureReserve();
    if (!this.#reserveReleased) this.#logger.info('disk space is back: disk-full reserve file restored');
  }

  /** Free bytes on the filesystem holding the state directory (for this user), or undefined if unknown. */
  #freeBytes(): number | undefined {
    try {
      const s = statfsSync(this.stateDir);
      return s.bavail * s.bsize;
    } catch {
      return undefined;
    }
  }
}

/** A DEAD_LETTERS_DROPPED_META value (an unreadable one counts as none). */
function parseDropped(value: string | undefined): { rows: number; bytes: number } {
  try {
    const parsed = JSON.parse(value ?? '{}') as { rows?: unknown; bytes?: unknown };
    const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
    return { rows: count(parsed.rows), bytes: count(parsed.bytes) };
  } catch {
    return { rows: 0, bytes: 0 };
  }
}

function deadLetterWhere(filter: { sink?: string; id?: number }): {
  where: string;
  params: Array<string | number>;
} {
  const clauses: string[] = [];
  const params: Array<string | number> = [];
  if (filter.sink !== undefined) {
    clauses.push('sink = ?');
    params.push(filter.sink);
  }
  if (filter.id !== undefined) {
    clauses.push('id = ?');
    params.push(filter.id);
  }
  return { where: clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`, params };
}

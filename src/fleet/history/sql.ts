/**
 * The one SQL surface both fleet stores speak. Every query and the ingest fold are written once, against
 * `SqlDatabase`, in the SQL that SQLite 3.45+ and PostgreSQL 13+ share: `?` placeholders (the PostgreSQL client
 * numbers them), `ON CONFLICT … DO NOTHING / DO UPDATE`, `RETURNING`, integers 0/1 for booleans and ISO 8601
 * text for times (sortable as text because every time is written by `Date.toISOString()`).
 *
 * - SQLite (`sqlite-database.ts`): the embedded default. Writes run on the caller's thread, one transaction at a
 *   time (BEGIN IMMEDIATE, queued); reads run on a read-only connection in a worker thread, so a slow dashboard
 *   query never holds the consumer's event loop (ingest, ownership renewal).
 * - PostgreSQL (`postgres-database.ts`): node-postgres pool; everything is asynchronous by nature. Transactions
 *   that lose a serialization or deadlock race (40001, 40P01) are retried whole.
 */

/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | bigint | null | Uint8Array;

/** One result row (column name → value). Integers may come back as number or (PostgreSQL bigint) string. */
export type SqlRow = Record<string, unknown>;

/** Statements that can run inside or outside a transaction. */
export interface SqlExecutor {
  readonly dialect: 'sqlite' | 'postgres';
  /** Runs a query and returns every row. */
  all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** Runs a statement; `changes` = rows inserted/updated/deleted. */
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
  /**
   * Serialises writers of one key until the transaction ends (PostgreSQL: pg_advisory_xact_lock on a hash of
   * the key). A no-op in SQLite, whose write transactions are already one at a time. Only inside transaction().
   */
  lockKey(key: string): Promise<void>;
  /** lockKey() of each key, in the order given, in one statement (PostgreSQL); a no-op in SQLite. */
  lockKeys(keys: readonly string[]): Promise<void>;
}

/** A store's database: queries, write transactions, schema migrations. */
export interface SqlDatabase extends SqlExecutor {
  /** What the database is, for logs and the CLI: a file path, or a URL without its password. */
  readonly description: string;
  /**
   * Runs `fn` in one write transaction (committed when it resolves, rolled back when it throws). PostgreSQL
   * retries the whole function on a serialization failure or deadlock; keep `fn` free of side effects outside
   * the transaction.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` once, holding the database-wide migration lock (PostgreSQL: a session advisory lock on one
   * connection; SQLite: a BEGIN IMMEDIATE transaction), so consumers that start together migrate once.
   */
  withMigrationLock<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Numbers from either driver (PostgreSQL returns bigint/numeric as strings). */
export function toNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

/** A nullable number column. */
export function toNumberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

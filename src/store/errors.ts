/** Errors the store throws. Callers branch on the class (and `full`), never on message text. */
import { errorMessage } from '../errors.ts';

/** A write (commit, ack, retry bookkeeping, dead-letter move) failed; nothing of that write was applied. */
export class StoreWriteError extends Error {
  /** True when SQLite reported SQLITE_FULL (disk or page limit full). */
  readonly full: boolean;
  /** SQLite extended error code when known. */
  readonly sqliteCode: number | undefined;
  constructor(message: string, options: { full: boolean; sqliteCode?: number; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreWriteError';
    this.full = options.full;
    this.sqliteCode = options.sqliteCode;
  }
}

/** The store cannot be opened (locked by another process, temporary disk, newer schema, wrong pragmas). */
export class StoreOpenError extends Error {
  /**
   * True when the cause is a condition of the disk that can pass without a configuration change (disk full,
   * an I/O error): openStoreWhenPossible() keeps retrying instead of failing the start.
   */
  readonly retryable: boolean;
  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreOpenError';
    this.retryable = options?.retryable ?? false;
  }
}

/** SQLite primary result codes we act on. */
export const SQLITE_CORRUPT = 11;
export const SQLITE_FULL = 13;
export const SQLITE_NOTADB = 26;
export const SQLITE_BUSY = 5;
export const SQLITE_IOERR = 10;

/** The SQLite result code carried by a node:sqlite error, if any. */
export function sqliteErrorCode(error: unknown): number | undefined {
  if (typeof error === 'object' && error !== null && 'errcode' in error) {
    const code = (error as { errcode: unknown }).errcode;
    if (typeof code === 'number') return code & 0xff;
  }
  return undefined;
}

/** Whether an error means the database file itself is damaged (quarantine it). */
export function isCorruption(error: unknown): boolean {
  const code = sqliteErrorCode(error);
  return code === SQLITE_CORRUPT || code === SQLITE_NOTADB;
}

/** Wrap a failed write as StoreWriteError with a message naming what failed. */
export function toWriteError(what: string, error: unknown): StoreWriteError {
  const code = sqliteErrorCode(error);
  const full = code === SQLITE_FULL;
  const detail = errorMessage(error);
  return new StoreWriteError(
    full
      ? `${what} failed: the disk (or database page limit) is full (${detail})`
      : `${what} failed: ${detail}`,
    { full, ...(code === undefined ? {} : { sqliteCode: code }), cause: error },
  );
}

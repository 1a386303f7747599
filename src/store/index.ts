/**
 * The store's public API: openStore() for the forwarder (locks the state directory, creates it if needed) and
 * openStoreForInspection() for CLI commands (never creates anything, takes no lock).
 */
import { resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import {
  accessProblem,
  defaultStateDir,
  describeOwnerAndMode,
  exposedDirectoryReason,
  processIdentity,
  realPathOfNearestAncestor,
  restrictDirectory,
  statePath,
  temporaryDiskReason,
} from '../platform.ts';
import {
  BUSY_TIMEOUT_MS,
  DATABASE_FILE,
  openDatabase,
  QUARANTINE_META,
  RESERVE_FILE,
  WAL_DAMAGE_META,
} from './database.ts';
import { SQLITE_FULL, SQLITE_IOERR, StoreOpenError, sqliteErrorCode } from './errors.ts';
import { acquireStateDirLock, LOCK_FILE } from './lock.ts';
import { SCHEMA_VERSION } from './schema.ts';
import { SqliteStore } from './store.ts';
import type { Store } from './types.ts';

const { existsSync, mkdirSync, statfsSync, statSync, unlinkSync } = process.getBuiltinModule('node:fs');

export { DATABASE_FILE, QUARANTINE_META, RESERVE_BYTES, RESERVE_FILE, WAL_DAMAGE_META } from './database.ts';
export { StoreOpenError, StoreWriteError } from './errors.ts';
export { LOCK_FILE } from './lock.ts';
export { SCHEMA_VERSION } from './schema.ts';
export type {
  Caps,
  CapsResult,
  DeadLetterAdmin,
  DeadLetterReason,
  DeadLetterRow,
  DiskUsage,
  MetaStore,
  Outbox,
  OutboxRow,
  SinkQueueStats,
  StateCommitter,
  Store,
  StoreInspection,
} from './types.ts';

/** Damage found when the store was opened (persisted in meta, so it is still reported after restarts). */
export interface StoreDamage {
  /** wal: committed WAL frames could not be replayed (rows lost); corrupt: the database was quarantined. */
  kind: 'wal' | 'corrupt';
  /** When it was detected (ISO 8601). */
  at: string;
  /** The damaged file, and where a copy (wal) or the file itself (corrupt) was kept. */
  file: string;
  keptAt?: string;
  detail: string;
}

/** The damage recorded in the store's meta table, for /readyz and metrics. */
export function storeDamage(store: Store): StoreDamage[] {
  const found: StoreDamage[] = [];
  const read = (key: string): Record<string, unknown> | undefined => {
    try {
      const raw = store.getMeta(key);
      return raw === undefined ? undefined : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      return undefined;
    }
  };
  const wal = read(WAL_DAMAGE_META);
  if (wal !== undefined) {
    found.push({
      kind: 'wal',
      at: String(wal.at),
      file: String(wal.wal),
      ...(typeof wal.copy === 'string' ? { keptAt: wal.copy } : {}),
      detail: `${String(wal.detail)}; at least ${String(wal.lostTransactions)} committed transaction(s) lost`,
    });
  }
  const corrupt = read(QUARANTINE_META);
  if (corrupt !== undefined) {
    found.push({
      kind: 'corrupt',
      at: String(corrupt.at),
      file: store.databasePath,
      keptAt: String(corrupt.file),
      detail: 'the database failed its integrity check and was quarantined; a fresh one was started',
    });
  }
  return found;
}

export interface OpenStoreOptions {
  /** Default: defaultStateDir() from src/platform.ts. */
  stateDir?: string;
  /** Allow a state directory on the Azure temporary disk (wiped by Redeploy/Preempt). Default false. */
  allowTemporaryDisk?: boolean;
  logger: Logger;
  platform?: NodeJS.Platform;
  /** Test hook: PRAGMA max_page_count, to force SQLITE_FULL. */
  maxPageCount?: number;
  /** Clock for created/dead-lettered timestamps (epoch ms); default Date.now. */
  now?: () => number;
  /** Test hook: the Linux temporary-disk mount points (default /mnt/resource and /mnt). */
  temporaryDiskRoots?: readonly string[];
}

/**
 * Open the forwarder's store: refuses the Azure temporary disk (real path, mount), creates the directory (0700)
 * or checks an existing one (never changes its mode; refuses one writable by other users or not usable by this
 * process, naming owner, mode and fix), takes the one-process lock, checks the WAL left by the last process
 * (a damaged one is reported and kept), opens the database (WAL + FULL asserted, integrity checked, migrated; a
 * corrupt file is quarantined and a fresh one started) and keeps a disk-full reserve file. Throws
 * StoreOpenError with a clear message when it cannot (retryable when the disk is full or failing).
 */
export function openStore(options: OpenStoreOptions): Store {
  const platform = options.platform ?? process.platform;
  const stateDir = resolveStateDir(options.stateDir, platform);
  const reason = temporaryDiskReason(
    stateDir,
    platform,
    options.temporaryDiskRoots === undefined ? {} : { roots: options.temporaryDiskRoots },
  );
  if (reason !== undefined && options.allowTemporaryDisk !== true) {
    throw new StoreOpenError(
      `refusing state directory ${stateDir}: ${reason}. Pending records and state kept there are lost exactly ` +
        'when maintenance happens. Choose a directory on the OS or a data disk, or allow it explicitly ' +
        '(allowTemporaryDisk / --allow-temporary-disk) if you accept that.',
    );
  }
  if (reason !== undefined) {
    options.logger.warn(
      { stateDir, reason },
      'state directory is on the temporary disk (explicitly allowed)',
    );
  }
  try {
    return openIn(stateDir, platform, options);
  } catch (error) {
    const disk = diskOpenError(error, stateDir);
    if (disk === undefined) throw error;
    if (!disk.full || !releaseReserveForOpen(stateDir, options.logger)) throw disk.error;
    try {
      return openIn(stateDir, platform, options);
    } catch (retryError) {
      throw diskOpenError(retryError, stateDir)?.error ?? retryError;
    }
  }
}

function openIn(stateDir: string, platform: NodeJS.Platform, options: OpenStoreOptions): Store {
  prepareStateDirectory(stateDir, platform);
  const lock = acquireStateDirLock(stateDir, platform);
  try {
    const now = options.now ?? Date.now;
    const databasePath = statePath(stateDir, DATABASE_FILE);
    const db = openDatabase(databasePath, options.logger, { platform, now });
    const store = new SqliteStore({
      db,
      stateDir,
      databasePath,
      logger: options.logger,
      now,
      lock,
      reservePath: statePath(stateDir, RESERVE_FILE),
    });
    if (options.maxPageCount !== undefined) store.setPageLimit(options.maxPageCount);
    return store;
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * A failure to open caused by the disk (full, or an I/O error) as a retryable StoreOpenError naming the disk,
 * or undefined for any other failure. SQLite reports a full disk during open as SQLITE_FULL, or as a bare
 * SQLITE_IOERR ("disk I/O error") when growing the -shm/-wal file fails: the free space decides then.
 */
function diskOpenError(
  error: unknown,
  stateDir: string,
): { error: StoreOpenError; full: boolean } | undefined {
  let sqlite: number | undefined;
  let errno: string | undefined;
  for (let e: unknown = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    sqlite ??= sqliteErrorCode(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('E') && !code.startsWith('ERR_')) errno ??= code;
    if (typeof e !== 'object') break;
  }
  const io = sqlite === SQLITE_IOERR || errno === 'EIO';
  if (sqlite !== SQLITE_FULL && errno !== 'ENOSPC' && errno !== 'EDQUOT' && !io) return undefined;
  const space = freeSpace(stateDir);
  const full = !io || (space !== undefined && space.free < NEARLY_FULL_BYTES);
  const detail = (error as Error).message;
  const where =
    space === undefined ? '' : ` (${formatBytes(space.free)} free of ${formatBytes(space.total)})`;
  const message = full
    ? `the disk holding ${stateDir} is full${where}: SQLite cannot open the state database (${detail}). Free space on that ` +
      'filesystem; the forwarder keeps running, retries opening, and starts by itself as soon as it can write.'
    : `I/O error on the disk holding ${stateDir}${where} while opening the state database (${detail}). The forwarder ` +
      'keeps retrying; check the disk (kernel log, the VM disk health).';
  return { error: new StoreOpenError(message, { cause: error, retryable: true }), full };
}

/** Below this much free space an I/O error while opening is taken for a full disk. */
const NEARLY_FULL_BYTES = 256 * 1024;

function freeSpace(dir: string): { free: number; total: number } | undefined {
  for (let p = dir; ; p = resolve(p, '..')) {
    try {
      const s = statfsSync(p);
      return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
    } catch {
      if (resolve(p, '..') === p) return undefined;
    }
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024 * 1024) return `${(n / 1024 ** 3).toFixed(1)} GiB`;
  if (n >= 1024 * 1024) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(0)} KiB`;
  return `${n} bytes`;
}

/**
 * On a full disk, the reserve file kept by the last run (docs/delivery.md) is what lets the store open: release
 * it (once) and say so. Returns whether there was one to release.
 */
function releaseReserveForOpen(stateDir: string, logger: Logger): boolean {
  const path = statePath(stateDir, RESERVE_FILE);
  try {
    unlinkSync(path);
  } catch {
    return false;
  }
  logger.error(
    { stateDir, reserveFile: path },
    'DISK FULL at startup: released the disk-full reserve file to open the state store; new records cannot be ' +
      'committed until space is freed',
  );
  return true;
}

/** Retry delays while the store cannot be opened: 1 s doubling to 15 s. */
export function storeOpenRetryDelayMs(attempt: number): number {
  return Math.min(15_000, 1000 * 2 ** Math.min(Math.max(attempt - 1, 0), 4));
}

/** At most one "still cannot open the state store" error line per this interval. */
export const STORE_OPEN_LOG_INTERVAL_MS = 30_000;

export interface OpenStoreWhenPossibleOptions extends OpenStoreOptions {
  /** Stop retrying (resolves undefined). */
  signal?: AbortSignal;
  /** Each failed attempt that will be retried (readiness: the store is not available). */
  onUnavailable?: (error: StoreOpenError, attempt: number) => void;
  /** Test hook: delay before the next attempt (default storeOpenRetryDelayMs). */
  retryDelayMs?: (attempt: number) => number;
}

/**
 * openStore(), but a failure caused by the disk (full, I/O error: StoreOpenError.retryable) does not end the
 * start: the error is logged at once and then at most every 30 s, and opening is retried with backoff until it
 * works or `signal` aborts (then resolves undefined). Every other failure (configuration, permissions, another
 * forwarder, a newer schema) throws as before.
 */
export async function openStoreWhenPossible(
  options: OpenStoreWhenPossibleOptions,
): Promise<Store | undefined> {
  const delay = options.retryDelayMs ?? storeOpenRetryDelayMs;
  const firstFailureAt = Date.now();
  let lastLogAt = Number.NEGATIVE_INFINITY;
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) return undefined;
    try {
      const store = openStore(options);
      if (attempt > 1) {
        options.logger.info(
          { stateDir: store.stateDir, attempts: attempt, waitedMs: Date.now() - firstFailureAt },
          'state store opened after waiting for the disk',
        );
      }
      return store;
    } catch (error) {
      if (!(error instanceof StoreOpenError) || !error.retryable) throw error;
      const retryInMs = delay(attempt);
      options.onUnavailable?.(error, attempt);
      if (Date.now() - lastLogAt >= STORE_OPEN_LOG_INTERVAL_MS) {
        lastLogAt = Date.now();
        options.logger.error(
          { attempts: attempt, waitingMs: Date.now() - firstFailureAt, retryInMs },
          `cannot open the state store: ${error.message}`,
        );
      }
      try {
        await sleep(retryInMs, undefined, { signal: options.signal });
      } catch {
        return undefined; // aborted
      }
    }
  }
}

/**
 * Open an existing store for CLI inspection or replay while a forwarder may be running: no lock, no
 * directory or database creation. Returns undefined when there is no database (nothing pending).
 * Writes (replay) go through SQLite's own locking with the busy timeout.
 */
export function openStoreForInspection(options: {
  stateDir?: string;
  logger: Logger;
  platform?: NodeJS.Platform;
  readOnly?: boolean;
}): Store | undefined {
  const platform = options.platform ?? process.platform;
  const stateDir = resolveStateDir(options.stateDir, platform);
  const databasePath = statePath(stateDir, DATABASE_FILE);
  if (!existsSync(databasePath)) return undefined;
  const db = new DatabaseSync(databasePath, {
    timeout: BUSY_TIMEOUT_MS,
    readOnly: options.readOnly ?? false,
  });
  try {
    const row = db.prepare('PRAGMA user_version').get() as { user_version: number };
    if (row.user_version > SCHEMA_VERSION) {
      throw new StoreOpenError(
        `the database ${databasePath} has schema version ${row.user_version}, newer than this tool supports ` +
          `(${SCHEMA_VERSION})`,
      );
    }
    if (row.user_version < SCHEMA_VERSION) {
      db.close();
      return undefined; // never written by a forwarder of this version: nothing pending we can read
    }
  } catch (error) {
    if (db.isOpen) db.close();
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(`cannot read the database ${databasePath}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return new SqliteStore({ db, stateDir, databasePath, logger: options.logger, now: Date.now });
}

/** State files the forwarder opens for writing (checked before opening, for a message that names the fix). */
const STATE_FILES = [
  DATABASE_FILE,
  `${DATABASE_FILE}-wal`,
  `${DATABASE_FILE}-shm`,
  LOCK_FILE,
  `${LOCK_FILE}-journal`,
  RESERVE_FILE,
];

/**
 * Create the state directory with mode 0700, or check an existing one: its mode is never changed (it may be
 * shared, like /tmp); one writable by other users is refused; one (or a state file in it) this process cannot
 * write is refused with the owner and mode found and the fix, instead of SQLite's bare "unable to open".
 */
function prepareStateDirectory(stateDir: string, platform: NodeJS.Platform): void {
  let created: string | undefined;
  try {
    created = mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const ancestor = nearestExistingAncestor(stateDir);
    const detail =
      (code === 'EACCES' || code === 'EPERM') && ancestor !== undefined
        ? `${ancestor} is ${describeOwnerAndMode(ancestor, platform)} and this process runs as ` +
          `${processIdentity(platform)} (${code}). Fix: create it for the service user ` +
          `(e.g. \`install -d -m 0700 -o <service user> ${stateDir}\` as root), or choose another --state-dir`
        : (error as Error).message;
    throw new StoreOpenError(`cannot create the state directory ${stateDir}: ${detail}`, { cause: error });
  }
  if (created !== undefined) {
    restrictDirectory(stateDir, platform); // ours: exactly 0700 whatever the umask allowed
  } else {
    if (!statSync(stateDir).isDirectory()) {
      throw new StoreOpenError(`the state directory ${stateDir} exists but is not a directory`);
    }
    const exposed = exposedDirectoryReason(stateDir, platform);
    if (exposed !== undefined) throw new StoreOpenError(exposed);
  }
  const problem =
    accessProblem(stateDir, 'directory', stateDir, platform) ??
    STATE_FILES.map((f) => accessProblem(statePath(stateDir, f), 'file', stateDir, platform)).find(
      (p) => p !== undefined,
    );
  if (problem !== undefined) throw new StoreOpenError(`cannot open the store: ${problem}`);
}

function nearestExistingAncestor(path: string): string | undefined {
  const real = realPathOfNearestAncestor(path);
  for (let p = real; ; ) {
    if (existsSync(p)) return p;
    const parent = resolve(p, '..');
    if (parent === p) return undefined;
    p = parent;
  }
}

function resolveStateDir(stateDir: string | undefined, platform: NodeJS.Platform): string {
  const dir = stateDir ?? defaultStateDir(platform);
  return platform === process.platform ? resolve(dir) : dir;
}

/**
 * The store's public API: openStore() for the forwarder (locks the state directory, creates it if needed) and
 * openStoreForInspection() for CLI commands (never creates anything, takes no lock).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Logger } from '../log.ts';
import { defaultStateDir, restrictDirectory, statePath, temporaryDiskReason } from '../platform.ts';
import { StoreOpenError } from './errors.ts';
import { acquireStateDirLock } from './lock.ts';
import { SCHEMA_VERSION } from './schema.ts';
import {
  BUSY_TIMEOUT_MS,
  DATABASE_FILE,
  openDatabase,
  RESERVE_FILE,
  SqliteStore,
  type Store,
} from './store.ts';

export { StoreOpenError, StoreWriteError } from './errors.ts';
export { LOCK_FILE } from './lock.ts';
export { SCHEMA_VERSION } from './schema.ts';
export type {
  Caps,
  CapsResult,
  DeadLetterReason,
  DeadLetterRow,
  DiskUsage,
  OutboxRow,
  SinkQueueStats,
  Store,
} from './store.ts';
export { DATABASE_FILE, RESERVE_BYTES, RESERVE_FILE } from './store.ts';

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
}

/**
 * Open the forwarder's store: refuses the Azure temporary disk, creates the directory (0700), takes the
 * one-process lock, opens the database (WAL + FULL asserted, integrity checked, migrated; a corrupt file is
 * quarantined and a fresh one started) and keeps a disk-full reserve file. Throws StoreOpenError with a clear
 * message when it cannot.
 */
export function openStore(options: OpenStoreOptions): Store {
  const platform = options.platform ?? process.platform;
  const stateDir = resolveStateDir(options.stateDir, platform);
  const reason = temporaryDiskReason(stateDir, platform);
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
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    restrictDirectory(stateDir, platform);
  } catch (error) {
    throw new StoreOpenError(`cannot create the state directory ${stateDir}: ${(error as Error).message}`, {
      cause: error,
    });
  }
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

function resolveStateDir(stateDir: string | undefined, platform: NodeJS.Platform): string {
  const dir = stateDir ?? defaultStateDir(platform);
  return platform === process.platform ? resolve(dir) : dir;
}

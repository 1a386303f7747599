/**
 * The store's public API: openStore() for the forwarder (locks the state directory, creates it if needed) and
 * openStoreForInspection() for CLI commands (never creates anything, takes no lock).
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
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
import { StoreOpenError } from './errors.ts';
import { acquireStateDirLock, LOCK_FILE } from './lock.ts';
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
  /** Test hook: the Linux temporary-disk mount points (default /mnt/resource and /mnt). */
  temporaryDiskRoots?: readonly string[];
}

/**
 * Open the forwarder's store: refuses the Azure temporary disk (real path, mount), creates the directory (0700)
 * or checks an existing one (never changes its mode; refuses one writable by other users or not usable by this
 * process, naming owner, mode and fix), takes the one-process lock, opens the database (WAL + FULL asserted, integrity checked, migrated; a corrupt file is
 * quarantined and a fresh one started) and keeps a disk-full reserve file. Throws StoreOpenError with a clear
 * message when it cannot.
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

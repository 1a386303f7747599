/**
 * Opening the forwarder's store (the one writer): the temporary-disk refusal, the state directory, the lock, the
 * database, and one retry after releasing the disk-full reserve.
 */
import type { Logger } from '../log.ts';
import { statePath, temporaryDiskReason } from '../platform.ts';
import { DATABASE_FILE, openDatabase, RESERVE_FILE } from './database.ts';
import { diskOpenError, releaseReserveForOpen } from './disk.ts';
import { StoreOpenError } from './errors.ts';
import { acquireStateDirLock } from './lock.ts';
import { prepareStateDirectory, resolveStateDir } from './state-dir.ts';
import { SqliteStore } from './store.ts';
import type { Store } from './types.ts';

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

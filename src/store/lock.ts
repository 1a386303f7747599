/**
 * One forwarder process per state directory. The lock is an OS-level file lock (SQLite's own locking: fcntl on
 * Linux, LockFileEx on Windows) held for the life of the process on `forwarder.lock`. The OS releases it when the
 * process dies, so a lock left by a SIGKILLed process is taken over without any stale-pid guessing. The holder's
 * pid is written next to it (forwarder.lock.pid) only to make the refusal message useful.
 */
import { DatabaseSync } from 'node:sqlite';
import { errorMessage } from '../errors.ts';
import { createPrivateFile, restrictFile, statePath } from '../platform.ts';
import { SQLITE_BUSY, StoreOpenError, sqliteErrorCode } from './errors.ts';

const { readFileSync, writeFileSync } = process.getBuiltinModule('node:fs');

export const LOCK_FILE = 'forwarder.lock';

export interface StateDirLock {
  readonly path: string;
  release(): void;
}

/** Take the state-directory lock or throw StoreOpenError naming the process that holds it. */
export function acquireStateDirLock(
  stateDir: string,
  platform: NodeJS.Platform = process.platform,
): StateDirLock {
  const path = statePath(stateDir, LOCK_FILE);
  const pidPath = `${path}.pid`;
  let db: DatabaseSync | undefined;
  try {
    // Created 0600 first: SQLite gives forwarder.lock-journal (kept while the exclusive lock is held) the mode
    // of the main file.
    createPrivateFile(path, platform);
    db = new DatabaseSync(path, { timeout: 0 });
    db.exec('PRAGMA locking_mode=EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since TEXT)');
    db.exec('COMMIT');
  } catch (error) {
    db?.close();
    if (sqliteErrorCode(error) === SQLITE_BUSY) {
      let holder = '';
      try {
        holder = ` (pid ${readFileSync(pidPath, 'utf8').trim()})`;
      } catch {
        // pid file is informational only
      }
      throw new StoreOpenError(
        `another forwarder process${holder} is already using the state directory ${stateDir}; ` +
          'run only one forwarder per state directory (or give this one a different --state-dir)',
        { cause: error },
      );
    }
    throw new StoreOpenError(`cannot create the lock file ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  try {
    writeFileSync(pidPath, `${process.pid}\n`, { mode: 0o600 });
    restrictFile(pidPath, platform);
  } catch {
    // informational only
  }
  const held = db;
  return {
    path,
    release: () => {
      if (held.isOpen) held.close();
    },
  };
}

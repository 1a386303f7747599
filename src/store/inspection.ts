/** Opening an existing store for the CLI (inspection, dead-letter replay) beside a running forwarder. */
import { DatabaseSync } from 'node:sqlite';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { describeOwnerAndMode, processIdentity, readAccessProblem, statePath } from '../platform.ts';
import { BUSY_TIMEOUT_MS, DATABASE_FILE } from './database.ts';
import { StoreOpenError } from './errors.ts';
import { SCHEMA_VERSION } from './schema.ts';
import { resolveStateDir } from './state-dir.ts';
import { SqliteStore } from './store.ts';
import type { Store } from './types.ts';

const { existsSync } = process.getBuiltinModule('node:fs');

/**
 * Open an existing store for CLI inspection or replay while a forwarder may be running: no lock, no
 * directory or database creation. Returns undefined when there is no database (nothing pending). A state
 * directory or database that exists but that this process cannot read (or, for replay, write) is a
 * StoreOpenError naming the path, the owner and mode found and the fix — never "nothing pending".
 * Writes (replay) go through SQLite's own locking with the busy timeout.
 */
export function openStoreForInspection(options: {
  stateDir?: string;
  logger: Logger;
  platform?: NodeJS.Platform;
  readOnly?: boolean;
  /** The CLI command, for the fix in messages ("outbox status"). */
  command?: string;
}): Store | undefined {
  const platform = options.platform ?? process.platform;
  const stateDir = resolveStateDir(options.stateDir, platform);
  const databasePath = statePath(stateDir, DATABASE_FILE);
  const readOnly = options.readOnly ?? false;
  const access = {
    platform,
    write: !readOnly,
    ...(options.command === undefined ? {} : { command: options.command }),
  };
  const dirProblem = readAccessProblem(stateDir, 'directory', { ...access, write: false });
  if (dirProblem !== undefined) throw new StoreOpenError(dirProblem);
  if (!existsSync(databasePath)) return undefined;
  for (const path of [databasePath, `${databasePath}-wal`, `${databasePath}-shm`]) {
    const problem = readAccessProblem(path, 'file', access);
    if (problem !== undefined) throw new StoreOpenError(problem);
  }
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(databasePath, { timeout: BUSY_TIMEOUT_MS, readOnly });
  } catch (error) {
    throw new StoreOpenError(
      `cannot open the state database ${databasePath} (${describeOwnerAndMode(databasePath, platform)}; this ` +
        `command runs as ${processIdentity(platform)}): ${errorMessage(error)}. Run the command as the user ` +
        'the forwarder runs as (or root / an administrator).',
      { cause: error },
    );
  }
  try {
    const row = db.prepare('PRAGMA user_version').get() as { user_version: number };
    if (row.user_version > SCHEMA_VERSION) {
      throw new StoreOpenError(
        `the database ${databasePath} has schema version ${row.user_version}, newer than this tool supports ` +
          `(${SCHEMA_VERSION})`,
      );
    }
    if (row.user_version === 0) {
      db.close();
      return undefined; // never set up by a forwarder: nothing pending
    }
    // An older schema (a forwarder not restarted since an upgrade) is read as it is: the migrations since
    // version 1 only add indexes (src/store/schema.ts), so this build's queries work on it unchanged.
  } catch (error) {
    if (db.isOpen) db.close();
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(
      `cannot read the state database ${databasePath} (${describeOwnerAndMode(databasePath, platform)}; this ` +
        `command runs as ${processIdentity(platform)}): ${errorMessage(error)}`,
      { cause: error },
    );
  }
  return new SqliteStore({ db, stateDir, databasePath, logger: options.logger, now: Date.now });
}

/**
 * Opening the SQLite file: WAL + synchronous=FULL asserted, busy timeout, integrity check, migrations, and
 * quarantine of a damaged database or WAL (kept, never deleted). See docs/delivery.md.
 */
import { DatabaseSync } from 'node:sqlite';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { createPrivateFile, restrictFile } from '../platform.ts';
import { isCorruption, StoreOpenError } from './errors.ts';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.ts';
import { inspectWal, type WalInspection } from './wal-check.ts';

const { copyFileSync, existsSync, renameSync, rmSync } = process.getBuiltinModule('node:fs');

export const DATABASE_FILE = 'forwarder.db';
export const RESERVE_FILE = 'disk-reserve.bin';
/** Released on SQLITE_FULL so acks, dead-letter moves and checkpoints can still run (delivery-reliability §8.8). */
export const RESERVE_BYTES = 4 * 1024 * 1024;
export const BUSY_TIMEOUT_MS = 5000;
const JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024;
export const UNLIMITED_PAGES = 4294967294;
export const RESERVE_RETRY_MS = 30_000;

/**
 * Open (creating if needed) and verify the database: WAL + FULL asserted, busy timeout, integrity check,
 * migrations. A damaged file is quarantined to `<name>.corrupt-<timestamp>` and a fresh database started.
 */
export function openDatabase(
  databasePath: string,
  logger: Logger,
  options: { platform?: NodeJS.Platform; now: () => number },
): DatabaseSync {
  // Before SQLite opens (and resets) a damaged WAL: see what it will drop, say so, keep a copy.
  const walDamage = detectWalDamage(databasePath, logger, options.now(), options.platform);
  const db = openOrQuarantine(databasePath, logger, options);
  if (walDamage !== undefined) {
    try {
      db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(
        WAL_DAMAGE_META,
        JSON.stringify(walDamage),
      );
    } catch (error) {
      logger.error({ err: error }, `could not record meta key ${WAL_DAMAGE_META} (the error above stands)`);
    }
  }
  return db;
}

/** Meta key: the last damaged WAL found at open (JSON: at, wal, copy, detail, lostTransactions, lostFrames). */
export const WAL_DAMAGE_META = 'store.lastWalDamage';
/** Meta key: the last corrupt database quarantined at open (JSON: at, file). */
export const QUARANTINE_META = 'store.lastQuarantine';

function openOrQuarantine(
  databasePath: string,
  logger: Logger,
  options: { platform?: NodeJS.Platform; now: () => number },
): DatabaseSync {
  try {
    return openVerified(databasePath, options.platform);
  } catch (error) {
    if (!(error instanceof CorruptDatabaseError) && !isCorruption(error)) throw error;
    const quarantined = quarantine(databasePath, options.now());
    logger.error(
      { err: error, quarantinedTo: quarantined, databasePath },
      'STATE DATABASE IS CORRUPT: moved it aside (kept, never deleted) and started a fresh database. ' +
        'Records still pending in the old file were NOT delivered; inspect the quarantined file to recover them.',
    );
    const db = openVerified(databasePath, options.platform);
    db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(
      QUARANTINE_META,
      JSON.stringify({ at: new Date(options.now()).toISOString(), file: quarantined }),
    );
    return db;
  }
}

/**
 * Inspect the WAL left by the last process (src/store/wal-check.ts). When committed frames will not be replayed:
 * copy the database, WAL and WAL index as found (forensics, manual recovery), log loudly, and return what to
 * record under WAL_DAMAGE_META.
 */
function detectWalDamage(
  databasePath: string,
  logger: Logger,
  nowMs: number,
  platform: NodeJS.Platform | undefined,
): Record<string, unknown> | undefined {
  let inspection: WalInspection;
  try {
    inspection = inspectWal(databasePath);
    // Confirm: a CLI writer (deadletters replay) running at this very moment could race the first look.
    if (inspection.damage !== undefined) inspection = inspectWal(databasePath);
  } catch (error) {
    logger.warn(
      { err: error, databasePath },
      'could not inspect the WAL before opening the database; continuing',
    );
    return undefined;
  }
  const damage = inspection.damage;
  if (damage === undefined) return undefined;
  const stamp = new Date(nowMs).toISOString().replace(/[:.]/g, '-');
  let copy = `${databasePath}.damaged-wal-${stamp}`;
  for (let n = 1; existsSync(copy); n++) copy = `${databasePath}.damaged-wal-${stamp}-${n}`;
  let copyError: string | undefined;
  const copied: string[] = [];
  try {
    for (const suffix of ['', '-wal', '-shm']) {
      if (!existsSync(databasePath + suffix)) continue;
      copyFileSync(databasePath + suffix, copy + suffix);
      copied.push(copy + suffix);
      restrictFile(copy + suffix, platform);
    }
  } catch (error) {
    copyError = errorMessage(error);
    for (const path of copied) rmSync(path, { force: true });
  }
  const report = {
    at: new Date(nowMs).toISOString(),
    wal: inspection.walPath,
    ...(copyError === undefined ? { copy } : { copyError }),
    detail: damage.detail,
    lostTransactions: damage.lostTransactions,
    lostFrames: damage.lostFrames,
  };
  logger.error(
    report,
    `STATE DATABASE WAL IS DAMAGED: ${inspection.walPath}: ${damage.detail}. At least ${damage.lostTransactions} ` +
      `committed transaction(s) (${damage.lostFrames} frames) cannot be replayed: the state and outbox rows they ` +
      'held are LOST (transitions still visible in IMDS are recorded again; records of those already gone are not). ' +
      (copyError === undefined
        ? `The database, WAL and WAL index as found are kept at ${copy}{,-wal,-shm} for forensics.`
        : `Could not keep a copy of the damaged files (${copyError}).`),
  );
  return report;
}

class CorruptDatabaseError extends Error {}

function openVerified(databasePath: string, platform: NodeJS.Platform | undefined): DatabaseSync {
  createPrivateFile(databasePath, platform);
  const db = new DatabaseSync(databasePath, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.exec(`PRAGMA busy_timeout=${BUSY_TIMEOUT_MS}`);
    db.exec('PRAGMA auto_vacuum=INCREMENTAL'); // only takes effect on a new, empty database
    const mode = pragma(db, 'journal_mode=WAL');
    if (String(mode).toLowerCase() !== 'wal') {
      throw new StoreOpenError(`SQLite refused journal_mode=WAL (got "${String(mode)}") for ${databasePath}`);
    }
    db.exec('PRAGMA synchronous=FULL');
    const sync = pragma(db, 'synchronous');
    if (sync !== 2) throw new StoreOpenError(`SQLite refused synchronous=FULL (got ${String(sync)})`);
    const busy = pragma(db, 'busy_timeout');
    if (typeof busy !== 'number' || busy < BUSY_TIMEOUT_MS) {
      throw new StoreOpenError(
        `SQLite busy_timeout is ${String(busy)}, expected at least ${BUSY_TIMEOUT_MS}`,
      );
    }
    db.exec(`PRAGMA journal_size_limit=${JOURNAL_SIZE_LIMIT}`);
    const integrity = runIntegrityCheck(db);
    if (integrity !== 'ok') throw new CorruptDatabaseError(`integrity_check failed: ${integrity}`);
    migrate(db, databasePath);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function pragma(db: DatabaseSync, text: string): unknown {
  const row = db.prepare(`PRAGMA ${text}`).get() as Record<string, unknown> | undefined;
  return row === undefined ? undefined : Object.values(row)[0];
}

export function runIntegrityCheck(db: DatabaseSync): string {
  const rows = db.prepare('PRAGMA integrity_check').all() as Array<Record<string, unknown>>;
  return rows.map((r) => String(Object.values(r)[0])).join('; ');
}

function newerSchemaMessage(databasePath: string, version: number): string {
  return (
    `the database ${databasePath} has schema version ${version}, newer than this forwarder supports ` +
    `(${SCHEMA_VERSION}); run the forwarder version that wrote it, or a newer one`
  );
}

/**
 * Why this forwarder would refuse the existing database at `databasePath`: a schema newer than it supports (a
 * downgrade). Read-only and lock-free, beside a running forwarder; undefined when there is no database, it is
 * fine, or this process cannot read it (the start itself then says why). One of `run`'s start checks
 * (src/pipeline/start-checks.ts), so `config validate` refuses the same.
 */
export function newerSchemaProblem(databasePath: string): string | undefined {
  if (!existsSync(databasePath)) return undefined;
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(databasePath, { readOnly: true, timeout: BUSY_TIMEOUT_MS });
    const version = pragma(db, 'user_version') as number;
    return version > SCHEMA_VERSION ? newerSchemaMessage(databasePath, version) : undefined;
  } catch {
    return undefined;
  } finally {
    db?.close();
  }
}

function migrate(db: DatabaseSync, databasePath: string): void {
  const version = pragma(db, 'user_version') as number;
  if (version > SCHEMA_VERSION) throw new StoreOpenError(newerSchemaMessage(databasePath, version));
  for (let v = version; v < SCHEMA_VERSION; v++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(MIGRATIONS[v] as string);
      db.exec(`PRAGMA user_version=${v + 1}`);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
}

/** Move the database and its WAL/SHM aside; returns the new main-file path. Nothing is deleted. */
function quarantine(databasePath: string, nowMs: number): string {
  const stamp = new Date(nowMs).toISOString().replace(/[:.]/g, '-');
  let target = `${databasePath}.corrupt-${stamp}`;
  for (let n = 1; existsSync(target); n++) target = `${databasePath}.corrupt-${stamp}-${n}`;
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(databasePath + suffix)) renameSync(databasePath + suffix, target + suffix);
  }
  return target;
}

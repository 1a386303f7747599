/** Opening the store on a full or failing disk: the retryable error naming the disk, and the disk-full reserve. */
import { resolve } from 'node:path';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { statePath } from '../platform.ts';
import { RESERVE_FILE } from './database.ts';
import { SQLITE_FULL, SQLITE_IOERR, StoreOpenError, sqliteErrorCode } from './errors.ts';

const { statfsSync, unlinkSync } = process.getBuiltinModule('node:fs');

/**
 * A failure to open caused by the disk (full, or an I/O error) as a retryable StoreOpenError naming the disk,
 * or undefined for any other failure. SQLite reports a full disk during open as SQLITE_FULL, or as a bare
 * SQLITE_IOERR ("disk I/O error") when growing the -shm/-wal file fails: the free space decides then.
 */
export function diskOpenError(
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
  const detail = errorMessage(error);
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
export function releaseReserveForOpen(stateDir: string, logger: Logger): boolean {
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

/** The state directory: where it is, and creating or checking it before the store opens. */
import { resolve } from 'node:path';
import { errorMessage } from '../errors.ts';
import {
  accessProblem,
  defaultStateDir,
  describeOwnerAndMode,
  exposedDirectoryReason,
  processIdentity,
  realPathOfNearestAncestor,
  restrictDirectory,
  statePath,
} from '../platform.ts';
import { DATABASE_FILE, newerSchemaProblem, RESERVE_FILE } from './database.ts';
import { StoreOpenError } from './errors.ts';
import { LOCK_FILE } from './lock.ts';

const { existsSync, mkdirSync, statSync } = process.getBuiltinModule('node:fs');

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
 * Why the forwarder would refuse `stateDir` as it is now, whichever user asks (no lock, nothing created): a path
 * that exists but is not a directory (or runs through a file), or an existing directory other users can write
 * to. Undefined when the directory is fine or does not exist yet (the forwarder creates it). One of `run`'s start
 * checks (src/pipeline/start-checks.ts), so `config validate` refuses the same; prepareStateDirectory throws it.
 */
export function existingStateDirProblem(stateDir: string, platform: NodeJS.Platform): string | undefined {
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(stateDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') {
      return `the state directory ${stateDir} cannot be created: a part of its path is a file, not a directory. Choose another stateDir (--state-dir)`;
    }
    return undefined; // ENOENT: created at start; anything else: mkdir names it with the owner and mode
  }
  if (!stats.isDirectory()) {
    return `the state directory ${stateDir} exists but is not a directory: remove it, or choose another stateDir (--state-dir)`;
  }
  return exposedDirectoryReason(stateDir, platform);
}

/**
 * Create the state directory with mode 0700, or check an existing one: its mode is never changed (it may be
 * shared, like /tmp); one writable by other users is refused; one (or a state file in it) this process cannot
 * write is refused with the owner and mode found and the fix, instead of SQLite's bare "unable to open".
 */
export function prepareStateDirectory(stateDir: string, platform: NodeJS.Platform): void {
  const existing = existingStateDirProblem(stateDir, platform);
  if (existing !== undefined) throw new StoreOpenError(existing);
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
        : errorMessage(error);
    throw new StoreOpenError(`cannot create the state directory ${stateDir}: ${detail}`, { cause: error });
  }
  if (created !== undefined) restrictDirectory(stateDir, platform); // ours: exactly 0700 whatever the umask allowed
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

/** The state directory to use: the given one (resolved) or the platform default. */
export function resolveStateDir(stateDir: string | undefined, platform: NodeJS.Platform): string {
  const dir = stateDir ?? defaultStateDir(platform);
  return platform === process.platform ? resolve(dir) : dir;
}

/**
 * What `run` would refuse about its state directory before its first poll, checked without opening or creating
 * anything (see existingStateDirProblem and newerSchemaProblem; the temporary disk is the config schema's check).
 * Not checked, because they depend on who asks and when: whether this user may write there, and the lock a
 * running forwarder holds.
 */
export function stateDirStartProblems(
  stateDir: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string[] {
  const dir = resolveStateDir(stateDir, platform);
  const problem = existingStateDirProblem(dir, platform) ?? newerSchemaProblem(statePath(dir, DATABASE_FILE));
  return problem === undefined ? [] : [problem];
}

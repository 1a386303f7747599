/** The state directory: where it is, and creating or checking it before the store opens. */
import { resolve } from 'node:path';
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
import { DATABASE_FILE, RESERVE_FILE } from './database.ts';
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
 * Create the state directory with mode 0700, or check an existing one: its mode is never changed (it may be
 * shared, like /tmp); one writable by other users is refused; one (or a state file in it) this process cannot
 * write is refused with the owner and mode found and the fix, instead of SQLite's bare "unable to open".
 */
export function prepareStateDirectory(stateDir: string, platform: NodeJS.Platform): void {
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

/** The state directory to use: the given one (resolved) or the platform default. */
export function resolveStateDir(stateDir: string | undefined, platform: NodeJS.Platform): string {
  const dir = stateDir ?? defaultStateDir(platform);
  return platform === process.platform ? resolve(dir) : dir;
}

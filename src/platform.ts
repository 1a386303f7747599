/**
 * Everything that differs between Linux and Windows lives here: default paths, temporary-disk detection,
 * file permissions, shutdown and reload signals and ending process trees. Core code asks this module instead of testing
 * process.platform.
 */
import { spawn } from 'node:child_process';
import type { Stats } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, join, posix, resolve, win32 } from 'node:path';
import { errorMessage } from './errors.ts';

const {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readFileSync,
  realpathSync,
  statSync,
} = process.getBuiltinModule('node:fs');

export type PlatformName = 'linux' | 'windows' | 'other';

export function currentPlatform(platform: NodeJS.Platform = process.platform): PlatformName {
  if (platform === 'win32') return 'windows';
  if (platform === 'linux') return 'linux';
  return 'other';
}

/** Default state directory: /var/lib/scheduled-events-forwarder or %ProgramData%\scheduled-events-forwarder. */
export function defaultStateDir(
  platform: NodeJS.Platform = process.platform,
  env: Record<string, string | undefined> = process.env,
): string {
  if (currentPlatform(platform) === 'windows') {
    const programData = env.ProgramData ?? env.PROGRAMDATA ?? 'C:\\ProgramData';
    return win32.join(programData, 'scheduled-events-forwarder');
  }
  return posix.join('/var/lib', 'scheduled-events-forwarder');
}

/** Where Azure mounts the temporary (resource) disk on Linux images. */
export const LINUX_TEMPORARY_DISK_ROOTS: readonly string[] = ['/mnt/resource', '/mnt'];

export interface TemporaryDiskOptions {
  /** Test hook: the Linux temporary-disk mount points (default LINUX_TEMPORARY_DISK_ROOTS). */
  roots?: readonly string[];
  /** Test hook: the text of /proc/self/mountinfo (default: read it on Linux). */
  mountInfo?: string;
}

/**
 * Azure's temporary (resource) disk is wiped by Redeploy and Preempt: state kept there is lost exactly when it
 * matters. Returns a reason string when `dir` is on it, undefined otherwise.
 *
 * On this host's own platform the real path is checked, not only the text: symlinks (and Windows junctions) are
 * resolved on the nearest existing ancestor of `dir` (it may not exist yet). On Linux the mount holding that
 * real path is looked up in /proc/self/mountinfo as well: a directory on the same filesystem as a mount at one
 * of the roots (a bind mount of /mnt/… somewhere else) is on the temporary disk too.
 */
export function temporaryDiskReason(
  dir: string,
  platform: NodeJS.Platform = process.platform,
  options: TemporaryDiskOptions = {},
): string | undefined {
  const onThisHost = platform === process.platform;
  if (currentPlatform(platform) === 'windows') {
    const abs = win32.resolve(dir);
    const real = onThisHost ? realPathOfNearestAncestor(abs) : abs;
    for (const candidate of new Set([abs, real])) {
      if (win32.parse(candidate).root.toUpperCase().startsWith('D:')) {
        return `${describeResolution(abs, candidate)}D:\\ is the Azure temporary disk on Windows VMs (wiped by Redeploy and Preempt)`;
      }
    }
    return undefined;
  }
  const roots = options.roots ?? LINUX_TEMPORARY_DISK_ROOTS;
  const abs = posix.resolve(dir);
  const real = onThisHost ? realPathOfNearestAncestor(abs) : abs;
  for (const candidate of new Set([abs, real])) {
    for (const root of roots) {
      if (candidate === root || candidate.startsWith(`${root}/`)) {
        return `${describeResolution(abs, candidate)}${root} is the Azure temporary disk on Linux images (wiped by Redeploy and Preempt)`;
      }
    }
  }
  if (currentPlatform(platform) !== 'linux' || (!onThisHost && options.mountInfo === undefined))
    return undefined;
  const mounts = parseMountInfo(options.mountInfo ?? readMountInfo());
  const holder = mountHolding(mounts, real);
  if (holder === undefined) return undefined;
  const tempMount = mounts.find((m) => roots.includes(m.mountPoint) && m.device === holder.device);
  if (tempMount === undefined) return undefined;
  return (
    `${dir} is on the filesystem mounted at ${holder.mountPoint}, the same device (${holder.device}, ` +
    `${holder.source}) as ${tempMount.mountPoint}: ${tempMount.mountPoint} is the Azure temporary disk on Linux ` +
    'images (wiped by Redeploy and Preempt)'
  );
}

function describeResolution(abs: string, real: string): string {
  return abs === real ? '' : `${abs} resolves to ${real}; `;
}

/** The real path of `path`, resolving symlinks of its nearest existing ancestor (the rest is appended as is). */
export function realPathOfNearestAncestor(path: string): string {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(realpathSync.native(current), ...missing.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
}

interface MountEntry {
  mountPoint: string;
  /** major:minor of the filesystem (bind mounts of one filesystem share it). */
  device: string;
  source: string;
}

function readMountInfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/** Parses /proc/self/mountinfo (proc(5)): field 3 is major:minor, field 5 the mount point, after "-" the source. */
function parseMountInfo(text: string): MountEntry[] {
  const decodeOctal = (s: string) =>
    s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (fields.length < 6 || dash < 0) continue;
    entries.push({
      device: fields[2] as string,
      mountPoint: decodeOctal(fields[4] as string),
      source: decodeOctal(fields[dash + 2] ?? ''),
    });
  }
  return entries;
}

/** The mount holding `path`: the longest mount point that is `path` or an ancestor (the last one mounted wins). */
function mountHolding(mounts: MountEntry[], path: string): MountEntry | undefined {
  let best: MountEntry | undefined;
  for (const m of mounts) {
    const covers = m.mountPoint === '/' || path === m.mountPoint || path.startsWith(`${m.mountPoint}/`);
    if (covers && (best === undefined || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

/** Restrict a directory to its owner (0700). On Windows, ACLs are set by the installer; this is a no-op. */
export function restrictDirectory(dir: string, platform: NodeJS.Platform = process.platform): void {
  if (currentPlatform(platform) !== 'windows') chmodSync(dir, 0o700);
}

/** Restrict a file to its owner (0600). No-op on Windows (installer ACLs). */
export function restrictFile(file: string, platform: NodeJS.Platform = process.platform): void {
  if (currentPlatform(platform) !== 'windows') chmodSync(file, 0o600);
}

/** The effective uid of this process; undefined on Windows. */
function effectiveUid(): number | undefined {
  return typeof process.geteuid === 'function' ? process.geteuid() : undefined;
}

/** "uid 0 (root)" for messages; the name comes from /etc/passwd when it is there. */
function describeUid(uid: number): string {
  let name: string | undefined;
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [user, , id] = line.split(':');
      if (id === String(uid)) {
        name = user;
        break;
      }
    }
  } catch {
    // names are informational only
  }
  return name === undefined ? `uid ${uid}` : `uid ${uid} (${name})`;
}

/** The user this process runs as, for messages: "uid 65534 (nobody)" (Windows: the account name). */
export function processIdentity(platform: NodeJS.Platform = process.platform): string {
  const uid = effectiveUid();
  if (currentPlatform(platform) === 'windows' || uid === undefined) {
    try {
      return `account ${userInfo().username}`;
    } catch {
      return 'this account';
    }
  }
  return describeUid(uid);
}

/** How an existing path is owned and protected, for messages: "owned by uid 0 (root), mode 0700". */
export function describeOwnerAndMode(path: string, platform: NodeJS.Platform = process.platform): string {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (error) {
    return `cannot be examined (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`;
  }
  if (currentPlatform(platform) === 'windows') return 'protected by its ACL (see icacls)';
  return `owned by ${describeUid(stats.uid)}, mode ${formatMode(stats.mode)}`;
}

function formatMode(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/**
 * Why an existing state directory (one the forwarder did not create) must not be used: it is writable by other
 * users (group or other write bit, sticky or not), so they could replace or pre-create the outbox files.
 * Undefined when it is fine. Windows: always undefined (access is an ACL the installer sets; docs/install.md).
 */
export function exposedDirectoryReason(
  dir: string,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (currentPlatform(platform) === 'windows') return undefined;
  const stats = statSync(dir);
  if ((stats.mode & 0o022) === 0) return undefined;
  return (
    `refusing state directory ${dir}: it is writable by other users (${describeOwnerAndMode(dir, platform)}), ` +
    'so they could replace or read the outbox. The forwarder never changes the mode of a directory it did not ' +
    `create. Fix: point --state-dir (stateDir) at a new subdirectory, e.g. ${posix.join(dir, 'scheduled-events-forwarder')}, ` +
    `which the forwarder creates with mode 0700; or, if ${dir} belongs to the forwarder alone, run \`chmod go-w ${dir}\` ` +
    '(0700 recommended).'
  );
}

/**
 * Why this process cannot use an existing state directory or state file, or undefined: it is not writable here,
 * or (POSIX) a file belongs to another user so it cannot be kept at mode 0600. The message names the path, the
 * owner and mode found, the user this process runs as, and the fix.
 */
export function accessProblem(
  path: string,
  kind: 'directory' | 'file',
  stateDir: string,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const windows = currentPlatform(platform) === 'windows';
  let code: string | undefined;
  try {
    accessSync(
      path,
      kind === 'directory' ? constants.W_OK | constants.X_OK : constants.R_OK | constants.W_OK,
    );
  } catch (error) {
    code = (error as NodeJS.ErrnoException).code ?? 'EACCES';
  }
  if (code === 'ENOENT') return undefined;
  const uid = effectiveUid();
  // A file of ours (or any file, for root) is made 0600, hence writable, when it is opened: only a file of
  // another user is a problem (it cannot be restricted, nor written once it is).
  const ours = !windows && uid !== undefined && (uid === 0 || statSync(path).uid === uid);
  if (kind === 'file' && ours && code !== 'EROFS') return undefined;
  const foreignOwner = !windows && kind === 'file' && !ours;
  if (code === undefined && !foreignOwner) return undefined;
  const what = kind === 'directory' ? 'state directory' : 'state file';
  const found = `${what} ${path} is ${describeOwnerAndMode(path, platform)}`;
  const me = processIdentity(platform);
  if (code === 'EROFS') {
    return `the ${found}, on a filesystem mounted read-only. Fix: choose a --state-dir on a writable disk.`;
  }
  const problem =
    code === undefined
      ? `and this process runs as ${me}: it can write the file but cannot keep it private (mode 0600)`
      : `and this process runs as ${me}, which cannot ${kind === 'directory' ? 'create files in it' : 'write it'} (${code})`;
  const fix = windows
    ? `Fix: grant ${me} Modify rights (icacls "${stateDir}" /grant "<account>:(OI)(CI)M"), or choose another --state-dir.`
    : `Fix: give the state directory to the service user (\`chown -R ${uid ?? '<user>'} ${stateDir}\` and ` +
      `\`chmod 700 ${stateDir}\`), run the forwarder as the owner, or choose another --state-dir. Under systemd, ` +
      'StateDirectory= (as in the shipped unit) hands the directory to the service user.';
  return `the ${found}, ${problem}. ${fix}`;
}

/**
 * Why this process cannot READ an existing state directory or state file (the CLI's store commands), or
 * undefined when it can or when `path` does not exist. `write` also asks for write access (`deadletters
 * replay`). The message names the path, the owner and mode found (Windows: its ACL), the user this process
 * runs as, the error, and the fix: run the command as the service user or root / an administrator.
 */
export function readAccessProblem(
  path: string,
  kind: 'directory' | 'file',
  options: { write?: boolean; platform?: NodeJS.Platform; command?: string } = {},
): string | undefined {
  const platform = options.platform ?? process.platform;
  const command = `scheduled-events-forwarder ${options.command ?? '<command>'}`;
  const windows = currentPlatform(platform) === 'windows';
  let code: string | undefined;
  try {
    statSync(path);
    const read = kind === 'directory' ? constants.R_OK | constants.X_OK : constants.R_OK;
    accessSync(path, options.write === true ? read | constants.W_OK : read);
  } catch (error) {
    code = (error as NodeJS.ErrnoException).code ?? 'EACCES';
  }
  if (code === undefined || code === 'ENOENT' || code === 'ENOTDIR') return undefined;
  const what = kind === 'directory' ? 'state directory' : 'state database';
  const me = processIdentity(platform);
  // A path whose parent cannot be searched cannot even be examined: name the nearest ancestor that can be.
  let shown = path;
  let found = describeOwnerAndMode(path, platform);
  for (let p = dirname(path); found.startsWith('cannot be examined') && p !== dirname(p); p = dirname(p)) {
    shown = p;
    found = describeOwnerAndMode(p, platform);
  }
  const where = shown === path ? `is ${found}` : `cannot be reached: ${shown} is ${found}`;
  const needs = options.write === true ? 'read and write' : 'read';
  const fix = windows
    ? `Fix: run the command from an elevated prompt (Run as administrator) or as the service account, or grant ${me} ` +
      `${options.write === true ? 'Modify' : 'Read'} rights (icacls).`
    : `Fix: run the command as root or as the service user, e.g. \`sudo ${command} ...\` or ` +
      `\`sudo -u <service user> ${command} ...\`.`;
  return (
    `cannot ${needs} the ${what} ${path}: it ${where}, and this command runs as ${me} (${code}). What is ` +
    `pending there is unknown, not "nothing pending". ${fix}`
  );
}

/**
 * Create a file with owner-only permissions (0600) if it does not exist, and restrict it if it does, so that
 * SQLite (which gives its journal, WAL and shm files the mode of the main file) never creates anything
 * world-readable. Windows: ACLs from the installer.
 */
export function createPrivateFile(path: string, platform: NodeJS.Platform = process.platform): void {
  if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  restrictFile(path, platform);
}

/** Signals that mean "shut down gracefully". Windows delivers SIGINT (Ctrl-C) and SIGBREAK; services get SIGINT from the wrapper. */
export function shutdownSignals(platform: NodeJS.Platform = process.platform): NodeJS.Signals[] {
  return currentPlatform(platform) === 'windows' ? ['SIGINT', 'SIGBREAK'] : ['SIGTERM', 'SIGINT'];
}

/**
 * The signal that reloads `run`'s configuration: SIGHUP where POSIX delivers it (`systemctl reload`,
 * `kill -HUP`). Windows has no such signal for a service: restart the service instead (docs/install.md).
 */
export function reloadSignal(platform: NodeJS.Platform = process.platform): NodeJS.Signals | undefined {
  return currentPlatform(platform) === 'windows' ? undefined : 'SIGHUP';
}

/** Join paths with the host's separator (core code never concatenates with '/'). */
export function statePath(stateDir: string, ...parts: string[]): string {
  return join(resolve(stateDir), ...parts);
}

/**
 * Whether a child process gets its own process group (POSIX), so killProcessTree can signal the whole tree.
 * Windows has no process groups for this; taskkill /T walks the tree instead.
 */
export function spawnsOwnProcessGroup(platform: NodeJS.Platform = process.platform): boolean {
  return currentPlatform(platform) !== 'windows';
}

/**
 * End a child process and its descendants: politely first (SIGTERM to the process group; taskkill /T on
 * Windows), forcefully when `hard` (SIGKILL; taskkill /T /F). A process that is already gone is ignored.
 */
export function killProcessTree(
  pid: number | undefined,
  hard: boolean,
  platform: NodeJS.Platform = process.platform,
): void {
  if (pid === undefined) return;
  try {
    if (currentPlatform(platform) === 'windows') {
      const args = ['/pid', String(pid), '/T', ...(hard ? ['/F'] : [])];
      spawn('taskkill', args, { stdio: 'ignore', windowsHide: true }).on('error', () => {});
    } else {
      process.kill(-pid, hard ? 'SIGKILL' : 'SIGTERM');
    }
  } catch {
    // already gone
  }
}

/**
 * The variables a child process (exec sink, approval hook) gets from the forwarder's environment by default:
 * what programs need to run (search path, home, locale, time zone, temporary directory) and nothing else, so
 * that secrets in the service environment (secrets.env: webhook URLs, AZURE_CLIENT_SECRET, ...) never reach a
 * command. `NAME*` is a prefix. Windows names are matched case-insensitively (its environment is).
 */
export function childEnvironmentBaseNames(platform: NodeJS.Platform = process.platform): readonly string[] {
  const common = ['PATH', 'LANG', 'LANGUAGE', 'LC_*', 'TZ'];
  if (currentPlatform(platform) === 'windows') {
    return [
      ...common,
      'PATHEXT',
      'SYSTEMROOT',
      'SYSTEMDRIVE',
      'WINDIR',
      'COMSPEC',
      'TEMP',
      'TMP',
      'USERPROFILE',
      'USERNAME',
      'USERDOMAIN',
      'HOMEDRIVE',
      'HOMEPATH',
      'APPDATA',
      'LOCALAPPDATA',
      'PROGRAMDATA',
      'ALLUSERSPROFILE',
      'PUBLIC',
      'PROGRAMFILES',
      'PROGRAMFILES(X86)',
      'PROGRAMW6432',
      'COMMONPROGRAMFILES',
      'COMMONPROGRAMFILES(X86)',
      'COMMONPROGRAMW6432',
      'COMPUTERNAME',
      'NUMBER_OF_PROCESSORS',
      'PROCESSOR_ARCHITECTURE',
      'PROCESSOR_IDENTIFIER',
      'OS',
      'PSMODULEPATH',
    ];
  }
  return [...common, 'HOME', 'USER', 'LOGNAME', 'TMPDIR'];
}

/** Whether variable `name` matches a pattern (`NAME` or `PREFIX*`; case-insensitive on Windows). */
function envNameMatches(name: string, pattern: string, windows: boolean): boolean {
  const n = windows ? name.toUpperCase() : name;
  const p = windows ? pattern.toUpperCase() : pattern;
  return p.endsWith('*') ? n.startsWith(p.slice(0, -1)) : n === p;
}

/**
 * The environment for a child process: the variables of `parent` named by childEnvironmentBaseNames or by
 * `pass` (`NAME` or `PREFIX*`), then `set` over them. On Windows a `set` name replaces an inherited variable
 * whatever its case (Path / PATH), so the child never sees two spellings of one variable.
 */
export function childEnvironment(
  options: {
    parent?: Record<string, string | undefined>;
    pass?: readonly string[];
    set?: Record<string, string>;
  },
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  const windows = currentPlatform(platform) === 'windows';
  const patterns = [...childEnvironmentBaseNames(platform), ...(options.pass ?? [])];
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.parent ?? process.env)) {
    if (value === undefined) continue;
    if (patterns.some((p) => envNameMatches(name, p, windows))) env[name] = value;
  }
  for (const [name, value] of Object.entries(options.set ?? {})) {
    if (windows) {
      for (const existing of Object.keys(env)) {
        if (existing.toUpperCase() === name.toUpperCase()) delete env[existing];
      }
    }
    env[name] = value;
  }
  return env;
}

/**
 * Why `command` cannot be started on this machine, or undefined when it can be found: a bare name is looked up
 * in PATH (on Windows also with each PATHEXT extension), a path (absolute, or relative to `cwd`) must be an
 * existing file (executable, on POSIX). Used by `config validate` and at start-up for warnings only: the
 * machine that validates may not be the one that runs the forwarder.
 */
export function commandNotFoundReason(
  command: string,
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const windows = currentPlatform(platform) === 'windows';
  const paths = windows ? win32 : posix;
  const env = options.env ?? process.env;
  const lookup = (key: string): string | undefined => {
    if (!windows) return env[key];
    const found = Object.keys(env).find((k) => k.toUpperCase() === key);
    return found === undefined ? undefined : env[found];
  };
  const extensions = windows
    ? ['', ...(lookup('PATHEXT') ?? '.COM;.EXE;.BAT;.CMD').split(';').filter((e) => e !== '')]
    : [''];
  const isRunnable = (file: string): boolean => {
    for (const ext of extensions) {
      try {
        if (!statSync(file + ext).isFile()) continue;
        if (!windows) accessSync(file + ext, constants.X_OK);
        return true;
      } catch {
        // not this one
      }
    }
    return false;
  };
  const hasSeparator = windows ? /[\\/]/.test(command) : command.includes('/');
  if (hasSeparator) {
    const full = paths.resolve(options.cwd ?? process.cwd(), command);
    if (isRunnable(full)) return undefined;
    return `command "${command}" does not exist${windows ? '' : ' or is not executable'} on this machine (${full})`;
  }
  const dirs = (lookup('PATH') ?? '').split(windows ? ';' : ':').filter((d) => d !== '');
  if (dirs.some((dir) => isRunnable(paths.join(dir, command)))) return undefined;
  return `command "${command}" not found on this machine's PATH`;
}

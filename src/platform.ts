/**
 * Everything that differs between Linux and Windows lives here: default paths, temporary-disk detection,
 * file permissions, shutdown signals and ending process trees. Core code asks this module instead of testing
 * process.platform.
 */
import { spawn } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join, posix, resolve, win32 } from 'node:path';

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

/**
 * Azure's temporary (resource) disk is wiped by Redeploy and Preempt: state kept there is lost exactly when it
 * matters. Returns a reason string when `dir` is on it, undefined otherwise.
 */
export function temporaryDiskReason(
  dir: string,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (currentPlatform(platform) === 'windows') {
    const root = win32.parse(win32.resolve(dir)).root.toUpperCase();
    if (root.startsWith('D:'))
      return 'D:\\ is the Azure temporary disk on Windows VMs (wiped by Redeploy and Preempt)';
    return undefined;
  }
  const abs = posix.resolve(dir);
  for (const mount of ['/mnt/resource', '/mnt']) {
    if (abs === mount || abs.startsWith(`${mount}/`)) {
      return `${mount} is the Azure temporary disk on Linux images (wiped by Redeploy and Preempt)`;
    }
  }
  return undefined;
}

/** Restrict a directory to its owner (0700). On Windows, ACLs are set by the installer; this is a no-op. */
export function restrictDirectory(dir: string, platform: NodeJS.Platform = process.platform): void {
  if (currentPlatform(platform) !== 'windows') chmodSync(dir, 0o700);
}

/** Restrict a file to its owner (0600). No-op on Windows (installer ACLs). */
export function restrictFile(file: string, platform: NodeJS.Platform = process.platform): void {
  if (currentPlatform(platform) !== 'windows') chmodSync(file, 0o600);
}

/** Signals that mean "shut down gracefully". Windows delivers SIGINT (Ctrl-C) and SIGBREAK; services get SIGINT from the wrapper. */
export function shutdownSignals(platform: NodeJS.Platform = process.platform): NodeJS.Signals[] {
  return currentPlatform(platform) === 'windows' ? ['SIGINT', 'SIGBREAK'] : ['SIGTERM', 'SIGINT'];
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

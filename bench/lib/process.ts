/**
 * The forwarder as a child process (`node src/cli/main.ts run ...`) and its resource usage read from /proc
 * (Linux): resident set size and CPU time (utime + stime) of that one process.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const CLI = join(REPO_ROOT, 'src', 'cli', 'main.ts');

/** Starts `node src/cli/main.ts run <args>`; stdout is discarded, stderr (logs) goes to `logFile`. */
export function spawnForwarder(
  args: string[],
  options: { logFile: string; env?: NodeJS.ProcessEnv },
): ChildProcess {
  const stderr = openSync(options.logFile, 'a');
  return spawn(process.execPath, [CLI, 'run', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', stderr],
    env: { ...process.env, ...options.env },
  });
}

/** SIGTERM and wait for the exit (SIGKILL after `graceMs`). Resolves with the time it took, in ms. */
export async function stopForwarder(child: ChildProcess, graceMs = 10_000): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) return 0;
  const started = performance.now();
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  return performance.now() - started;
}

let clockTicks: number | undefined;

/** Kernel clock ticks per second (USER_HZ) for /proc/<pid>/stat CPU times. */
export function clockTicksPerSecond(): number {
  if (clockTicks !== undefined) return clockTicks;
  try {
    clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    clockTicks = 100;
  }
  return clockTicks;
}

export interface ProcessSample {
  /** Seconds since the sampling started. */
  t: number;
  rssKiB: number;
  /** utime + stime, seconds. */
  cpuSeconds: number;
}

/** One reading of /proc/<pid>/status (VmRSS) and /proc/<pid>/stat (utime, stime). Throws off Linux. */
export function readProcessUsage(pid: number): { rssKiB: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name "(...)": state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssKiB: Number(rss?.[1] ?? 0), cpuSeconds: ticks / clockTicksPerSecond() };
}

/** True where /proc/<pid> can be read (Linux). */
export function canReadProcessUsage(): boolean {
  try {
    readProcessUsage(process.pid);
    return true;
  } catch {
    return false;
  }
}

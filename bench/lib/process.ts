/**
 * Child processes of the benchmarks and their resource usage read from /proc (Linux): resident set size
 * (total, anonymous, file-backed), CPU time (utime + stime) and bytes written to storage (write_bytes) of
 * that one process.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');

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

/** One reading of a process's usage (see readProcessUsage). */
export interface ProcessUsage {
  /** VmRSS, RssAnon and RssFile of /proc/<pid>/status. */
  rssKiB: number;
  anonKiB: number;
  fileKiB: number;
  /** utime + stime of /proc/<pid>/stat, seconds (clock-tick resolution). */
  cpuSeconds: number;
  /** write_bytes of /proc/<pid>/io: bytes this process caused to be written to storage. */
  writeBytes: number;
}

export interface ProcessSample extends ProcessUsage {
  /** Seconds since the sampling started. */
  t: number;
}

/** One reading of /proc/<pid>/status, /proc/<pid>/stat and /proc/<pid>/io. Throws off Linux. */
export function readProcessUsage(pid: number): ProcessUsage {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? 0);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name "(...)": state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const written = /^write_bytes:\s+(\d+)/m.exec(io);
  return {
    rssKiB: kib('VmRSS'),
    anonKiB: kib('RssAnon'),
    fileKiB: kib('RssFile'),
    cpuSeconds: ticks / clockTicksPerSecond(),
    writeBytes: Number(written?.[1] ?? 0),
  };
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

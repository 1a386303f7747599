/** What the benchmarks ran on: CPU, memory, OS, Node version, date, git commit, load average. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  os: string;
  platform: NodeJS.Platform;
  arch: string;
  node: string;
  /** The Node binary that ran the benchmark (and every child process it started). */
  nodeBinary: string;
  date: string;
  gitCommit: string | null;
  /** True when the working tree had uncommitted changes (the commit alone does not describe what ran). */
  gitDirty: boolean | null;
}

/** Whether the working tree has uncommitted changes (null outside a repository). */
export function gitDirty(): boolean | null {
  try {
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return status.trim() !== '';
  } catch {
    return null;
  }
}

/** The current git commit of the working tree (null outside a repository). */
export function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    os: `${os.type()} ${os.release()}`,
    platform: process.platform,
    arch: process.arch,
    node: process.version,
    nodeBinary: process.execPath,
    date: new Date().toISOString(),
    gitCommit: gitCommit(),
    gitDirty: gitDirty(),
  };
}

/** 1, 5 and 15 minute load averages (zeros on Windows). */
export function loadAverage(): [number, number, number] {
  const [a = 0, b = 0, c = 0] = os.loadavg();
  return [Math.round(a * 100) / 100, Math.round(b * 100) / 100, Math.round(c * 100) / 100];
}

/**
 * Run a command without a shell: stdin from a string, output captured (bounded), a timeout and an AbortSignal
 * that end the whole process tree (process group on Linux, taskkill /T on Windows). Shared by the exec sink and
 * the approval module's prepare hooks.
 */
import { spawn } from 'node:child_process';
import { killProcessTree, spawnsOwnProcessGroup } from '../platform.ts';

export interface RunCommandOptions {
  command: string;
  args?: readonly string[];
  /** Written to the child's stdin, which is then closed. */
  stdin?: string;
  /** Full environment for the child (default: this process's environment). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Kill the process tree after this long (default: no timeout). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Keep at most this many bytes of stdout and of stderr (default 64 KiB each). */
  maxOutputBytes?: number;
  /** After a polite termination request, wait this long before killing hard (default 2000 ms). */
  killGraceMs?: number;
}

export interface RunCommandResult {
  /** Exit code, or null when ended by a signal. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Ended because `signal` was aborted. */
  aborted: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** Thrown when the command could not be started at all (not found, not executable). */
export class CommandStartError extends Error {
  readonly code: string | undefined;
  constructor(command: string, cause: NodeJS.ErrnoException) {
    super(`cannot start command "${command}": ${cause.code === 'ENOENT' ? 'not found' : cause.message}`, {
      cause,
    });
    this.name = 'CommandStartError';
    this.code = cause.code;
  }
}

/** Run a command to completion (see RunCommandOptions). Rejects only with CommandStartError. */
export function runCommand(options: RunCommandOptions): Promise<RunCommandResult> {
  const started = performance.now();
  const limit = options.maxOutputBytes ?? 64 * 1024;
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        aborted: true,
        stdout: '',
        stderr: '',
        durationMs: 0,
      });
      return;
    }
    const child = spawn(options.command, [...(options.args ?? [])], {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      windowsHide: true,
      // Own process group on POSIX so the whole tree can be signalled; Windows uses taskkill /T instead.
      detached: spawnsOwnProcessGroup(),
    });
    const stdout = new BoundedBuffer(limit);
    const stderr = new BoundedBuffer(limit);
    let timedOut = false;
    let aborted = false;
    let hardKillTimer: NodeJS.Timeout | undefined;
    let settled = false;

    const terminate = () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killProcessTree(child.pid, false);
      hardKillTimer ??= setTimeout(() => killProcessTree(child.pid, true), options.killGraceMs ?? 2000);
    };
    const timeoutTimer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            terminate();
          }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const cleanup = () => {
      settled = true;
      if (timeoutTimer !== undefined) clearTimeout(timeoutTimer);
      if (hardKillTimer !== undefined) clearTimeout(hardKillTimer);
      options.signal?.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on('error', () => {
      // EPIPE: the command exited without reading stdin; its exit status tells the story
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (settled) return;
      cleanup();
      reject(new CommandStartError(options.command, error));
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      cleanup();
      resolve({
        exitCode: code,
        signal,
        timedOut,
        aborted,
        stdout: stdout.text(),
        stderr: stderr.text(),
        durationMs: Math.round(performance.now() - started),
      });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** Collects output up to a byte limit and notes truncation. */
class BoundedBuffer {
  readonly #limit: number;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #truncated = false;
  constructor(limit: number) {
    this.#limit = limit;
  }
  push(chunk: Buffer): void {
    const room = this.#limit - this.#size;
    if (room <= 0) {
      this.#truncated = true;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) this.#truncated = true;
    this.#chunks.push(part);
    this.#size += part.length;
  }
  text(): string {
    const text = Buffer.concat(this.#chunks).toString('utf8');
    return this.#truncated ? `${text}…[truncated]` : text;
  }
}

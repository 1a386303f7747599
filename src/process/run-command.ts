/**
 * Run a command without a shell: stdin from a string, output captured (bounded), a timeout and an AbortSignal
 * that end the whole process tree (process group on Linux, taskkill /T on Windows). Shared by the exec sink and
 * the approval module's prepare hooks: the one place the forwarder starts commands, so the one place that
 * decides what environment they get (a minimal one: childEnvironment in src/platform.ts, plus `passEnv` and
 * `env`; never the whole service environment with its secrets).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { childEnvironment, killProcessTree, spawnsOwnProcessGroup } from '../platform.ts';

/** What a NUL character in an environment value becomes (no environment can carry NUL; see envValue). */
export const NUL_REPLACEMENT = '\uFFFD';

/**
 * An environment value a process can receive: NUL (which ends a C string, so neither POSIX nor Windows can pass
 * it and Node refuses to spawn at all) becomes U+FFFD. Record fields come from IMDS and may carry anything; the
 * exact value is still in the record JSON on stdin.
 */
export function envValue(value: string): string {
  return value.includes('\0') ? value.replaceAll('\0', NUL_REPLACEMENT) : value;
}

export interface RunCommandOptions {
  command: string;
  args?: readonly string[];
  /** Written to the child's stdin, which is then closed. */
  stdin?: string;
  /**
   * Variables set for the child, over the inherited ones. NUL characters in values become U+FFFD (envValue).
   * The child inherits from this process only the platform's minimal set (childEnvironmentBaseNames in
   * src/platform.ts) and the variables named in `passEnv`.
   */
  env?: Record<string, string>;
  /** Names (`NAME`, or `PREFIX*`) of this process's variables the child inherits besides the minimal set. */
  passEnv?: readonly string[];
  /** The environment inherited from (default: this process's). */
  parentEnv?: Record<string, string | undefined>;
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

/**
 * Thrown when the command could not be started at all (not found, not executable, or refused by Node before a
 * process existed). `permanent`: starting it the same way can never work (an argument or variable Node rejects,
 * such as one containing NUL; E2BIG, arguments plus environment too large), as opposed to a missing command
 * the operator can install or a transient EAGAIN/EMFILE.
 */
export class CommandStartError extends Error {
  readonly code: string | undefined;
  readonly permanent: boolean;
  constructor(command: string, cause: NodeJS.ErrnoException) {
    super(`cannot start command "${command}": ${cause.code === 'ENOENT' ? 'not found' : cause.message}`, {
      cause,
    });
    this.name = 'CommandStartError';
    this.code = cause.code;
    this.permanent = cause.code === 'E2BIG' || (cause.code?.startsWith('ERR_') ?? false);
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
    const set: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.env ?? {})) set[name] = envValue(value);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(options.command, [...(options.args ?? [])], {
        env: childEnvironment({
          ...(options.parentEnv === undefined ? {} : { parent: options.parentEnv }),
          ...(options.passEnv === undefined ? {} : { pass: options.passEnv }),
          set,
        }),
        cwd: options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        // Own process group on POSIX so the whole tree can be signalled; Windows uses taskkill /T instead.
        detached: spawnsOwnProcessGroup(),
      });
    } catch (error) {
      // Node refuses some spawns synchronously (invalid arguments, E2BIG): the same CommandStartError as an
      // asynchronous start failure, never a stray TypeError a caller would take for a transient problem.
      reject(new CommandStartError(options.command, error as NodeJS.ErrnoException));
      return;
    }
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

/** Spawning `node src/cli/main.ts ...` as a real child process and waiting for the forwarder to be running. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { lineAuditor } from './logs.ts';
import { waitFor } from './wait.ts';

export const REPO = join(import.meta.dirname, '..', '..');
export const MAIN = join(REPO, 'src', 'cli', 'main.ts');

export interface ForwarderChild {
  child: ChildProcess;
  /** Resolves when the forwarder logged "forwarder running"; rejects if it exits first. */
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  stdout(): string;
}

/** Starts the CLI with `args` (logs as JSON on stderr); `nodeArgs` go to node itself (e.g. `--import <preload>`). */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: readonly string[] = [],
): ForwarderChild {
  const child = spawn(process.execPath, [...nodeArgs, MAIN, ...args], {
    cwd: REPO,
    env: { ...process.env, ...env, HTTP_PROXY: '', HTTPS_PROXY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  // Every log line the child writes is parsed strictly (test/support/logs.ts): a key written twice fails the test.
  const audit = lineAuditor(`the child \`${args.join(' ')}\``);
  child.stderr?.on('end', () => audit.end());
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      audit.write(d);
      if (err.includes('"msg":"forwarder running"')) resolve();
    });
    void exited.then(({ code, signal }) =>
      reject(
        new Error(`forwarder exited before ready (code ${code}, signal ${signal}): ${err.slice(-2000)}`),
      ),
    );
  });
  ready.catch(() => {});
  return { child, ready, exited, stderr: () => err, stdout: () => out };
}

/**
 * Writes `config` to `file` (JSON is YAML) and starts `run --config file` (spawnCli); resolves once the forwarder
 * runs. The caller ends it (e.g. SIGKILL in a cleanup).
 */
export async function startRun(
  file: string,
  config: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<ForwarderChild> {
  writeFileSync(file, JSON.stringify(config));
  const fwd = spawnCli(['run', '--config', file], env);
  await fwd.ready;
  return fwd;
}

/** Runs the CLI with `args` (spawnCli) to its end; returns the exit code and output. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env);
  const { code } = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/**
 * Reads the file sink's output after SIGKILLs: a kill can cut a batch's write short (Linux stops copying a
 * write's pages at a fatal signal), and the next run keeps that torn line on its own line (docs/delivery.md).
 * A torn line is accepted only when it is a proper prefix of a complete line that follows it (the batch was not
 * acknowledged, so it is written again in full); anything else fails the parse. Returns the complete records and
 * how many torn lines were skipped.
 */
export function fileSinkRecords<T = Record<string, unknown>>(text: string): { records: T[]; torn: number } {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const records: T[] = [];
  let torn = 0;
  lines.forEach((line, i) => {
    try {
      records.push(JSON.parse(line) as T);
    } catch (error) {
      const rewritten = lines
        .slice(i + 1)
        .some((later) => later.length > line.length && later.startsWith(line));
      if (!rewritten)
        throw new Error(
          `line ${i + 1} of the file sink is neither JSON nor a torn copy of a later line: ${(error as Error).message}`,
        );
      torn++;
    }
  });
  return { records, torn };
}

/** The records a file sink wrote to `file` so far (none while the file does not exist yet). */
export function readFileSinkRecords<T = LifecycleRecord>(file: string): T[] {
  return existsSync(file) ? fileSinkRecords<T>(readFileSync(file, 'utf8')).records : [];
}

/** Parses a JSON-lines file's non-empty lines. */
export function jsonLines<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/**
 * The address of a `run` child's telemetry listener (its "telemetry listening" line: the listener starts before the
 * pipeline is ready), e.g. http://127.0.0.1:41234.
 */
export function telemetryListener(child: ForwarderChild): Promise<URL> {
  return waitFor(() => {
    const line = jsonLines(child.stderr()).find(
      (l) => l.msg === 'telemetry listening (/healthz, /readyz, /metrics)',
    );
    return line === undefined ? undefined : new URL(String(line.listen));
  }, 'the telemetry listener address');
}

/** Spawning `node src/cli/main.ts ...` as a real child process and waiting for the forwarder to be running. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

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

/** Starts the CLI with `args` (logs as JSON on stderr). */
export function spawnCli(args: string[], env: Record<string, string> = {}): ForwarderChild {
  const child = spawn(process.execPath, [MAIN, ...args], {
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
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      err += d;
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

/** Parses a JSON-lines file's non-empty lines. */
export function jsonLines<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/**
 * A server of the observability tier run from its Debian package (Prometheus: `prometheus`; Alertmanager:
 * `prometheus-alertmanager`): the check that its binary is installed, and starting it on a free 127.0.0.1 port
 * until /-/ready answers 200. A missing binary fails the test, naming the package; it is never skipped.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { waitFor } from '../support/wait.ts';

/** Throws, naming the Debian package, when `binary` is not on PATH. */
export function requireDebianBinary(binary: string, debianPackage: string): void {
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `${binary} is missing (${probe.error?.message ?? `exit ${probe.status}`}): install the Debian package ` +
        `\`${debianPackage}\` (apt-get install ${debianPackage}); .ci/run installs it for this tier`,
    );
  }
}

/** A free TCP port on 127.0.0.1 (another process may still take it before the caller binds it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface RunningServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** What the server wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Runs `binary` with `args(port, attempt)` on a free 127.0.0.1 port and resolves once its /-/ready answers 200;
 * `name` ("Prometheus") names it in errors. Another process may take the port between freePort() and the
 * server's bind: then it tries another one (three attempts). With `port` (a restart on the port a stopped
 * server had), that port or a clear failure.
 */
export async function startDebianServer(
  binary: string,
  name: string,
  args: (port: number, attempt: number) => string[],
  options: { port?: number } = {},
): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const child: ChildProcess = spawn(binary, args(port, attempt), { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (d: string) => {
      output += d;
    };
    child.stdout?.setEncoding('utf8').on('data', collect);
    child.stderr?.setEncoding('utf8').on('data', collect);
    let exited = false;
    const exit = once(child, 'exit').then(() => {
      exited = true;
    });
    const url = `http://127.0.0.1:${port}`;
    const stop = async () => {
      if (!exited) child.kill('SIGTERM');
      await exit;
    };
    try {
      await waitFor(async () => {
        if (exited) throw new Error(`${name.toLowerCase()} exited: ${output.slice(-2000)}`);
        return (await fetch(`${url}/-/ready`)).status === 200;
      }, `${name} to be ready`);
    } catch (error) {
      await stop();
      if (options.port === undefined && attempt < 3 && /address already in use/.test(output)) continue;
      throw error;
    }
    return { url, output: () => output, stop };
  }
}

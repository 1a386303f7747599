/**
 * The real Prometheus tools of the observability tier (Debian package `prometheus`: /usr/bin/promtool and
 * /usr/bin/prometheus). A missing tool fails the test, naming the package; it is never skipped.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO } from '../support/child.ts';
import { waitFor } from '../support/wait.ts';

export const RULES_DIR = join(REPO, 'packaging', 'prometheus');
export const RULES = join(RULES_DIR, 'sef-alerts.rules.yml');
export const RULE_TESTS = join(RULES_DIR, 'sef-alerts.test.yml');

/** Throws, naming the Debian package, when `tool` is not on PATH. */
export function requireTool(tool: 'promtool' | 'prometheus'): void {
  const probe = spawnSync(tool, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `${tool} is missing (${probe.error?.message ?? `exit ${probe.status}`}): install the Debian package ` +
        '`prometheus` (apt-get install prometheus); .ci/run installs it for this tier',
    );
  }
}

/** Runs promtool with `args` in `cwd`; returns its exit status and combined output. */
export function promtool(args: string[], cwd = RULES_DIR): { status: number | null; output: string } {
  requireTool('promtool');
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
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

export interface RunningPrometheus {
  url: string;
  /** GET /api/v1/<path>; throws unless Prometheus answers status "success". */
  api<T>(path: string): Promise<T>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts a real Prometheus on 127.0.0.1 (storage in `dir`) scraping `targets` every second and evaluating the
 * shipped rules every second; resolves once /-/ready answers 200.
 */
export async function startPrometheus(dir: string, targets: string[]): Promise<RunningPrometheus> {
  requireTool('prometheus');
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(RULES)}]`,
      'scrape_configs:',
      '  - job_name: sef',
      `    static_configs: [{ targets: ${JSON.stringify(targets)} }]`,
      '',
    ].join('\n'),
  );
  // Another process may take the port between freePort() and Prometheus's bind: then try another one.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      output += d;
    });
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
        if (exited) throw new Error(`prometheus exited: ${output.slice(-2000)}`);
        return (await fetch(`${url}/-/ready`)).status === 200;
      }, 'Prometheus to be ready');
    } catch (error) {
      await stop();
      if (attempt < 3 && /address already in use/.test(output)) continue;
      throw error;
    }
    return {
      url,
      output: () => output,
      stop,
      api: async <T>(path: string): Promise<T> => {
        const body = (await (await fetch(`${url}/api/v1/${path}`)).json()) as {
          status: string;
          data: T;
          error?: string;
        };
        if (body.status !== 'success') throw new Error(`/api/v1/${path}: ${body.error ?? body.status}`);
        return body.data;
      },
    };
  }
}

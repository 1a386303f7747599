/**
 * The real Prometheus tools of the observability tier (Debian package `prometheus`: /usr/bin/promtool and
 * /usr/bin/prometheus). A missing tool fails the test, naming the package; it is never skipped.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../support/child.ts';
import { type RunningServer, requireDebianBinary, startDebianServer } from './debian-server.ts';

export const RULES_DIR = join(REPO, 'packaging', 'prometheus');
export const RULES = join(RULES_DIR, 'sef-alerts.rules.yml');
export const RULE_TESTS = join(RULES_DIR, 'sef-alerts.test.yml');

/** Throws, naming the Debian package, when `tool` is not on PATH. */
export function requireTool(tool: 'promtool' | 'prometheus'): void {
  requireDebianBinary(tool, 'prometheus');
}

/** Runs promtool with `args` in `cwd`; returns its exit status and combined output. */
export function promtool(args: string[], cwd = RULES_DIR): { status: number | null; output: string } {
  requireTool('promtool');
  const result = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

export interface RunningPrometheus extends RunningServer {
  /** GET /api/v1/<path>; throws unless Prometheus answers status "success". */
  api<T>(path: string): Promise<T>;
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
  const server = await startDebianServer('prometheus', 'Prometheus', (port, attempt) => [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, `data-${attempt}`)}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ]);
  return {
    ...server,
    api: async <T>(path: string): Promise<T> => {
      const body = (await (await fetch(`${server.url}/api/v1/${path}`)).json()) as {
        status: string;
        data: T;
        error?: string;
      };
      if (body.status !== 'success') throw new Error(`/api/v1/${path}: ${body.error ?? body.status}`);
      return body.data;
    },
  };
}

/**
 * A real Alertmanager for the observability tier (Debian package `prometheus-alertmanager`:
 * /usr/bin/prometheus-alertmanager), started on 127.0.0.1 with clustering off. A missing binary fails the test,
 * naming the package; it is never skipped.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../support/wait.ts';
import { freePort } from './prometheus.ts';

const BINARY = 'prometheus-alertmanager';

/** Throws, naming the Debian package, when the Alertmanager binary is not on PATH. */
export function requireAlertmanager(): void {
  const probe = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `${BINARY} is missing (${probe.error?.message ?? `exit ${probe.status}`}): install the Debian package ` +
        '`prometheus-alertmanager` (apt-get install prometheus-alertmanager); .ci/run installs it for this tier',
    );
  }
}

/** One alert as GET /api/v2/alerts returns it. */
export interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  status: { state: string };
}

export interface RunningAlertmanager {
  /** http://127.0.0.1:<port>: the base URL a sink is configured with. */
  url: string;
  /** GET /api/v2/alerts: the alerts that are not resolved. */
  alerts(): Promise<GettableAlert[]>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts an Alertmanager (config from `configYaml`, storage in `dir/<name>`) on a free 127.0.0.1 port with
 * clustering disabled; resolves once /-/ready answers 200.
 */
export async function startAlertmanager(
  dir: string,
  name: string,
  configYaml: string,
): Promise<RunningAlertmanager> {
  requireAlertmanager();
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  const config = join(home, 'alertmanager.yml');
  writeFileSync(config, configYaml);
  // Another process may take the port between freePort() and Alertmanager's bind: then try another one.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(
      BINARY,
      [
        `--config.file=${config}`,
        `--storage.path=${join(home, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--cluster.listen-address=',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
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
        if (exited) throw new Error(`alertmanager exited: ${output.slice(-2000)}`);
        return (await fetch(`${url}/-/ready`)).status === 200;
      }, 'Alertmanager to be ready');
    } catch (error) {
      await stop();
      if (attempt < 3 && /address already in use/.test(output)) continue;
      throw error;
    }
    return {
      url,
      output: () => output,
      stop,
      alerts: async () => {
        const response = await fetch(`${url}/api/v2/alerts`);
        if (response.status !== 200) throw new Error(`GET /api/v2/alerts: HTTP ${response.status}`);
        return (await response.json()) as GettableAlert[];
      },
    };
  }
}

/** An Alertmanager config routing every alert, grouped per event, to a webhook receiver, fast, with resolves. */
export function webhookRouteConfig(webhookUrl: string): string {
  return [
    'route:',
    '  receiver: sef-hook',
    '  group_by: [alertname, event_id, vm]',
    '  group_wait: 1s',
    '  group_interval: 1s',
    '  repeat_interval: 1h',
    'receivers:',
    '  - name: sef-hook',
    '    webhook_configs:',
    `      - url: ${JSON.stringify(webhookUrl)}`,
    '        send_resolved: true',
    '',
  ].join('\n');
}

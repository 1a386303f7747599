/**
 * A real Alertmanager for the observability tier (Debian package `prometheus-alertmanager`:
 * /usr/bin/prometheus-alertmanager), started on 127.0.0.1 with clustering off. A missing binary fails the test,
 * naming the package; it is never skipped.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningServer, requireDebianBinary, startDebianServer } from './debian-server.ts';

const BINARY = 'prometheus-alertmanager';

/** Throws, naming the Debian package, when the Alertmanager binary is not on PATH. */
export function requireAlertmanager(): void {
  requireDebianBinary(BINARY, 'prometheus-alertmanager');
}

/** One alert as GET /api/v2/alerts returns it. */
export interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  status: { state: string };
  /** When this Alertmanager last took a POST of the alert. */
  updatedAt: string;
  generatorURL?: string;
}

/** `url` (http://127.0.0.1:<port>) is the base URL a sink is configured with. */
export interface RunningAlertmanager extends RunningServer {
  /** GET /api/v2/alerts: the alerts that are not resolved. */
  alerts(): Promise<GettableAlert[]>;
  /**
   * Stops it (SIGTERM) and starts it again on the same port with the same storage (silences and notification
   * log survive, alerts do not: Alertmanager keeps them in memory); resolves once it is ready again.
   */
  restart(): Promise<void>;
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
  let storage = '';
  const args = (port: number, attempt: number) => {
    storage ||= join(home, `data-${attempt}`);
    return [
      `--config.file=${config}`,
      `--storage.path=${storage}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
    ];
  };
  let server = await startDebianServer(BINARY, 'Alertmanager', args);
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    output: () => server.output(),
    stop: () => server.stop(),
    restart: async () => {
      await server.stop();
      server = await startDebianServer(BINARY, 'Alertmanager', args, { port });
    },
    alerts: async () => {
      const response = await fetch(`${server.url}/api/v2/alerts`);
      if (response.status !== 200) throw new Error(`GET /api/v2/alerts: HTTP ${response.status}`);
      return (await response.json()) as GettableAlert[];
    },
  };
}

/** Two Alertmanagers (an HA pair, without gossip: alerts are never gossiped anyway) with one config. */
export function startAlertmanagerPair(
  dir: string,
  configYaml: string,
): Promise<[RunningAlertmanager, RunningAlertmanager]> {
  return Promise.all([startAlertmanager(dir, 'am1', configYaml), startAlertmanager(dir, 'am2', configYaml)]);
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

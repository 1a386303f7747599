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
}

/** `url` (http://127.0.0.1:<port>) is the base URL a sink is configured with. */
export interface RunningAlertmanager extends RunningServer {
  /** GET /api/v2/alerts: the alerts that are not resolved. */
  alerts(): Promise<GettableAlert[]>;
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
  const server = await startDebianServer(BINARY, 'Alertmanager', (port, attempt) => [
    `--config.file=${config}`,
    `--storage.path=${join(home, `data-${attempt}`)}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--cluster.listen-address=',
  ]);
  return {
    ...server,
    alerts: async () => {
      const response = await fetch(`${server.url}/api/v2/alerts`);
      if (response.status !== 200) throw new Error(`GET /api/v2/alerts: HTTP ${response.status}`);
      return (await response.json()) as GettableAlert[];
    },
  };
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

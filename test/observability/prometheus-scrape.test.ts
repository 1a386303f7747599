/**
 * A real Prometheus (Debian package `prometheus`) on 127.0.0.1 scraping a real `run` child (against the IMDS
 * simulator) every second and evaluating the shipped rules (packaging/prometheus/sef-alerts.rules.yml) every
 * second: through Prometheus's HTTP API, the per-sink counters exist at 0 before anything happened
 * (`sef_dead_letters_total` for each reason: `increase()` sees the first dead letter after a restart), both rule
 * groups are loaded and evaluate without errors, and a healthy forwarder fires no alert.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type ForwarderChild, jsonLines, spawnCli } from '../support/child.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { RULES, type RunningPrometheus, startPrometheus } from './prometheus.ts';

const tmp = makeTempDir('sef-prometheus-');
let sim: RunningSimulator | undefined;
let fwd: ForwarderChild | undefined;
let prometheus: RunningPrometheus | undefined;
afterAll(async () => {
  await prometheus?.stop();
  fwd?.child.kill('SIGKILL');
  if (fwd) await fwd.exited;
  await sim?.close();
  tmp.cleanup();
});

interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}
interface RuleGroups {
  groups: Array<{
    name: string;
    rules: Array<{
      name: string;
      health: string;
      lastError?: string;
      lastEvaluation: string;
      state?: string;
    }>;
  }>;
}

describe('Prometheus scraping a forwarder with the shipped rules', () => {
  it('sees every dead-letter series at 0 and loads and evaluates both rule groups', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'telemetry: { listen: { enabled: true, host: 127.0.0.1, port: 0 } }',
        'sinks:',
        `  - { name: file, type: file, path: ${JSON.stringify(join(tmp.dir, 'records.jsonl'))} }`,
        '',
      ].join('\n'),
    );
    fwd = spawnCli(['run', '--config', config]);
    const child = fwd;
    await child.ready;
    const listen = jsonLines(child.stderr()).find(
      (l) => l.msg === 'telemetry listening (/healthz, /readyz, /metrics)',
    )?.listen;
    expect(listen).toEqual(expect.any(String));
    const target = new URL(String(listen)).host;

    prometheus = await startPrometheus(tmp.dir, [target]);
    const prom = prometheus;
    const query = (q: string) =>
      prom.api<{ resultType: string; result: VectorSample[] }>(`query?query=${encodeURIComponent(q)}`);

    const deadLetters = await waitFor(async () => {
      const r = await query('sef_dead_letters_total');
      return r.result.length > 0 ? r.result : undefined;
    }, 'Prometheus to have scraped sef_dead_letters_total');
    expect(
      deadLetters
        .map(
          (s) => `${s.metric.job} ${s.metric.instance} ${s.metric.sink} ${s.metric.reason} = ${s.value[1]}`,
        )
        .sort(),
    ).toEqual(['expired', 'overflow', 'permanent'].map((reason) => `sef ${target} file ${reason} = 0`));
    const gauges = await query(
      '{__name__=~"sef_outbox_pending|sef_outbox_oldest_age_seconds|sef_dead_letter_rows"}',
    );
    expect(gauges.result.map((s) => `${s.metric.__name__} ${s.metric.sink} = ${s.value[1]}`).sort()).toEqual([
      'sef_dead_letter_rows file = 0',
      'sef_outbox_oldest_age_seconds file = 0',
      'sef_outbox_pending file = 0',
    ]);
    // What SefDeadLetters evaluates: a series per reason, each 0 (not empty).
    // (increase() needs two samples: wait for the second scrape.)
    const increase = await waitFor(async () => {
      const r = await query('increase(sef_dead_letters_total[1h])');
      return r.result.length > 0 ? r.result : undefined;
    }, 'increase(sef_dead_letters_total[1h]) to have a value');
    expect(increase.map((s) => s.value[1])).toEqual(['0', '0', '0']);

    // Both groups loaded, every rule evaluated at least once, without an error.
    const shipped = (
      parse(readFileSync(RULES, 'utf8')) as {
        groups: Array<{ name: string; rules: Array<{ alert: string }> }>;
      }
    ).groups;
    const loaded = await waitFor(async () => {
      const r = await prom.api<RuleGroups>('rules');
      const evaluated = r.groups.every((g) =>
        g.rules.every((rule) => !rule.lastEvaluation.startsWith('0001-')),
      );
      return r.groups.length === shipped.length && evaluated ? r : undefined;
    }, 'Prometheus to load and evaluate the rule groups');
    expect(loaded.groups.map((g) => `${g.name}: ${g.rules.map((r) => r.name).join(', ')}`).sort()).toEqual(
      shipped.map((g) => `${g.name}: ${g.rules.map((r) => r.alert).join(', ')}`).sort(),
    );
    for (const group of loaded.groups) {
      for (const rule of group.rules)
        expect(`${rule.name}: ${rule.health} ${rule.lastError ?? ''}`.trim()).toBe(`${rule.name}: ok`);
    }
    // A healthy forwarder (polls succeed, nothing pending, no dead letters) fires nothing.
    const alerts = await prom.api<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>(
      'alerts',
    );
    expect(alerts.alerts.map((a) => `${a.labels.alertname} ${a.state}`)).toEqual([]);

    child.child.kill('SIGTERM');
    expect((await child.exited).code).toBe(0);
  });
});

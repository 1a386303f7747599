/**
 * packaging/grafana/forwarder-and-fleet-metrics.json against a real Prometheus (Debian package `prometheus`;
 * missing, the test fails naming it) scraping, once a second on 127.0.0.1:
 *
 * - a real forwarder (`node src/cli/main.ts run`) polling the IMDS simulator, with five sinks: a file, the
 *   Event Hubs double, a webhook on a closed port (so delivery failures and retries have series), a webhook whose
 *   receiver answers 403 (its destination refuses everything: the sink pauses) and one whose receiver answers 400
 *   with a dead-letter cap of 1 byte (the record is dead-lettered and the dead letter dropped by the cap); it is
 *   sent SIGHUP once (a reload that changes nothing);
 * - a real fleet consumer (`fleet run`: Blob checkpoints in Azurite, the Event Hubs double, a SQLite history
 *   holding a synthetic fleet of the last ten days) that ingests what the forwarder sends.
 *
 * Grafana does not run here. What is tested: every template variable query (label_values) returns values, and
 * every panel expression, with the variables interpolated as Grafana's Prometheus data source does and
 * $__rate_interval / $__range / $__interval replaced by fixed durations, returns at least one series through
 * /api/v1/query, first with every variable at "All", then with each set to one of its values.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHistory, type RawFleetEvent } from '../../src/fleet/history/index.ts';
import { generateFleet } from '../../src/simulator/fleet.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import {
  type FleetChild,
  type RunningAzurite,
  spawnFleet,
  startAzurite,
} from '../integration/fleet/helpers.ts';
import {
  interpolate,
  loadMetricsDashboard,
  type PromPanel,
  queryPanels,
  type Variable,
} from '../integration/grafana/dashboards.ts';
import { type ForwarderChild, jsonLines, spawnCli } from '../support/child.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../support/fleet-config.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { type RunningPrometheus, requireTool, startPrometheus } from './prometheus.ts';

/** Grafana's interval variables, fixed: long enough to hold the whole test's samples (scrapes every second). */
const INTERVALS: Record<string, string> = { __rate_interval: '1m', __range: '1m', __interval: '5s' };
const HUB = 'lifecycle';

interface Series {
  metric: Record<string, string>;
  value: [number, string];
}

const dashboard = loadMetricsDashboard();
const variables = dashboard.templating.list;
const panels = queryPanels<PromPanel>(dashboard);

const tmp = makeTempDir('sef-grafana-promql-');
let sim: RunningSimulator | undefined;
let double: EventHubsDouble | undefined;
let azurite: RunningAzurite | undefined;
let forwarder: ForwarderChild | undefined;
let fleet: FleetChild | undefined;
let prometheus: RunningPrometheus | undefined;
/** Answers 403 on /refuse (the destination refuses everything) and 400 on /reject (this record is refused). */
let receiver: Server | undefined;
let targets: { forwarder: string; fleet: string };

async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** A SQLite fleet history with a synthetic fleet of the last ten days (so the history gauges are not all 0). */
async function syntheticHistory(file: string): Promise<void> {
  const now = Date.now();
  const history = await openHistory({ database: file });
  try {
    const synthetic = generateFleet({
      vms: 60,
      days: 10,
      start: new Date(now - 10 * 86_400_000).toISOString(),
    });
    let batch: RawFleetEvent[] = [];
    let sequence = 0;
    for (const record of synthetic.records()) {
      batch.push({
        body: record,
        partitionId: 'synthetic',
        sequenceNumber: sequence++,
        enqueuedAt: new Date(record.time),
      });
      if (batch.length === 500) {
        await history.ingest(batch);
        batch = [];
      }
    }
    await history.ingest(batch);
  } finally {
    await history.close();
  }
}

beforeAll(async () => {
  requireTool('prometheus'); // fail first, naming the package, before starting anything
  const database = join(tmp.dir, 'fleet.db');
  await syntheticHistory(database);

  mkdirSync(join(tmp.dir, 'azurite'));
  azurite = await startAzurite(join(tmp.dir, 'azurite'));
  double = await startEventHubsDouble({ hubs: { [HUB]: 2 }, consumerGroups: ['$Default', 'fleet'] });
  sim = await startSimulator({ timeScale: 0 });
  receiver = createHttpServer((req, res) => {
    req.resume();
    res.writeHead(req.url === '/refuse' ? 403 : 400).end();
  }).listen(0, '127.0.0.1');
  await new Promise((r) => receiver!.once('listening', r));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

  const config = join(tmp.dir, 'forwarder.yaml');
  const backoff = 'delivery: { backoff: { initialMs: 200, maxMs: 500 } }';
  writeFileSync(
    config,
    [
      `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
      `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
      'telemetry: { listen: { enabled: true, host: 127.0.0.1, port: 0 } }',
      'sinks:',
      `  - { name: file, type: file, path: ${JSON.stringify(join(tmp.dir, 'records.jsonl'))} }`,
      `  - { name: eventhubs, type: eventhubs, connectionString: "\${SEF_T_EH}", ${backoff} }`,
      `  - { name: hook, type: webhook, url: "http://127.0.0.1:${await closedPort()}/hook", ${backoff} }`,
      `  - { name: refused, type: webhook, url: "${receiverUrl}/refuse" }`,
      `  - name: rejected`,
      `    type: webhook`,
      `    url: "${receiverUrl}/reject"`,
      '    delivery: { caps: { maxDeadLetterBytes: 1 } }',
      '',
    ].join('\n'),
  );
  forwarder = spawnCli(['run', '--config', config], { SEF_T_EH: double.connectionString(HUB) });
  const child = forwarder;
  const telemetry = await waitFor(() => {
    const line = jsonLines(child.stderr()).find(
      (l) => l.msg === 'telemetry listening (/healthz, /readyz, /metrics)',
    );
    return line === undefined ? undefined : new URL(String(line.listen)).host;
  }, 'the forwarder telemetry listener');
  await child.ready;
  const fleetDir = join(tmp.dir, 'fleet');
  mkdirSync(fleetDir);
  writeFleetConfig(join(fleetDir, 'fleet.yaml'), { group: 'fleet', database });
  fleet = spawnFleet(
    ['--config', 'fleet.yaml'],
    { SEF_FLEET_EH: double.connectionString(HUB), SEF_FLEET_BLOB: azurite.connectionString },
    { cwd: fleetDir },
  );
  const { dashboard: dashboardUrl } = await fleet.ready;
  if (dashboardUrl === null) throw new Error('fleet run serves no dashboard (and so no /metrics)');
  targets = { forwarder: telemetry, fleet: new URL(dashboardUrl).host };

  prometheus = await startPrometheus(tmp.dir, [targets.forwarder, targets.fleet]);
  const prom = prometheus;
  const count = async (expr: string) =>
    (await prom.api<{ result: Series[] }>(`query?query=${encodeURIComponent(expr)}`)).result.length;
  await waitFor(async () => (await count('up == 1')) === 2, 'Prometheus scraping both targets', {
    timeoutMs: 30_000,
    intervalMs: 500,
  });
  // Scraped before and after: the counters' increase, and so rate(), is what the event below adds.
  await new Promise((r) => setTimeout(r, 2000));
  // A reload that changes nothing (sef_config_reloads_total{outcome="unchanged"}), while scraped.
  child.child.kill('SIGHUP');
  await waitFor(
    () =>
      jsonLines(child.stderr()).some(
        (l) => l.msg === 'configuration reloaded: nothing changed, nothing done',
      ),
    'the forwarder reloading its configuration on SIGHUP',
  );
  // A maintenance event: records for every sink (the webhook's attempts fail) and, through the hub, the fleet.
  sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
  await waitFor(
    async () =>
      (await count('sef_fleet_records_total{result="accepted"} > 0')) === 1 &&
      (await count('sef_delivery_failures_total{sink="hook"} > 0')) > 0 &&
      (await count('sef_deliveries_total{sink="file"} > 0')) === 1 &&
      (await count('sef_sink_paused{sink="refused"} == 1')) === 1 &&
      (await count('sef_dead_letters_dropped_total{sink="rejected"} > 0')) === 1 &&
      (await count('sef_config_reloads_total{outcome="unchanged"} > 0')) === 1,
    'the record delivered to the file and the hub, ingested by the fleet, failing on the webhook, pausing the ' +
      "refused sink and dropped from the rejected sink's dead letters, and the reload (as scraped)",
    { timeoutMs: 45_000, intervalMs: 500 },
  );
  // A few more scrapes, so rate() over the window has samples on both sides of the changes.
  await new Promise((r) => setTimeout(r, 3000));
}, 180_000);

afterAll(async () => {
  await prometheus?.stop();
  await new Promise((r) => (receiver === undefined ? r(undefined) : receiver.close(r)));
  for (const c of [forwarder, fleet]) {
    if (c && c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  }
  await Promise.allSettled([forwarder?.exited, fleet?.exited]);
  await double?.close();
  await sim?.close();
  await azurite?.close();
  tmp.cleanup();
});

/**
 * Grafana's escaping of a Prometheus variable value (prometheusSpecialRegexEscape): each regex metacharacter
 * gets a backslash, itself escaped for the PromQL string: `127.0.0.1:9464` is sent as `127\\.0\\.0\\.1:9464`.
 */
const escapeRegex = (v: string) => v.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}[\]'+?.()|]/g, '\\\\$&');

/**
 * The Prometheus data source's interpolation: "All" becomes the variable's allValue; one value its regex-escaped
 * text, several `(a|b)`; Grafana's interval variables the fixed durations.
 */
function render(expr: string, values: ReadonlyMap<string, readonly string[]>): string {
  const withIntervals = expr.replace(
    /\$(__rate_interval|__range|__interval)\b/g,
    (_w, n: string) => INTERVALS[n]!,
  );
  return interpolate(withIntervals, values, (selected, name) => {
    const variable = variables.find((v) => v.name === name) as Variable & { allValue?: string };
    if (selected.length === 1 && selected[0] === '$__all') return variable.allValue ?? '.*';
    const escaped = selected.map(escapeRegex);
    return escaped.length === 1 ? escaped[0]! : `(${escaped.join('|')})`;
  });
}

/** label_values(selector, label) through the HTTP API, as Grafana runs it. */
async function labelValues(query: string, values: ReadonlyMap<string, readonly string[]>): Promise<string[]> {
  const m = /^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(query.trim());
  if (m === null) throw new Error(`unsupported variable query ${query}`);
  const selector = render(m[1]!, values);
  return prometheus!.api<string[]>(`label/${m[2]}/values?match[]=${encodeURIComponent(selector)}`);
}

async function evaluate(expr: string): Promise<Series[]> {
  return (
    await prometheus!.api<{ resultType: string; result: Series[] }>(`query?query=${encodeURIComponent(expr)}`)
  ).result;
}

/** Every panel target's expression → how many series it returned. */
async function seriesPerTarget(
  values: ReadonlyMap<string, readonly string[]>,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const panel of panels) {
    for (const target of panel.targets) {
      const expr = render(target.expr, values);
      counts[`${panel.title} [${target.refId}] ${expr}`] = (await evaluate(expr)).length;
    }
  }
  return counts;
}

const atLeastOne = (counts: Record<string, number>) =>
  Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n > 0 ? 'series' : 'NO SERIES']));
const allSeries = (counts: Record<string, number>) =>
  Object.fromEntries(Object.keys(counts).map((k) => [k, 'series']));

describe('forwarder-and-fleet-metrics.json on a real Prometheus scraping a forwarder and a fleet consumer', () => {
  it('has template variable queries that return the scraped targets and sinks', async () => {
    const all = new Map<string, string[]>(
      variables.filter((v) => v.type === 'query').map((v) => [v.name, ['$__all']]),
    );
    const found: Record<string, string[]> = {};
    for (const variable of variables) {
      if (variable.type !== 'query') continue;
      found[variable.name] = (await labelValues(String(variable.query), all)).sort();
    }
    expect(found).toEqual({
      instance: [targets.forwarder],
      sink: ['eventhubs', 'file', 'hook', 'refused', 'rejected'],
      fleet_instance: [targets.fleet],
    });
  });

  it('returns at least one series for every panel expression, every variable at All', async () => {
    const all = new Map<string, string[]>(
      variables.filter((v) => v.type === 'query').map((v) => [v.name, ['$__all']]),
    );
    const counts = await seriesPerTarget(all);
    expect(Object.keys(counts).length).toBe(panels.reduce((n, p) => n + p.targets.length, 0));
    expect(atLeastOne(counts)).toEqual(allSeries(counts));
  });

  it('returns at least one series for every panel expression with one value of each variable selected', async () => {
    const one = new Map<string, string[]>([
      ['instance', [targets.forwarder]],
      ['sink', ['file', 'hook', 'eventhubs', 'refused', 'rejected']],
      ['fleet_instance', [targets.fleet]],
    ]);
    const counts = await seriesPerTarget(one);
    expect(atLeastOne(counts)).toEqual(allSeries(counts));
    // The selection filters: the forwarder panels see only the chosen sinks.
    const narrowed = new Map(one).set('sink', ['hook']);
    const outbox = panels.find((p) => p.title === 'Outbox pending per sink')!;
    const series = await evaluate(render(outbox.targets[0]!.expr, narrowed));
    expect(series.map((s) => s.metric.sink)).toEqual(['hook']);
  });

  it('shows the traffic of the test: the event delivered, retried, paused, dropped, reloaded, ingested by the fleet', async () => {
    const all = new Map<string, string[]>(
      variables.filter((v) => v.type === 'query').map((v) => [v.name, ['$__all']]),
    );
    /** The value of the series with `labels` of a panel target, as a number (NaN when absent). */
    const value = async (title: string, refId: string, labels: Record<string, string> = {}) => {
      const target = panels.find((p) => p.title === title)!.targets.find((t) => t.refId === refId)!;
      const series = (await evaluate(render(target.expr, all))).find((s) =>
        Object.entries(labels).every(([k, v]) => s.metric[k] === v),
      );
      return Number(series?.value[1] ?? Number.NaN);
    };
    const shown = {
      recordsScheduled: await value('Lifecycle records produced by transition', 'A', {
        transition: 'scheduled',
      }),
      fileDeliveries: await value('Deliveries and retries per second by sink', 'A', { sink: 'file' }),
      hookRetries: await value('Deliveries and retries per second by sink', 'B', { sink: 'hook' }),
      hookFailures: await value('Delivery failures per second by sink and code', 'A', { sink: 'hook' }),
      hookPending: await value('Outbox pending per sink', 'A', { sink: 'hook' }),
      fileLatencyP50: await value('Delivery latency per sink (p50 / p90 / p99)', 'A', { sink: 'file' }),
      fleetAccepted: await value('Records ingested per second by result', 'A', { result: 'accepted' }),
      ownedPartitions: await value('Owned partitions per consumer', 'B'),
      blastRadiusThreshold: await value('Affected VMs pending vs blast-radius threshold', 'B'),
      pollAge: await value('Seconds since the last successful IMDS poll', 'A'),
      refusedPaused: await value('Paused sinks', 'A', { sink: 'refused', reason: 'http-403' }),
      hookPaused: await value('Paused sinks', 'A', { sink: 'hook' }),
      rejectedDropped: await value('Dead letters dropped by the cap', 'A', { sink: 'rejected' }),
      fileDropped: await value('Dead letters dropped by the cap', 'A', { sink: 'file' }),
      reloadsUnchanged: await value('Configuration reloads', 'A', { outcome: 'unchanged' }),
      reloadsInvalid: await value('Configuration reloads', 'A', { outcome: 'invalid' }),
      lastReloadRefused: await value('Configuration reloads', 'B'),
    };
    expect(shown).toEqual({
      recordsScheduled: expect.toSatisfy((n: number) => n >= 1),
      fileDeliveries: expect.toSatisfy((n: number) => n > 0),
      hookRetries: expect.toSatisfy((n: number) => n > 0),
      hookFailures: expect.toSatisfy((n: number) => n > 0),
      hookPending: 1,
      fileLatencyP50: expect.toSatisfy((n: number) => n > 0 && n < 60),
      fleetAccepted: expect.toSatisfy((n: number) => n > 0),
      ownedPartitions: 2,
      blastRadiusThreshold: 10,
      pollAge: expect.toSatisfy((n: number) => n >= 0 && n < 30),
      refusedPaused: 1,
      hookPaused: 0, // retrying (connection refused), not paused
      rejectedDropped: expect.toSatisfy((n: number) => n > 0),
      fileDropped: 0,
      reloadsUnchanged: expect.toSatisfy((n: number) => n > 0),
      reloadsInvalid: 0,
      lastReloadRefused: 0,
    });
  });

  it('uses only metrics the forwarder and the fleet consumer export', async () => {
    const names = new Set(
      panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/\bsef_[a-z0-9_]+/g) ?? [])),
    );
    const exported = new Set(
      (await prometheus!.api<string[]>('label/__name__/values')).map((n) =>
        n.replace(/_(bucket|count|sum)$/, ''),
      ),
    );
    for (const name of names) expect(exported, name).toContain(name.replace(/_(bucket|count|sum)$/, ''));
  });
});

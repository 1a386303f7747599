/**
 * packaging/grafana/fleet-history.json against a real PostgreSQL (the run's server, test/support/postgres.ts)
 * holding a synthetic fleet: 300 VMs over 30 days (src/simulator/fleet.ts), ingested through the fleet history
 * (openHistory + ingest, per-partition batches as the consumer sends them) up to a cut-off that leaves events
 * pending, plus a few poison bodies for the rejected table.
 *
 * Grafana does not run here. What is tested: every template variable query and every panel's rawSql, after the
 * variables are interpolated and the macros expanded as Grafana's PostgreSQL data source would
 * (./dashboards.ts names the macros supported), runs and returns the columns the panel expects and at least one
 * row; a few panels are checked against the history's own API and the fleet metrics; both dashboards and the
 * provisioning files are checked for the fields Grafana needs (JSON structure, datasource references).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { readHistoryGauges } from '../../../src/fleet/metrics.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import {
  expandMacros,
  FLEET_HISTORY,
  fleetHistorySchema,
  GRAFANA_DIR,
  interpolate,
  loadFleetHistory,
  loadJson,
  loadMetricsDashboard,
  METRICS_DASHBOARD,
  metricsDashboardSchema,
  provisioning,
  queryPanels,
  type SqlPanel,
  sqlFormat,
  type Variable,
  variablesIn,
} from './dashboards.ts';

/** "Now" of the synthetic fleet: records after it are not ingested, so some events are still pending. */
const CUTOFF = '2026-01-30T00:00:00Z';
const RANGE = { from: new Date('2026-01-01T00:00:00Z'), to: new Date(CUTOFF) };
const PARTITIONS = 4;
const BATCH = 500;

/** The columns each panel's query returns, in order (the panel's field names). */
const EXPECTED_COLUMNS: Record<string, string[]> = {
  'Pending maintenance events': ['pending events', 'affected VMs'],
  'Approvals lapsed in the time range': ['lapsed', 'approved by us'],
  'Ingest counters (lifetime)': ['received', 'accepted', 'duplicates', 'rejected'],
  'Pending now by type and scope': [
    'event_type',
    'location',
    'zone',
    'scale_set',
    'events',
    'affected_vms',
    'next_not_before',
  ],
  'Blast radius: VMs pending per scale set': ['name', 'vms_pending'],
  'Blast radius: VMs pending per region / zone': ['name', 'vms_pending'],
  'Maintenance events per day by type': ['time', 'metric', 'events'],
  'Approvals and lapses per day': ['time', 'metric', 'events'],
  'Notice lead time per type and region': [
    'event_type',
    'location',
    'events',
    'notice_p50',
    'notice_p90',
    'notice_min',
  ],
  'Observed impact vs advertised per type and region': [
    'event_type',
    'location',
    'events',
    'observed_p50',
    'observed_p90',
    'advertised_p50',
  ],
  'Rejected records per day': ['time', 'metric', 'rejected'],
  'Rejected records (newest 100)': ['received_at', 'partition_id', 'sequence_number', 'reason', 'body_start'],
  'Ingest counters per partition': ['partition_id', 'received', 'accepted', 'duplicates', 'rejected'],
  'Silent VMs (no record for $silent_days days before the end of the range)': [
    'vm_name',
    'location',
    'zone',
    'scale_set',
    'last_record_at',
    'silent_days',
    'records',
    'deleted_by_maintenance',
  ],
  'Forwarders by coverage state (at the end of the range)': ['reporting', 'unhealthy', 'silent', 'gone'],
  'VMs covered per day': ['time', 'metric', 'vms'],
  'Silent and unhealthy forwarders (at the end of the range)': [
    'vm_name',
    'location',
    'zone',
    'scale_set',
    'version',
    'state',
    'last_heartbeat',
    'quiet_hours',
    'why',
  ],
};

let history: FleetHistory;
let drop: (() => Promise<void>) | undefined;
let clock = RANGE.from;

beforeAll(async () => {
  const db = await createTestDatabase(inject('pgAdminUrl'));
  drop = db.drop;
  history = await openHistory({ database: db.url, now: () => clock });
  // Heartbeats over the last 3 days of the window (2 of them before the cut-off): some forwarders stop, some
  // report problems (the Coverage row).
  const fleet = generateFleet({ vms: 300, days: 30, heartbeatDays: 3 });
  const partitionOf = new Map<string, string>();
  const buffers = new Map<string, RawFleetEvent[]>();
  let sequence = 0;
  const flush = async (partitionId: string) => {
    const batch = buffers.get(partitionId) ?? [];
    if (batch.length === 0) return;
    buffers.set(partitionId, []);
    clock = batch.at(-1)!.enqueuedAt; // ingested as it arrives
    await history.ingest(batch);
  };
  for (const record of fleet.events()) {
    if (record.time >= CUTOFF) break; // events() is in time order
    let partitionId = partitionOf.get(record.source);
    if (partitionId === undefined) {
      partitionId = String(partitionOf.size % PARTITIONS);
      partitionOf.set(record.source, partitionId);
    }
    const buffer = buffers.get(partitionId) ?? [];
    buffers.set(partitionId, buffer);
    buffer.push({ body: record, partitionId, sequenceNumber: sequence++, enqueuedAt: new Date(record.time) });
    if (buffer.length === BATCH) await flush(partitionId);
  }
  for (const partitionId of buffers.keys()) await flush(partitionId);
  // Poison bodies, received on two days.
  for (const [at, body] of [
    ['2026-01-10T12:00:00Z', 'not JSON {'],
    ['2026-01-20T08:30:00Z', { specversion: '1.0', id: 'x', source: 'y', type: 'com.example.other' }],
    ['2026-01-20T09:00:00Z', 'still not JSON'],
  ] as const) {
    clock = new Date(at);
    await history.ingest([{ body, partitionId: '1', sequenceNumber: sequence++, enqueuedAt: clock }]);
  }
  clock = new Date(CUTOFF);
}, 120_000);

afterAll(async () => {
  await history?.close();
  await drop?.();
});

const dashboard = loadFleetHistory();
const variables = dashboard.templating.list;
const panels = queryPanels<SqlPanel>(dashboard);

/** Runs one statement on the history's PostgreSQL; returns its column names and rows. */
async function query(sql: string): Promise<{ columns: string[]; rows: Record<string, unknown>[] }> {
  const rows = await history.db.all(sql);
  // history.db.all returns objects keyed by column name, in the statement's column order.
  return { columns: rows.length > 0 ? Object.keys(rows[0]!) : [], rows };
}

/** The SQL Grafana would send for `sql` with the variables' `values` in the test's time range. */
function render(sql: string, values: ReadonlyMap<string, readonly string[]>): string {
  return expandMacros(interpolate(sql, values, sqlFormat(variables)), RANGE);
}

/**
 * Every variable's values as a dashboard opened with its defaults has them: query variables run (in order:
 * later ones may use earlier ones) and, being at "All", take every value returned; custom variables their
 * current value.
 */
async function defaultValues(): Promise<Map<string, string[]>> {
  const values = new Map<string, string[]>();
  for (const variable of variables) {
    if (variable.type === 'datasource') continue;
    if (variable.type === 'custom') {
      values.set(variable.name, [String(variable.current.value)]);
      continue;
    }
    const sql = typeof variable.query === 'string' ? variable.query : variable.query.query;
    const { rows } = await query(render(sql, values));
    values.set(
      variable.name,
      rows.map((r) => String(Object.values(r)[0])),
    );
  }
  return values;
}

describe('fleet-history.json on a real PostgreSQL with a synthetic fleet', () => {
  it('has template variable queries that each return values', async () => {
    const values = await defaultValues();
    expect(Object.fromEntries([...values].map(([k, v]) => [k, v.length > 0]))).toEqual({
      event_type: true,
      location: true,
      zone: true,
      scale_set: true,
      silent_days: true,
    });
    expect(values.get('event_type')!.sort()).toEqual([
      'Freeze',
      'Preempt',
      'Reboot',
      'Redeploy',
      'Terminate',
    ]);
    expect(values.get('location')!.sort()).toEqual(['eastus2', 'northeurope', 'westeurope']);
    expect(values.get('zone')).toContain('(none)');
    expect(values.get('scale_set')).toContain('(none)');
  });

  it('runs every panel query: the expected columns and at least one row', async () => {
    const values = await defaultValues();
    expect(panels.map((p) => p.title).sort()).toEqual(Object.keys(EXPECTED_COLUMNS).sort());
    const outcome: Record<string, string> = {};
    for (const panel of panels) {
      for (const target of panel.targets) {
        const sql = render(target.rawSql, values);
        let result: Awaited<ReturnType<typeof query>>;
        try {
          result = await query(sql);
        } catch (error) {
          throw new Error(`${panel.title} (${target.refId}): ${(error as Error).message}\n${sql}`);
        }
        outcome[panel.title] = `${result.columns.join(',')} (${result.rows.length > 0 ? 'rows' : 'no rows'})`;
        if (target.format === 'time_series') {
          // Grafana's time series format: a "time" column, sorted ascending, numeric values.
          const times = result.rows.map((r) => Number(r.time));
          expect(times, panel.title).toEqual([...times].sort((a, b) => a - b));
          expect(
            times.every((t) => t >= RANGE.from.getTime() / 1000 - 86_400),
            panel.title,
          ).toBe(true);
        }
      }
    }
    expect(outcome).toEqual(
      Object.fromEntries(Object.entries(EXPECTED_COLUMNS).map(([t, c]) => [t, `${c.join(',')} (rows)`])),
    );
  });

  it('agrees with the history API and the fleet metrics', async () => {
    const values = await defaultValues();
    const run = async (title: string) => {
      const panel = panels.find((p) => p.title === title)!;
      return (await query(render(panel.targets[0]!.rawSql, values))).rows;
    };
    const pending = await history.pending({}, { limit: 1000 });
    expect(pending.total).toBeGreaterThan(0);
    const [now] = await run('Pending maintenance events');
    expect(Number(now!['pending events'])).toBe(pending.total);
    const byScope = await run('Pending now by type and scope');
    expect(byScope.reduce((n, r) => n + Number(r.events), 0)).toBe(pending.total);

    // The blast-radius bars are the values of sef_fleet_pending_vms{scope="scale_set"} (the non-zero ones).
    const gauges = await readHistoryGauges(history, new Date(CUTOFF));
    const bars = await run('Blast radius: VMs pending per scale set');
    expect(Object.fromEntries(bars.map((r) => [r.name, Number(r.vms_pending)]))).toEqual(
      Object.fromEntries(Object.entries(gauges.pendingVms.scale_set).filter(([, n]) => n > 0)),
    );

    // Events per day add up to the events first seen in the range.
    const perDay = await run('Maintenance events per day by type');
    const [inRange] = await history.db.all(
      'SELECT count(*) AS n FROM maintenance WHERE first_seen_at >= ? AND first_seen_at <= ?',
      [RANGE.from.toISOString(), RANGE.to.toISOString()],
    );
    expect(perDay.reduce((n, r) => n + Number(r.events), 0)).toBe(Number(inRange!.n));

    // Coverage: the states the API and the metrics report (now = the end of the range).
    const coverage = await history.coverage();
    expect(coverage.byState.silent + coverage.byState.unhealthy).toBeGreaterThan(0);
    const [states] = await run('Forwarders by coverage state (at the end of the range)');
    expect(Object.fromEntries(Object.entries(states!).map(([k, v]) => [k, Number(v)]))).toEqual(
      coverage.byState,
    );
    expect(gauges.forwarders).toEqual(coverage.byState);
    const listed = await run('Silent and unhealthy forwarders (at the end of the range)');
    expect(listed.map((r) => r.vm_name).sort()).toEqual(
      [...coverage.silent.items, ...coverage.unhealthy.items].map((v) => v.vmName).sort(),
    );
    const [covered] = await history.db.all('SELECT count(DISTINCT source) AS n FROM coverage_days');
    const perDayCovered = await run('VMs covered per day');
    expect(
      Math.max(...perDayCovered.filter((r) => r.metric === 'covered').map((r) => Number(r.vms))),
    ).toBeLessThanOrEqual(Number(covered!.n));

    const rejected = await run('Rejected records (newest 100)');
    expect(rejected.map((r) => r.reason)).toHaveLength(3);
    const ingest = (await run('Ingest counters (lifetime)'))[0]!;
    const stats = await history.stats();
    expect([ingest.received, ingest.accepted, ingest.duplicates, ingest.rejected].map(Number)).toEqual([
      stats.received,
      stats.accepted,
      stats.duplicates,
      stats.rejected,
    ]);
  });

  it('narrows every panel by the variables (one event type, one region)', async () => {
    const values = await defaultValues();
    values.set('event_type', ['Freeze']);
    values.set('location', ['westeurope']);
    const perDay = panels.find((p) => p.title === 'Maintenance events per day by type')!;
    const rows = (await query(render(perDay.targets[0]!.rawSql, values))).rows;
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.metric))).toEqual(new Set(['Freeze']));
    const notice = panels.find((p) => p.title === 'Notice lead time per type and region')!;
    const lead = (await query(render(notice.targets[0]!.rawSql, values))).rows;
    expect(lead.map((r) => [r.event_type, r.location])).toEqual([['Freeze', 'westeurope']]);
    for (const panel of panels) {
      for (const target of panel.targets) await query(render(target.rawSql, values)); // still valid SQL
    }
  });
});

describe('dashboard JSON structure (the fields Grafana needs to import them)', () => {
  const dashboards = [
    { file: FLEET_HISTORY, schema: fleetHistorySchema, plugin: 'grafana-postgresql-datasource' },
    { file: METRICS_DASHBOARD, schema: metricsDashboardSchema, plugin: 'prometheus' },
  ] as const;

  for (const { file, schema, plugin } of dashboards) {
    describe(file.slice(GRAFANA_DIR.length + 1), () => {
      const parsed = schema.safeParse(loadJson(file));
      it('matches the dashboard schema', () => {
        expect(parsed.error?.issues ?? []).toEqual([]);
      });
      if (!parsed.success) return;
      const d = parsed.data;
      const all = d.panels as Array<{
        id: number;
        type: string;
        gridPos: { x: number; y: number; w: number; h: number };
      }>;

      it('has unique panel ids and panels that do not overlap', () => {
        expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
        const cells = new Map<string, number>();
        for (const p of all) {
          for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
            for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
              const other = cells.get(`${x},${y}`);
              expect(other, `panel ${p.id} overlaps panel ${other} at ${x},${y}`).toBeUndefined();
              cells.set(`${x},${y}`, p.id);
            }
          }
        }
      });

      it('refers to its data source through the datasource variable, which __inputs sets on import', () => {
        const input = d.__inputs[0]!;
        expect(d.__inputs).toHaveLength(1);
        expect(input.pluginId).toBe(plugin);
        const dsVariable = d.templating.list.find((v) => v.type === 'datasource');
        expect(dsVariable?.query).toBe(plugin);
        expect(dsVariable?.current.value).toBe(`\${${input.name}}`);
        const ref = { type: plugin, uid: `\${${dsVariable!.name}}` };
        for (const p of queryPanels<SqlPanel>(d)) {
          expect(p.datasource, p.title).toEqual(ref);
          for (const t of p.targets) expect(t.datasource, `${p.title} ${t.refId}`).toEqual(ref);
        }
        for (const v of d.templating.list) if (v.type === 'query') expect(v.datasource, v.name).toEqual(ref);
        expect(d.__requires.some((r) => r.type === 'datasource' && r.id === plugin)).toBe(true);
      });

      it('uses only variables it defines, each after the variables it depends on', () => {
        const names = d.templating.list.map((v) => v.name);
        expect(new Set(names).size).toBe(names.length);
        d.templating.list.forEach((v: Variable, i) => {
          const text = v.type === 'query' ? JSON.stringify(v.query) : '';
          for (const used of variablesIn(text))
            expect(names.slice(0, i), `${v.name} uses $${used}`).toContain(used);
        });
        type AnyPanel = {
          title: string;
          description: string;
          targets: Array<{ rawSql?: string; expr?: string }>;
        };
        for (const p of queryPanels<AnyPanel & { type: string }>(d)) {
          const text = `${p.title} ${p.description} ${p.targets.map((t) => t.rawSql ?? t.expr).join(' ')}`;
          for (const used of variablesIn(text)) expect(names, `${p.title} uses $${used}`).toContain(used);
        }
      });
    });
  }
});

describe('provisioning files', () => {
  const datasources = readdirSync(join(GRAFANA_DIR, 'provisioning', 'datasources')).flatMap(
    (f) => (provisioning('datasources', f).datasources ?? []) as Array<Record<string, unknown>>,
  );
  const providers = readdirSync(join(GRAFANA_DIR, 'provisioning', 'dashboards')).flatMap(
    (f) => (provisioning('dashboards', f).providers ?? []) as Array<Record<string, unknown>>,
  );

  it('provision a data source of each plugin the dashboards use, with a fixed uid', () => {
    const types = datasources.map((ds) => ds.type);
    expect(types.sort()).toEqual(['grafana-postgresql-datasource', 'prometheus']);
    for (const ds of datasources) {
      expect(ds.uid, String(ds.name)).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
      expect(ds.name).toEqual(expect.any(String));
      expect(ds.access).toBe('proxy');
    }
    const pg = datasources.find((ds) => ds.type === 'grafana-postgresql-datasource')!;
    // The password comes from the environment, never from the file.
    expect((pg.secureJsonData as Record<string, string>).password).toMatch(/^\$\{[A-Z_]+\}$/);
    expect(readFileSync(join(GRAFANA_DIR, 'provisioning', 'datasources', 'sef.yaml'), 'utf8')).not.toMatch(
      /password:\s*[^$\s]/,
    );
  });

  it('point a file provider at the directory holding both dashboards', () => {
    expect(providers).toHaveLength(1);
    const provider = providers[0]!;
    expect(provider.type).toBe('file');
    const options = provider.options as { path: string };
    expect(options.path).toEqual(expect.any(String));
    // The documented layout: the dashboards' JSON files are copied (or mounted) into options.path.
    const docs = readFileSync(join(GRAFANA_DIR, '..', '..', 'docs', 'observability.md'), 'utf8');
    expect(docs.includes(options.path), `docs/observability.md names ${options.path}`).toBe(true);
    expect(loadFleetHistory().uid).not.toBe(loadMetricsDashboard().uid);
  });
});

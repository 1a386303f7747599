/**
 * The fleet views as exact SQL over the maintenance and observation rows — what src/fleet/history answered before
 * the rollups (issue 35): every aggregate read every event of the window. Kept as the test oracle the rollups are
 * compared with (test/integration/fleet/rollups.test.ts) on random histories, on both stores.
 */
import {
  ALL_REGIONS,
  type EventFilter,
  type FleetSummary,
  ingestStats,
  type LeadTimeAndImpact,
  type LeadTimeRow,
  listPending,
  type Spread,
  SUMMARY_PENDING_LIMIT,
  sqlWhere,
  type TimeSeries,
  type TimeSeriesDay,
  type ValueField,
  type Where,
  where,
} from '../../src/fleet/history/index.ts';
import { type SqlExecutor, toNumber, toNumberOrNull } from '../../src/fleet/history/sql.ts';
import { blastRadiusByQuery } from '../../src/fleet/history/views.ts';

const UNKNOWN_TYPE = '(unknown)';
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

// Summary

const STATUSES = ['scheduled', 'started', 'completed', 'canceled'] as const;
const APPROVALS = ['us', 'dry-run', 'lapsed', 'none'] as const;
const DISTRIBUTION_COLUMNS = ['notice_seconds', 'advertised_seconds', 'observed_seconds'] as const;
const TRANSITION_NAMES = ['approved', 'canceled', 'completed', 'scheduled', 'started', 'updated'] as const;

/** Non-zero counts, keys sorted. */
function nonZero(entries: Iterable<[string, number]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of entries) if (n > 0) out[k] = (out[k] ?? 0) + n;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Nearest-rank p50 and p90 of a column in one sorted pass (row_number() over the window's values), given the
 * number of non-null values.
 */
async function percentiles(
  db: SqlExecutor,
  column: string,
  w: Where,
): Promise<{ p50: number | null; p90: number | null }> {
  // Nearest-rank percentiles, ceil(p × n / 100) in integer arithmetic both stores share; the count comes with
  // the ranking, so this statement does not wait for the totals.
  const rank = (p: number, n: string) => `(${p} * ${n} + 99) / 100`;
  const rows = await db.all(
    `SELECT v, rn, n FROM (
       SELECT m.${column} AS v, row_number() OVER (ORDER BY m.${column}) AS rn, count(*) OVER () AS n
       FROM maintenance m ${sqlWhere(w, [`m.${column} IS NOT NULL`])}
     ) ranked WHERE rn = ${rank(50, 'n')} OR rn = ${rank(90, 'n')}`,
    w.params,
  );
  const n = toNumber(rows[0]?.n);
  const at = (p: number) => {
    const r = Math.floor((p * n + 99) / 100);
    return toNumberOrNull(rows.find((row) => toNumber(row.rn) === r)?.v);
  };
  return rows.length === 0 ? { p50: null, p90: null } : { p50: at(50), p90: at(90) };
}

/**
 * Summary of the maintenance events matching `filter`, computed in the database: one pass for the totals (with
 * the fixed-vocabulary status and approval counts and each distribution's count/min/max/mean), one GROUP BY for
 * type × region × zone × scale set, one for inferred endings, one sorted pass per distribution for its
 * percentiles. The statements are independent and issued together (PostgreSQL runs them on several pooled
 * connections, SQLite on its reader threads).
 */
export async function exactSummary(
  db: SqlExecutor,
  filter: EventFilter = {},
  now: Date = new Date(),
): Promise<Omit<FleetSummary, 'coveredVms'>> {
  const w = where(filter, 'm');
  const sum = (expression: string, alias: string) => `coalesce(sum(${expression}), 0) AS ${alias}`;
  const columns = [
    'count(*) AS events',
    sum('m.affected_vms', 'affected'),
    sum('m.records', 'records'),
    ...TRANSITION_NAMES.map((t) => sum(`m.n_${t}`, `n_${t}`)),
    sum("CASE WHEN m.missing <> '[]' THEN 1 ELSE 0 END", 'missing'),
    sum('m.vm_deleted', 'vm_deleted'),
    ...STATUSES.map((st) =>
      sum(`CASE WHEN m.vm_deleted = 0 AND m.status = '${st}' THEN 1 ELSE 0 END`, `s_${st}`),
    ),
    ...APPROVALS.map((a, i) => sum(`CASE WHEN m.approval = '${a}' THEN 1 ELSE 0 END`, `a_${i}`)),
    sum(
      'CASE WHEN m.advertised_seconds IS NOT NULL AND m.observed_seconds IS NOT NULL THEN 1 ELSE 0 END',
      'compared',
    ),
    sum('CASE WHEN m.observed_seconds > m.advertised_seconds THEN 1 ELSE 0 END', 'exceeded'),
    ...DISTRIBUTION_COLUMNS.flatMap((c) => [
      `count(m.${c}) AS ${c}_n`,
      `min(m.${c}) AS ${c}_min`,
      `max(m.${c}) AS ${c}_max`,
      `avg(m.${c}) AS ${c}_mean`,
    ]),
  ];
  const orLabel = (column: string, label: string) =>
    `CASE WHEN m.${column} = '' THEN '${label}' ELSE m.${column} END`;
  const [
    totalsRows,
    groups,
    inferred,
    vmsRows,
    reportingRows,
    retentionRows,
    oldestRows,
    ingest,
    pending,
    ranked,
  ] = await Promise.all([
    db.all(`SELECT ${columns.join(', ')} FROM maintenance m ${sqlWhere(w)}`, w.params),
    db.all(
      `SELECT m.event_type AS t, ${orLabel('location', '(unknown)')} AS l, ${orLabel('zone', '(none)')} AS z,
           ${orLabel('scale_set', '(none)')} AS s, count(*) AS n
         FROM maintenance m ${sqlWhere(w)} GROUP BY m.event_type, m.location, m.zone, m.scale_set`,
      w.params,
    ),
    db.all(
      `SELECT coalesce(m.reason, '(unknown)') AS k, count(*) AS n FROM maintenance m
         ${sqlWhere(w, ['m.inferred = 1'])} GROUP BY coalesce(m.reason, '(unknown)')`,
      w.params,
    ),
    // From the window's maintenance rows to their affected observations (covering index
    // observations_affected). CROSS JOIN keeps that order in SQLite, whose planner would otherwise scan every
    // observation for the DISTINCT; in PostgreSQL it is an ordinary inner join.
    db.all(
      `SELECT count(DISTINCT o.source) AS n FROM maintenance m CROSS JOIN observations o
         ${sqlWhere(w, ['o.event_id = m.event_id', 'o.occurrence = m.occurrence', 'o.affects_vm = 1'])}`,
      w.params,
    ),
    db.all('SELECT count(*) AS n FROM vms'),
    db.all("SELECT value FROM history_settings WHERE name = 'retention'"),
    db.all('SELECT min(first_seen_at) AS t FROM maintenance'),
    ingestStats(db),
    listPending(db, filter, { limit: SUMMARY_PENDING_LIMIT }),
    Promise.all(DISTRIBUTION_COLUMNS.map((c) => percentiles(db, c, w))),
  ]);
  const totals = totalsRows[0] ?? {};
  const distribution = (
    c: (typeof DISTRIBUTION_COLUMNS)[number],
    p: { p50: number | null; p90: number | null },
  ) => {
    const count = toNumber(totals[`${c}_n`]);
    const mean = toNumberOrNull(totals[`${c}_mean`]);
    return count === 0
      ? { count: 0, min: null, p50: null, p90: null, max: null, mean: null }
      : {
          count,
          min: toNumberOrNull(totals[`${c}_min`]),
          p50: p.p50,
          p90: p.p90,
          max: toNumberOrNull(totals[`${c}_max`]),
          mean: mean === null ? null : Math.round(mean * 1000) / 1000,
        };
  };
  const by = (key: 't' | 'l' | 'z' | 's') =>
    nonZero(groups.map((g) => [String(g[key] ?? ''), toNumber(g.n)]));
  const oldest = oldestRows[0]?.t;
  return {
    filter,
    generatedAt: now.toISOString(),
    retention: retentionRows[0] === undefined ? null : String(retentionRows[0].value),
    oldestEventAt: oldest === null || oldest === undefined ? null : String(oldest),
    ingest,
    events: toNumber(totals.events),
    vms: toNumber(vmsRows[0]?.n),
    affectedVmEvents: toNumber(totals.affected),
    reportingVms: toNumber(reportingRows[0]?.n),
    records: toNumber(totals.records),
    byStatus: nonZero([
      ...STATUSES.map((st): [string, number] => [st, toNumber(totals[`s_${st}`])]),
      ['vm-deleted', toNumber(totals.vm_deleted)],
    ]),
    byType: by('t'),
    byTransition: nonZero(TRANSITION_NAMES.map((t) => [t, toNumber(totals[`n_${t}`])])),
    byLocation: by('l'),
    byZone: by('z'),
    byScaleSet: by('s'),
    noticeSeconds: distribution('notice_seconds', ranked[0]!),
    advertisedSeconds: distribution('advertised_seconds', ranked[1]!),
    observedSeconds: distribution('observed_seconds', ranked[2]!),
    impactVsAdvertised: { compared: toNumber(totals.compared), exceeded: toNumber(totals.exceeded) },
    approvals: nonZero(APPROVALS.map((a, i) => [a, toNumber(totals[`a_${i}`])])),
    inferredEndings: nonZero(inferred.map((r) => [String(r.k), toNumber(r.n)])),
    missingTransitions: toNumber(totals.missing),
    vmDeleted: toNumber(totals.vm_deleted),
    pendingTotal: pending.total,
    pending: pending.items,
  };
}

// Time series

/** One GROUP BY day × type over the window (at most days × types rows). */
export async function exactTimeSeries(
  db: SqlExecutor,
  filter: EventFilter = {},
): Promise<Omit<TimeSeries, 'coveredVms'>> {
  const w = where(filter, 'm');
  const day = 'substr(m.first_seen_at, 1, 10)';
  const rows = await db.all(
    `SELECT ${day} AS d, m.event_type AS t, count(*) AS n, coalesce(sum(m.affected_vms), 0) AS a,
       count(m.observed_seconds) AS oc, coalesce(sum(m.observed_seconds), 0) AS os, max(m.observed_seconds) AS om
     FROM maintenance m ${sqlWhere(w)}
     GROUP BY ${day}, m.event_type ORDER BY 1, 2`,
    w.params,
  );
  const days: TimeSeriesDay[] = [];
  const types = new Set<string>();
  for (const row of rows) {
    const d = String(row.d);
    let current = days.at(-1);
    if (current === undefined || current.day !== d) {
      current = {
        day: d,
        events: 0,
        byType: {},
        affectedVms: 0,
        observedEvents: 0,
        observedSecondsSum: 0,
        observedSecondsMax: null,
      };
      days.push(current);
    }
    const type = String(row.t ?? '') || UNKNOWN_TYPE;
    const n = toNumber(row.n);
    types.add(type);
    current.events += n;
    current.byType[type] = (current.byType[type] ?? 0) + n;
    current.affectedVms += toNumber(row.a);
    current.observedEvents += toNumber(row.oc);
    current.observedSecondsSum = round3(current.observedSecondsSum + toNumber(row.os));
    const max = toNumberOrNull(row.om);
    if (max !== null && (current.observedSecondsMax === null || max > current.observedSecondsMax))
      current.observedSecondsMax = max;
  }
  return { filter, types: [...types].sort(), days };
}

const round3 = (v: number) => Math.round(v * 1000) / 1000;

// Blast radius

/**
 * The blast radius as one exact query over the window's affected observations: the source's own sweep
 * (blastRadiusByQuery, views.ts), which every filter beyond the window still takes — pending VMs per scope and
 * the maximum at once as a running sum over the window's impact intervals, no rollup involved. The rollups'
 * answer (blastRadius with a window alone: impact slots and a branch and bound) is compared with it.
 */
export const exactBlastRadius = blastRadiusByQuery;

// Lead time

const MEASURES = { notice: 'notice_seconds', observed: 'observed_seconds' } as const;

/**
 * Notice lead time and observed impact per event type and region (and per type over all regions): count, p50,
 * p90 (nearest rank: the value at rank ceil(p·n/100), as the summary's percentiles) and max. One statement:
 * row_number() and count() over each (measure, type, region) partition of the window's non-null values, the
 * ranks picked out by a GROUP BY; a second counts the events per group.
 */
export async function exactLeadTimeAndImpact(
  db: SqlExecutor,
  filter: EventFilter = {},
): Promise<Omit<LeadTimeAndImpact, 'coveredVms'>> {
  const w = where(filter, 'm');
  const ranked = (measure: keyof typeof MEASURES, byRegion: boolean) => {
    const column = `m.${MEASURES[measure]}`;
    const partition = byRegion ? 'm.event_type, m.location' : 'm.event_type';
    return `SELECT '${measure}' AS k, m.event_type AS t, ${byRegion ? 'm.location' : 'NULL'} AS l, ${column} AS v,
        row_number() OVER (PARTITION BY ${partition} ORDER BY ${column}) AS rn,
        count(*) OVER (PARTITION BY ${partition}) AS n
      FROM maintenance m ${sqlWhere(w, [`${column} IS NOT NULL`])}`;
  };
  const parts = [
    ranked('notice', true),
    ranked('observed', true),
    ranked('notice', false),
    ranked('observed', false),
  ];
  const [spreads, counts] = await Promise.all([
    db.all(
      `SELECT k, t, l, n, max(CASE WHEN rn = (50 * n + 99) / 100 THEN v END) AS p50,
         max(CASE WHEN rn = (90 * n + 99) / 100 THEN v END) AS p90, max(v) AS mx
       FROM (${parts.join(' UNION ALL ')}) r GROUP BY k, t, l, n`,
      parts.flatMap(() => w.params),
    ),
    db.all(
      `SELECT m.event_type AS t, m.location AS l, count(*) AS n FROM maintenance m ${sqlWhere(w)}
       GROUP BY m.event_type, m.location`,
      w.params,
    ),
  ]);
  const empty = (): Spread => ({ count: 0, p50: null, p90: null, max: null });
  const groups = new Map<string, LeadTimeRow>();
  const group = (type: unknown, location: unknown): LeadTimeRow => {
    const eventType = String(type ?? '') || UNKNOWN_TYPE;
    const region =
      location === null || location === undefined ? ALL_REGIONS : String(location) || '(unknown)';
    const key = `${eventType}\u0000${region}`;
    let row = groups.get(key);
    if (row === undefined) {
      row = { eventType, location: region, events: 0, notice: empty(), observed: empty() };
      groups.set(key, row);
    }
    return row;
  };
  for (const c of counts) {
    const n = toNumber(c.n);
    group(c.t, c.l).events += n;
    group(c.t, null).events += n;
  }
  for (const s of spreads) {
    const row = group(s.t, s.l);
    row[String(s.k) as keyof typeof MEASURES] = {
      count: toNumber(s.n),
      p50: toNumberOrNull(s.p50),
      p90: toNumberOrNull(s.p90),
      max: toNumberOrNull(s.mx),
    };
  }
  const rank = (r: LeadTimeRow) => (r.location === ALL_REGIONS ? '' : r.location);
  const rows = [...groups.values()].sort((a, b) => cmp(a.eventType, b.eventType) || cmp(rank(a), rank(b)));
  return { filter, rows };
}

// Filter values

/** Distinct values of one filter field, from the events and VMs themselves. */
export async function exactValues(db: SqlExecutor, field: ValueField): Promise<string[]> {
  const sql: Record<ValueField, string> = {
    type: 'SELECT DISTINCT event_type AS v FROM maintenance ORDER BY 1',
    location: 'SELECT DISTINCT location AS v FROM vms ORDER BY 1',
    zone: 'SELECT DISTINCT zone AS v FROM vms ORDER BY 1',
    scaleSet: 'SELECT DISTINCT scale_set AS v FROM vms ORDER BY 1',
    status: 'SELECT DISTINCT status AS v FROM maintenance ORDER BY 1',
  };
  const rows = await db.all(sql[field]);
  const values = rows.map((r) => String(r.v ?? ''));
  if (field === 'zone' || field === 'scaleSet') return values.map((v) => (v === '' ? '(none)' : v));
  return values.filter((v) => v !== '');
}

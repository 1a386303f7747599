/**
 * The read side of the fleet history, in SQL both stores run: aggregations happen in the database, every list
 * is paged (keyset cursor, no OFFSET scans), and every filter the dashboard and `fleet report` offer has an
 * index. Counts are of maintenance events (EventId + occurrence, once fleet-wide) and the VMs they affect;
 * per-VM views (observations, timelines) show what each VM reported.
 */
import { approvalRecordPosted } from '../../domain/index.ts';
import { decodeBody } from './body.ts';
import { type MaintenanceView, maintenanceView, type ObservationView, observationView } from './rows.ts';
import { type SqlExecutor, type SqlValue, toNumber, toNumberOrNull } from './sql.ts';

/** Filters shared by the dashboard, the API, the exports and `fleet report`. Times are ISO 8601. */
export interface EventFilter {
  /** first seen at or after */
  since?: string | undefined;
  /** first seen before */
  until?: string | undefined;
  eventType?: string | undefined;
  location?: string | undefined;
  zone?: string | undefined;
  scaleSet?: string | undefined;
  status?: string | undefined;
  /** Case-insensitive substring of an affected VM's name (observations: of the reporting VM's name). */
  vm?: string | undefined;
  /** Observations only: just the VMs the event affects (leave out observers). */
  affectsOnly?: boolean | undefined;
}

/** A page of a list and the cursor of the next one (null on the last page). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Paging of a list: at most `limit` items after `cursor` (from the previous page's nextCursor). */
export interface PageRequest {
  limit?: number | undefined;
  cursor?: string | undefined;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** A cursor that is not one this server handed out. */
export class InvalidCursorError extends Error {
  constructor() {
    super('cursor is not valid: pass the nextCursor of the previous page unchanged');
    this.name = 'InvalidCursorError';
  }
}

/** Internal to the history's queries (also views.ts). */
export function encodeCursor(values: readonly SqlValue[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** Internal to the history's queries (also views.ts). */
export function decodeCursor(cursor: string, length: number): SqlValue[] {
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(values) &&
      values.length === length &&
      values.every((v) => typeof v === 'string' || typeof v === 'number')
    )
      return values as SqlValue[];
  } catch {
    // falls through
  }
  throw new InvalidCursorError();
}

/** Internal to the history's queries (also views.ts). */
export function pageSize(request: PageRequest): number {
  const limit = request.limit ?? DEFAULT_PAGE_SIZE;
  return Math.min(Math.max(1, Math.trunc(limit)), MAX_PAGE_SIZE);
}

/** Internal to the history's queries (also views.ts). */
export interface Where {
  clauses: string[];
  params: SqlValue[];
}

/** WHERE clauses of `filter` over the maintenance table (`m.`) or the observations table (`o.`). */
export function where(filter: EventFilter, alias: 'm' | 'o'): Where {
  const w: Where = { clauses: [], params: [] };
  const add = (clause: string, value: SqlValue) => {
    w.clauses.push(clause);
    w.params.push(value);
  };
  if (filter.since) add(`${alias}.first_seen_at >= ?`, new Date(filter.since).toISOString());
  if (filter.until) add(`${alias}.first_seen_at < ?`, new Date(filter.until).toISOString());
  if (filter.eventType) add(`${alias}.event_type = ?`, filter.eventType);
  if (filter.location) add(`${alias}.location = ?`, filter.location);
  if (filter.zone) add(`${alias}.zone = ?`, filter.zone === '(none)' ? '' : filter.zone);
  if (filter.scaleSet) add(`${alias}.scale_set = ?`, filter.scaleSet === '(none)' ? '' : filter.scaleSet);
  if (filter.status === 'vm-deleted') w.clauses.push(`${alias}.vm_deleted = 1`);
  else if (filter.status) add(`${alias}.status = ?`, filter.status);
  if (filter.vm) {
    const column = alias === 'm' ? 'm.affected_names' : 'o.vm_name';
    // '!' escapes LIKE's wildcards the same way in both stores (VM names contain '_').
    add(`lower(${column}) LIKE ? ESCAPE '!'`, `%${filter.vm.toLowerCase().replace(/[!%_]/g, '!$&')}%`);
  }
  if (alias === 'o' && filter.affectsOnly) w.clauses.push('o.affects_vm = 1');
  return w;
}

export const sqlWhere = (w: Where, extra: string[] = []) => {
  const all = [...w.clauses, ...extra];
  return all.length === 0 ? '' : `WHERE ${all.join(' AND ')}`;
};

/** Maintenance events matching `filter`, newest first (each once, with the VMs it affects). */
export async function listMaintenance(
  db: SqlExecutor,
  filter: EventFilter = {},
  request: PageRequest = {},
): Promise<Page<MaintenanceView>> {
  const limit = pageSize(request);
  const w = where(filter, 'm');
  const extra: string[] = [];
  const params = [...w.params];
  if (request.cursor) {
    extra.push('(m.first_seen_at, m.event_id, m.occurrence) < (?, ?, ?)');
    params.push(...decodeCursor(request.cursor, 3));
  }
  const rows = await db.all(
    `SELECT * FROM maintenance m ${sqlWhere(w, extra)}
     ORDER BY m.first_seen_at DESC, m.event_id DESC, m.occurrence DESC LIMIT ?`,
    [...params, limit + 1],
  );
  const items = rows.slice(0, limit).map(maintenanceView);
  const last = items.at(-1);
  return {
    items,
    nextCursor:
      rows.length > limit && last ? encodeCursor([last.firstSeenAt, last.eventId, last.occurrence]) : null,
  };
}

/**
 * Maintenance events pending now (scheduled or started on an affected VM that is not deleted), each once,
 * soonest NotBefore first.
 */
export async function listPending(
  db: SqlExecutor,
  filter: EventFilter = {},
  request: PageRequest = {},
): Promise<Page<MaintenanceView> & { total: number }> {
  const limit = pageSize(request);
  const w = where(filter, 'm');
  const due = 'coalesce(m.not_before, m.first_seen_at)';
  const extra: string[] = [];
  const params = [...w.params];
  if (request.cursor) {
    extra.push(`(${due}, m.event_id, m.occurrence) > (?, ?, ?)`);
    params.push(...decodeCursor(request.cursor, 3));
  }
  // The page and the count are sent together: one wait for the reader thread (SQLite) or two pooled
  // connections at once (PostgreSQL), instead of two round trips in a row.
  const [rows, [count]] = await Promise.all([
    db.all(
      `SELECT * FROM maintenance m ${sqlWhere(w, ['m.pending = 1', ...extra])}
       ORDER BY ${due}, m.event_id, m.occurrence LIMIT ?`,
      [...params, limit + 1],
    ),
    db.all(`SELECT count(*) AS n FROM maintenance m ${sqlWhere(w, ['m.pending = 1'])}`, w.params),
  ]);
  const items = rows.slice(0, limit).map(maintenanceView);
  const last = items.at(-1);
  return {
    items,
    total: toNumber(count?.n),
    nextCursor:
      rows.length > limit && last
        ? encodeCursor([last.notBefore ?? last.firstSeenAt, last.eventId, last.occurrence])
        : null,
  };
}

/** What each VM reported (one row per VM and event), newest first. */
export async function listObservations(
  db: SqlExecutor,
  filter: EventFilter = {},
  request: PageRequest = {},
): Promise<Page<ObservationView>> {
  const limit = pageSize(request);
  const w = where(filter, 'o');
  const extra: string[] = [];
  const params = [...w.params];
  if (request.cursor) {
    extra.push('(o.first_seen_at, o.event_id, o.occurrence, o.source) < (?, ?, ?, ?)');
    params.push(...decodeCursor(request.cursor, 4));
  }
  const rows = await db.all(
    `SELECT * FROM observations o ${sqlWhere(w, extra)}
     ORDER BY o.first_seen_at DESC, o.event_id DESC, o.occurrence DESC, o.source DESC LIMIT ?`,
    [...params, limit + 1],
  );
  const items = rows.slice(0, limit).map(observationView);
  const last = items.at(-1);
  return {
    items,
    nextCursor:
      rows.length > limit && last
        ? encodeCursor([last.firstSeenAt, last.eventId, last.occurrence, last.source])
        : null,
  };
}

/** One maintenance event with every VM's observation of it; undefined when unknown. */
export async function maintenanceDetail(
  db: SqlExecutor,
  eventId: string,
  occurrence = 1,
): Promise<{ event: MaintenanceView; observations: ObservationView[] } | undefined> {
  const [row] = await db.all('SELECT * FROM maintenance WHERE event_id = ? AND occurrence = ?', [
    eventId,
    occurrence,
  ]);
  if (row === undefined) return undefined;
  const observations = await db.all(
    'SELECT * FROM observations WHERE event_id = ? AND occurrence = ? ORDER BY affects_vm DESC, vm_name, source',
    [eventId, occurrence],
  );
  return { event: maintenanceView(row), observations: observations.map(observationView) };
}

/** One record of a VM's timeline. */
export interface TimelineEntry {
  time: string;
  transition: string;
  eventId: string;
  occurrence: number;
  eventType: string;
  id: string;
  detail: string;
}

/** The newest `limit` records of one VM (by CloudEvent source, else by VM name), oldest first. */
export async function vmTimeline(db: SqlExecutor, vm: string, limit = 500): Promise<TimelineEntry[]> {
  const n = Math.min(Math.max(1, Math.trunc(limit)), 5000);
  const select = 'SELECT id, time, transition, event_id, occurrence, event_type, body FROM records';
  let rows = await db.all(`${select} WHERE source = ? ORDER BY time DESC, event_id, occurrence LIMIT ?`, [
    vm,
    n,
  ]);
  if (rows.length === 0)
    rows = await db.all(`${select} WHERE vm_name = ? ORDER BY time DESC, event_id, occurrence LIMIT ?`, [
      vm,
      n,
    ]);
  return rows
    .map((row) => {
      const record = JSON.parse(decodeBody(row.body)) as { data: Record<string, unknown> };
      return {
        time: String(row.time),
        transition: String(row.transition),
        eventId: String(row.event_id),
        occurrence: toNumber(row.occurrence),
        eventType: String(row.event_type),
        id: String(row.id),
        detail: timelineDetail(String(row.transition), record.data),
      };
    })
    .sort(
      (a, b) =>
        a.time.localeCompare(b.time) ||
        a.eventId.localeCompare(b.eventId) ||
        TRANSITION_ORDER.indexOf(a.transition) - TRANSITION_ORDER.indexOf(b.transition),
    );
}

export const TRANSITION_ORDER = ['scheduled', 'updated', 'approved', 'started', 'completed', 'canceled'];

/** The one-line detail of a record in a timeline (views.ts uses it for an event's records too). */
export function timelineDetail(transition: string, data: Record<string, unknown>): string {
  const timing = (data.timing ?? {}) as Record<string, unknown>;
  switch (transition) {
    case 'scheduled':
      return `NotBefore ${data.notBeforeUtc ?? 'unknown'}, notice ${timing.noticeSeconds ?? '?'} s`;
    case 'updated':
      return `changed ${Array.isArray(data.changed) ? data.changed.join(', ') : '?'}`;
    case 'approved': {
      const a = (data.approval ?? {}) as Record<string, unknown>;
      return `rule ${a.rule ?? '?'}${a.dryRun ? ' (dry run)' : ''}${approvalRecordPosted(data) ? ', posted' : ''}`;
    }
    case 'completed': {
      const i = (data.observedImpact ?? {}) as Record<string, unknown>;
      const parts = [data.inferred ? `inferred (${data.reason})` : 'observed'];
      if (i.downtimeSeconds !== null && i.downtimeSeconds !== undefined)
        parts.push(`downtime ${i.downtimeSeconds} s`);
      if (i.longestStallMs !== null && i.longestStallMs !== undefined)
        parts.push(`stall ${Math.round(Number(i.longestStallMs))} ms`);
      return parts.join(', ');
    }
    default:
      return String(data.EventStatus ?? '');
  }
}

/** A VM that sent records. */
export interface VmView {
  source: string;
  vmName: string;
  vmId: string;
  location: string;
  zone: string;
  scaleSet: string;
  records: number;
  firstRecordAt: string;
  lastRecordAt: string;
}

/** VMs that sent records, by name. */
export async function listVms(db: SqlExecutor, request: PageRequest = {}): Promise<Page<VmView>> {
  const limit = pageSize(request);
  const params: SqlValue[] = [];
  let after = '';
  if (request.cursor) {
    after = 'WHERE (vm_name, source) > (?, ?)';
    params.push(...decodeCursor(request.cursor, 2));
  }
  const rows = await db.all(`SELECT * FROM vms ${after} ORDER BY vm_name, source LIMIT ?`, [
    ...params,
    limit + 1,
  ]);
  const items = rows.slice(0, limit).map((r) => ({
    source: String(r.source),
    vmName: String(r.vm_name),
    vmId: String(r.vm_id),
    location: String(r.location),
    zone: String(r.zone),
    scaleSet: String(r.scale_set),
    records: toNumber(r.records),
    firstRecordAt: String(r.first_record_at),
    lastRecordAt: String(r.last_record_at),
  }));
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.vmName, last.source]) : null };
}

/** Fields whose distinct values fill the dashboard's drop-downs. */
export const VALUE_FIELDS = ['type', 'location', 'zone', 'scaleSet', 'status'] as const;
export type ValueField = (typeof VALUE_FIELDS)[number];

/** Distinct values of one filter field (from the small tables and indexes, never a scan of the history). */
export async function distinctValues(db: SqlExecutor, field: ValueField): Promise<string[]> {
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

/** Distribution of a set of numbers. */
export interface Distribution {
  count: number;
  min: number | null;
  p50: number | null;
  p90: number | null;
  max: number | null;
  mean: number | null;
}

/** Ingest counters over the database's lifetime (every consumer, every partition). */
export interface IngestStats {
  received: number;
  accepted: number;
  duplicates: number;
  rejected: number;
}

export async function ingestStats(db: SqlExecutor): Promise<IngestStats> {
  const rows = await db.all('SELECT name, sum(value) AS v FROM ingest_stats GROUP BY name');
  const get = (n: string) => toNumber(rows.find((r) => r.name === n)?.v ?? 0);
  return {
    received: get('received'),
    accepted: get('accepted'),
    duplicates: get('duplicates'),
    rejected: get('rejected'),
  };
}

/** The summary shown by the dashboard and `fleet report`. */
export interface FleetSummary {
  filter: EventFilter;
  generatedAt: string;
  /** The retention the consumers prune to (e.g. "400d"), or null when never set. */
  retention: string | null;
  /** The oldest first-seen time still kept, or null when the history is empty. */
  oldestEventAt: string | null;
  ingest: IngestStats;
  /** Maintenance events, each counted once however many VMs reported it. */
  events: number;
  /** Distinct VMs affected by those events (among the VMs that reported). */
  vms: number;
  /** Sum over the events of the VMs each affects. */
  affectedVmEvents: number;
  /** VMs whose forwarders have sent anything (all time). */
  reportingVms: number;
  records: number;
  byStatus: Record<string, number>;
  byType: Record<string, number>;
  byTransition: Record<string, number>;
  byLocation: Record<string, number>;
  byZone: Record<string, number>;
  byScaleSet: Record<string, number>;
  noticeSeconds: Distribution;
  advertisedSeconds: Distribution;
  observedSeconds: Distribution;
  /** Events with both an advertised duration and an observed impact: how often reality exceeded the advert. */
  impactVsAdvertised: { compared: number; exceeded: number };
  approvals: Record<string, number>;
  inferredEndings: Record<string, number>;
  missingTransitions: number;
  vmDeleted: number;
  /** Maintenance events pending now (all of them), and the first page of them. */
  pendingTotal: number;
  pending: MaintenanceView[];
}

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
export async function summarize(
  db: SqlExecutor,
  filter: EventFilter = {},
  now: Date = new Date(),
): Promise<FleetSummary> {
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
    listPending(db, filter, { limit: DEFAULT_PAGE_SIZE }),
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

/**
 * The read side of the fleet history, in SQL both stores run: aggregations happen in the database, every list
 * is paged (keyset cursor, no OFFSET scans), and every filter the dashboard and `fleet report` offer has an
 * index. Counts are of maintenance events (EventId + occurrence, once fleet-wide) and the VMs they affect;
 * per-VM views (observations, timelines) show what each VM reported.
 */
import { approvalRecordPosted, TRANSITIONS } from '../../domain/index.ts';
import { decodeBody } from './body.ts';
import { Aggregate, entryOf, STATUSES } from './rollups/aggregate.ts';
import type { Distribution as Measure } from './rollups/distribution.ts';
import {
  bucketsTotal,
  type RollupFilter,
  type RollupView,
  readWindow,
  type WindowRead,
} from './rollups/store.ts';
import { type MaintenanceView, maintenanceView, type ObservationView, observationView } from './rows.ts';
import { type SqlExecutor, type SqlValue, toNumber } from './sql.ts';

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

/**
 * How many pending events the summary (and `fleet report`) lists: the ones due soonest. A summary says how many are
 * pending (`pendingTotal`) and which come next; the whole list is /api/pending, paged. A fixed short list keeps
 * the summary's cost and size the same at any fleet size.
 */
export const SUMMARY_PENDING_LIMIT = 10;
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

/**
 * The newest `limit` records of one VM (by CloudEvent source, else by VM name: the records of the VMs whose latest
 * name it is, from vms_by_name and the records' key), oldest first.
 */
export async function vmTimeline(db: SqlExecutor, vm: string, limit = 500): Promise<TimelineEntry[]> {
  const n = Math.min(Math.max(1, Math.trunc(limit)), 5000);
  const select = 'SELECT id, time, transition, event_id, occurrence, event_type, body FROM records';
  let rows = await db.all(`${select} WHERE source = ? ORDER BY time DESC, event_id, occurrence LIMIT ?`, [
    vm,
    n,
  ]);
  if (rows.length === 0)
    rows = await db.all(
      `${select} WHERE source IN (SELECT source FROM vms WHERE vm_name = ?)
       ORDER BY time DESC, event_id, occurrence LIMIT ?`,
      [vm, n],
    );
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

/**
 * Distinct values of one filter field, from the dimension counts (dimensions.ts), in the store's order of the
 * values, paged like every list (a fleet's scale sets run into the thousands), so an answer holds at most a page
 * however many values there are. The empty value is listed as '(none)' for zone and scale set (first: '' sorts
 * first) and left out for the others.
 */
export async function distinctValues(
  db: SqlExecutor,
  field: ValueField,
  request: PageRequest = {},
): Promise<Page<string>> {
  const limit = pageSize(request);
  const after = request.cursor === undefined ? [] : decodeCursor(request.cursor, 1);
  const rows = await db.all(
    `SELECT value AS v FROM dimension_refs WHERE field = ?${after.length > 0 ? ' AND value > ?' : ''}
     ${field === 'zone' || field === 'scaleSet' ? '' : "AND value <> ''"}
     GROUP BY value HAVING sum(refs) > 0 ORDER BY value LIMIT ${limit + 1}`,
    [field, ...after],
  );
  const values = rows.slice(0, limit).map((r) => String(r.v ?? ''));
  const last = values.at(-1);
  return {
    items: values.map((v) => (v === '' ? '(none)' : v)),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor([last]) : null,
  };
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
  /** Heartbeats received (kept as each VM's latest and its day's coverage, not as records). */
  heartbeats: number;
}

export async function ingestStats(db: SqlExecutor): Promise<IngestStats> {
  const rows = await db.all('SELECT name, sum(value) AS v FROM ingest_stats GROUP BY name');
  const get = (n: string) => toNumber(rows.find((r) => r.name === n)?.v ?? 0);
  return {
    received: get('received'),
    accepted: get('accepted'),
    duplicates: get('duplicates'),
    rejected: get('rejected'),
    heartbeats: get('heartbeats'),
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
  /**
   * VMs whose forwarders sent a heartbeat in the window (in its region / zone / scale set): how much of the
   * fleet this summary covers (docs/fleet.md, Coverage).
   */
  coveredVms: number;
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
  /** Maintenance events pending now (all of them), and the SUMMARY_PENDING_LIMIT of them due soonest. */
  pendingTotal: number;
  pending: MaintenanceView[];
}

const APPROVALS = ['us', 'dry-run', 'lapsed', 'none'] as const;

/** Non-zero counts, keys sorted. */
function nonZero(entries: Iterable<[string, number]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of entries) if (n > 0) out[k] = (out[k] ?? 0) + n;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The part of the shared filter the rollups answer, or undefined when it needs the maintenance rows. */
export function rollupFilter(filter: EventFilter): RollupFilter | undefined {
  // A scale set or a VM name selects events by a dimension the rollups do not key: those views read the
  // window's maintenance rows instead (a scale set's own events; a VM-name search reads every event).
  if (filter.scaleSet || filter.vm) return undefined;
  const time = (v: string | undefined) => (v ? new Date(v).getTime() : null);
  return {
    sinceMs: time(filter.since),
    untilMs: time(filter.until),
    eventType: filter.eventType || undefined,
    location: filter.location || undefined,
    zone: filter.zone ? (filter.zone === '(none)' ? '' : filter.zone) : undefined,
    status: filter.status || undefined,
  };
}

/**
 * The maintenance events of the filter's window as the views aggregate them: from the rollups (rollups/store.ts:
 * whole buckets and the entries of the edge hours), or, for a filter on a scale set or a VM name, the entries of
 * the matching maintenance rows (exact, read through the filter's index). `view` names the rollup rows a
 * filter without dimensions reads ('all', or 'tl' per type and region); `maxLevel` caps the bucket size.
 */
export async function readEvents(
  db: SqlExecutor,
  filter: EventFilter,
  view: RollupView,
  maxLevel?: number,
): Promise<WindowRead> {
  const rf = rollupFilter(filter);
  if (rf !== undefined) return readWindow(db, rf, view, maxLevel);
  const w = where(filter, 'm');
  const [rows, affected] = await Promise.all([
    db.all(`SELECT * FROM maintenance m ${sqlWhere(w)}`, w.params),
    db.all(
      `SELECT o.event_id, o.occurrence, o.source FROM maintenance m CROSS JOIN observations o
         ${sqlWhere(w, ['o.event_id = m.event_id', 'o.occurrence = m.occurrence', 'o.affects_vm = 1'])}`,
      w.params,
    ),
  ]);
  const sources = new Map<string, string[]>();
  for (const row of affected) {
    const k = `${String(row.event_id)}#${toNumber(row.occurrence)}`;
    const list = sources.get(k) ?? [];
    list.push(String(row.source));
    sources.set(k, list);
  }
  return {
    buckets: [],
    entries: rows.map((row) => {
      const m = maintenanceView(row);
      return entryOf(m, sources.get(`${m.eventId}#${m.occurrence}`) ?? []);
    }),
  };
}

/** The Aggregate of a window read: its buckets' and its entries'. */
export function aggregateOf(read: WindowRead): Aggregate {
  const total = new Aggregate();
  if (read.buckets.length > 0) total.merge(bucketsTotal(read));
  for (const e of read.entries) total.add(e);
  return total;
}

/** A distribution as the summary shows it (mean to 3 decimals; p50 and p90 nearest-rank, rollups/distribution.ts). */
export function distributionOf(d: Measure): Distribution {
  return d.count === 0
    ? { count: 0, min: null, p50: null, p90: null, max: null, mean: null }
    : {
        count: d.count,
        min: d.min,
        p50: d.percentile(50),
        p90: d.percentile(90),
        max: d.max,
        mean: Math.round((d.sum / d.count) * 1000) / 1000,
      };
}

const label = (value: string, empty: string) => (value === '' ? empty : value);
const labelled = (map: Map<string, number>, empty: string): Array<[string, number]> =>
  [...map].map(([k, n]) => [label(k, empty), n]);

/**
 * Summary of the maintenance events matching `filter`, from the rollups (rollups/store.ts): the window's
 * buckets and edge hours merged into one Aggregate — what it reads depends on the window's length in buckets,
 * not on the number of events — and, beside it, the pending list, the ingest counters, the retention, the oldest
 * event and the number of reporting VMs, each a small read. Counts, sums, minima, maxima and means are exact;
 * p50 and p90 are exact over at most 256 values and otherwise within 1% (rollups/distribution.ts); the
 * affected VMs are exact up to 2,048 and otherwise a HyperLogLog estimate (standard error 0.81%,
 * rollups/distinct.ts). The statements are independent and issued together.
 */
export async function summarize(
  db: SqlExecutor,
  filter: EventFilter = {},
  now: Date = new Date(),
): Promise<Omit<FleetSummary, 'coveredVms'>> {
  const [read, [misc], ingest, pending] = await Promise.all([
    readEvents(db, filter, 'all'),
    db.all(
      `SELECT (SELECT coalesce(sum(refs), 0) FROM dimension_refs WHERE field = 'vm') AS vms,
         (SELECT value FROM history_settings WHERE name = 'retention') AS retention,
         (SELECT min(first_seen_at) FROM maintenance) AS oldest`,
    ),
    ingestStats(db),
    listPending(db, filter, { limit: SUMMARY_PENDING_LIMIT }),
  ]);
  const a = aggregateOf(read);
  const oldest = misc?.oldest;
  return {
    filter,
    generatedAt: now.toISOString(),
    retention: misc?.retention === null || misc?.retention === undefined ? null : String(misc.retention),
    oldestEventAt: oldest === null || oldest === undefined ? null : String(oldest),
    ingest,
    events: a.events,
    vms: a.vms.count(),
    affectedVmEvents: a.affectedVmEvents,
    reportingVms: toNumber(misc?.vms),
    records: a.records,
    byStatus: nonZero([
      ...STATUSES.map((st): [string, number] => [st, a.byStatus.get(st) ?? 0]),
      ['vm-deleted', a.vmDeleted],
    ]),
    byType: nonZero(a.byType),
    byTransition: nonZero(TRANSITIONS.map((t, i) => [t, a.transitions[i]!])),
    byLocation: nonZero(labelled(a.byLocation, '(unknown)')),
    byZone: nonZero(labelled(a.byZone, '(none)')),
    byScaleSet: nonZero(labelled(a.byScaleSet, '(none)')),
    noticeSeconds: distributionOf(a.notice),
    advertisedSeconds: distributionOf(a.advertised),
    observedSeconds: distributionOf(a.observed),
    impactVsAdvertised: { compared: a.compared, exceeded: a.exceeded },
    approvals: nonZero(APPROVALS.map((ap) => [ap, a.byApproval.get(ap) ?? 0])),
    inferredEndings: nonZero(a.inferredEndings),
    missingTransitions: a.missing,
    vmDeleted: a.vmDeleted,
    pendingTotal: pending.total,
    pending: pending.items,
  };
}

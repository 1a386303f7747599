/**
 * The operator views of the fleet history (the dashboard's time axis, blast radius, lead time and impact, and an
 * event's page), in the SQL both stores run (`sql.ts`): every aggregation happens in the database — days are
 * `substr(first_seen_at, 1, 10)` of the ISO text, percentiles are nearest-rank over row_number() — and only
 * aggregated rows (days × types, scopes, types × regions) or pages come back. Every view honours the shared
 * `EventFilter` over the maintenance rows (where() of queries.ts).
 */
import { approvalRecordPosted, recordedApproval } from '../../domain/index.ts';
import type { ApprovalOutcome } from '../fold.ts';
import { decodeBody } from './body.ts';
import {
  decodeCursor,
  type EventFilter,
  encodeCursor,
  type Page,
  type PageRequest,
  pageSize,
  readEvents,
  rollupFilter,
  sqlWhere,
  type TimelineEntry,
  timelineDetail,
  where,
} from './queries.ts';
import { Aggregate, mergeSeries, type SeriesCounters } from './rollups/aggregate.ts';
import { DAY_LEVEL, HOUR_MS } from './rollups/buckets.ts';
import type { Distribution as Measure } from './rollups/distribution.ts';
import { type Peak, scopeNameSql, windowPeaks } from './rollups/impacts.ts';
import { pendingPerScope } from './rollups/pending.ts';
import { type SqlExecutor, type SqlValue, toNumber } from './sql.ts';

/** `dashboard.blastRadiusThreshold` when the configuration does not set it (VMs). */
export const DEFAULT_BLAST_RADIUS_THRESHOLD = 10;

const UNKNOWN_TYPE = '(unknown)';

// ----------------------------------------------------------------------------------------------------------
// Time series

/** One UTC day (of first_seen_at) of the time series. */
export interface TimeSeriesDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  /** Maintenance events first seen that day (each once fleet-wide). */
  events: number;
  /** The same, per EventType. */
  byType: Record<string, number>;
  /** Sum over the day's events of the VMs each affects. */
  affectedVms: number;
  /** Events of the day with an observed impact, the sum and the maximum of their observed seconds. */
  observedEvents: number;
  observedSecondsSum: number;
  observedSecondsMax: number | null;
}

/** Maintenance events per day by type, with their impact; only days with events, oldest first. */
export interface TimeSeries {
  filter: EventFilter;
  /** VMs that sent a heartbeat in the window (FleetHistory adds it; docs/fleet.md, Coverage). */
  coveredVms: number;
  /** Every type in `days`, sorted. */
  types: string[];
  days: TimeSeriesDay[];
}

/**
 * Events per UTC day and type from the rollups: buckets of at most a day (rollups/buckets.ts DAY_LEVEL) and the
 * entries of the edge hours, each day's per-type counters merged (rollups/aggregate.ts SeriesCounters). What it
 * reads grows with the days of the window, not with the events in them.
 */
export async function timeSeries(
  db: SqlExecutor,
  filter: EventFilter = {},
): Promise<Omit<TimeSeries, 'coveredVms'>> {
  const read = await readEvents(db, filter, 'ts', DAY_LEVEL);
  const perDay = new Map<string, Map<string, SeriesCounters>>();
  const add = (day: string, type: string, s: SeriesCounters) => {
    let types = perDay.get(day);
    if (types === undefined) {
      types = new Map();
      perDay.set(day, types);
    }
    mergeSeries(types, type, s);
  };
  const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  for (const b of read.buckets) {
    const day = dayOf(b.startHour * HOUR_MS);
    for (const [type, s] of b.aggregate.series) add(day, type, s);
  }
  for (const e of read.entries) {
    add(dayOf(e.firstSeenMs), e.eventType, {
      events: 1,
      affected: e.affectedVms,
      observedEvents: e.observed === null ? 0 : 1,
      observedSum: e.observed ?? 0,
      observedMax: e.observed,
    });
  }
  const days: TimeSeriesDay[] = [];
  const types = new Set<string>();
  for (const d of [...perDay.keys()].sort(cmp)) {
    const current: TimeSeriesDay = {
      day: d,
      events: 0,
      byType: {},
      affectedVms: 0,
      observedEvents: 0,
      observedSecondsSum: 0,
      observedSecondsMax: null,
    };
    const perType = perDay.get(d)!;
    for (const raw of [...perType.keys()].sort(cmp)) {
      const s = perType.get(raw)!;
      const type = raw || UNKNOWN_TYPE;
      types.add(type);
      current.events += s.events;
      current.byType[type] = (current.byType[type] ?? 0) + s.events;
      current.affectedVms += s.affected;
      current.observedEvents += s.observedEvents;
      current.observedSecondsSum = round3(current.observedSecondsSum + s.observedSum);
      if (
        s.observedMax !== null &&
        (current.observedSecondsMax === null || s.observedMax > current.observedSecondsMax)
      )
        current.observedSecondsMax = s.observedMax;
    }
    days.push(current);
  }
  return { filter, types: [...types].sort(), days };
}

const round3 = (v: number) => Math.round(v * 1000) / 1000;

// ----------------------------------------------------------------------------------------------------------
// Blast radius

/** Where VMs are grouped for the blast radius (the VM's own scale set, zone and region). */
export const BLAST_SCOPES = ['scaleSet', 'zone', 'location'] as const;
export type BlastScope = (typeof BLAST_SCOPES)[number];

/** One scale set, zone or region. */
export interface BlastRadiusRow {
  scope: BlastScope;
  /** The scope's value; "(none)" for VMs outside any scale set or zone, "(unknown)" for an unknown region. */
  name: string;
  /** Distinct VMs of this scope that pending maintenance events affect now. */
  pendingVms: number;
  /** The most affected VMs of this scope impacted at once over the window (see blastRadius). */
  maxConcurrentVms: number;
  /** The earliest time that maximum was reached (ISO), null when no affected VM started maintenance. */
  peakAt: string | null;
  /** pendingVms or maxConcurrentVms above the threshold. */
  overThreshold: boolean;
  pendingOverThreshold: boolean;
  peakOverThreshold: boolean;
}

export interface BlastRadiusPage extends Page<BlastRadiusRow> {
  threshold: number;
  /** VMs that sent a heartbeat in the window (FleetHistory adds it). */
  coveredVms: number;
  /** Scopes in the view (every page), and how many of them are over the threshold. */
  total: number;
  overThreshold: number;
}

/** A started event's end while it is still running on a VM that is not deleted: open (sorts after any time). */
const OPEN_END = '9999-12-31T23:59:59.999Z';

/**
 * Per scale set, zone and region (of the affected VM, from its observation), over the maintenance events of
 * `filter`:
 *
 * - `pendingVms`: distinct VMs with an observation that affects them (affects_vm = 1) of a maintenance event
 *   pending now (the same count as the `sef_fleet_pending_vms` metric, within the filter), read through the
 *   pending index;
 * - `maxConcurrentVms`: the exact maximum number of affected VMs impacted at once. Each affected observation
 *   that started is an interval [started_at, ended_at] (closed: an impact ending at t overlaps one starting at
 *   t); without an end it lasts until its last record, or, while the event is still started on a VM that is not
 *   deleted, until now (a VM impacted by two overlapping events counts twice). Without a filter other than the
 *   window it comes from the impact rollups (rollups/impacts.ts: a branch and bound over per-hour summaries, so
 *   it reads a few slots per scope, not every impact of the window); with a filter on type, region, zone,
 *   status, scale set or VM, from blastRadiusByQuery's sweep over the window's impacts.
 *
 * Over the threshold means strictly more VMs than `threshold` (as the SefFleetBlastRadiusExceeded alert).
 * Rows are ordered by pending VMs, then maximum at once (both descending), then scope and name; paged with a
 * keyset cursor. `scope` keeps one kind of scope.
 */
export async function blastRadius(
  db: SqlExecutor,
  filter: EventFilter = {},
  threshold: number = DEFAULT_BLAST_RADIUS_THRESHOLD,
  request: PageRequest = {},
  scope?: BlastScope,
): Promise<Omit<BlastRadiusPage, 'coveredVms'>> {
  const window = rollupFilter(filter);
  if (
    window === undefined ||
    window.eventType !== undefined ||
    window.location !== undefined ||
    window.zone !== undefined ||
    window.status !== undefined
  )
    return blastRadiusByQuery(db, filter, threshold, request, scope);
  const limit = pageSize(request);
  const [peaks, pending] = await Promise.all([
    windowPeaks(db, window.sinceMs, window.untilMs),
    pendingPerScope(db, window.sinceMs, window.untilMs),
  ]);
  // Every scope's row, its peak's instant kept in ms until it is on the page.
  const all: Array<Omit<BlastRadiusRow, 'peakAt'> & { peakAtMs: number | null }> = [];
  const add = (kind: BlastScope, name: string, pendingVms: number, peak: Peak | undefined) => {
    const maxConcurrentVms = peak?.peak ?? 0;
    const pendingOverThreshold = pendingVms > threshold;
    const peakOverThreshold = maxConcurrentVms > threshold;
    all.push({
      scope: kind,
      name,
      pendingVms,
      maxConcurrentVms,
      peakAtMs: peak?.atMs ?? null,
      overThreshold: pendingOverThreshold || peakOverThreshold,
      pendingOverThreshold,
      peakOverThreshold,
    });
  };
  for (const kind of BLAST_SCOPES) {
    if (scope !== undefined && kind !== scope) continue;
    const byPeak = peaks.get(kind) ?? new Map<string, Peak>();
    const byPending = pending.get(kind) ?? new Map<string, number>();
    for (const [name, peak] of byPeak) add(kind, name, byPending.get(name) ?? 0, peak);
    for (const [name, n] of byPending) if (!byPeak.has(name)) add(kind, name, n, undefined);
  }
  all.sort(
    (x, y) =>
      y.pendingVms - x.pendingVms ||
      y.maxConcurrentVms - x.maxConcurrentVms ||
      cmp(x.scope, y.scope) ||
      cmp(x.name, y.name),
  );
  let rest = all;
  if (request.cursor) {
    const [pending, peak, s, name] = decodeCursor(request.cursor, 4);
    rest = all.filter(
      (r) =>
        r.pendingVms < Number(pending) ||
        (r.pendingVms === Number(pending) &&
          (r.maxConcurrentVms < Number(peak) ||
            (r.maxConcurrentVms === Number(peak) &&
              (r.scope > String(s) || (r.scope === String(s) && r.name > String(name)))))),
    );
  }
  const items = rest.slice(0, limit).map((r) => ({
    scope: r.scope,
    name: r.name,
    pendingVms: r.pendingVms,
    maxConcurrentVms: r.maxConcurrentVms,
    peakAt: r.peakAtMs === null ? null : new Date(r.peakAtMs).toISOString(),
    overThreshold: r.overThreshold,
    pendingOverThreshold: r.pendingOverThreshold,
    peakOverThreshold: r.peakOverThreshold,
  }));
  const last = items.at(-1);
  return {
    items,
    threshold,
    total: all.length,
    overThreshold: all.filter((r) => r.overThreshold).length,
    nextCursor:
      rest.length > limit && last
        ? encodeCursor([last.pendingVms, last.maxConcurrentVms, last.scope, last.name])
        : null,
  };
}

/**
 * The blast radius by one query over the window's impacts (what every filter other than the window takes): the
 * maximum at once as a sweep line in SQL — +1 at each start, −1 at each end, a running sum() OVER (PARTITION BY
 * scope ORDER BY time, starts before ends), its maximum per scope — one sort of the window's affected
 * observations, O(n log n). The scoped rows are MATERIALIZED once (both stores) for the two uses.
 */
export async function blastRadiusByQuery(
  db: SqlExecutor,
  filter: EventFilter = {},
  threshold: number = DEFAULT_BLAST_RADIUS_THRESHOLD,
  request: PageRequest = {},
  scope?: BlastScope,
): Promise<Omit<BlastRadiusPage, 'coveredVms'>> {
  const limit = pageSize(request);
  const w = where(filter, 'm');
  const params: SqlValue[] = [...w.params, threshold, threshold, threshold, threshold, threshold, threshold];
  const inner: string[] = [];
  if (scope !== undefined) {
    inner.push('scope = ?');
    params.push(scope);
  }
  const outer: string[] = [];
  if (request.cursor) {
    const [pending, peak, s, name] = decodeCursor(request.cursor, 4);
    outer.push(
      '(pending < ? OR (pending = ? AND (peak < ? OR (peak = ? AND (scope > ? OR (scope = ? AND name > ?))))))',
    );
    params.push(pending!, pending!, peak!, peak!, s!, s!, name!);
  }
  const rows = await db.all(
    `WITH affected AS (
       SELECT o.source, o.location, o.zone, o.scale_set, m.pending, o.started_at AS s,
         coalesce(o.ended_at, CASE WHEN o.status = 'started' AND o.vm_deleted = 0 THEN '${OPEN_END}'
           ELSE o.last_record_at END) AS e
       FROM maintenance m CROSS JOIN observations o
       ${sqlWhere(w, ['o.event_id = m.event_id', 'o.occurrence = m.occurrence', 'o.affects_vm = 1'])}
     ),
     scoped AS MATERIALIZED (
       SELECT k.scope, CASE k.scope WHEN 'scaleSet' THEN ${scopeNameSql('scaleSet', 'a')}
           WHEN 'zone' THEN ${scopeNameSql('zone', 'a')} ELSE ${scopeNameSql('location', 'a')} END AS name,
         a.source, a.pending, a.s, a.e
       FROM affected a CROSS JOIN (
         SELECT 'scaleSet' AS scope UNION ALL SELECT 'zone' UNION ALL SELECT 'location'
       ) k
     ),
     pend AS (
       SELECT scope, name, count(DISTINCT source) AS n FROM scoped WHERE pending = 1 GROUP BY scope, name
     ),
     points AS (
       SELECT scope, name, s AS t, 1 AS d FROM scoped WHERE s IS NOT NULL AND e >= s
       UNION ALL
       SELECT scope, name, e AS t, -1 AS d FROM scoped WHERE s IS NOT NULL AND e >= s
     ),
     running AS (
       SELECT scope, name, t,
         sum(d) OVER (PARTITION BY scope, name ORDER BY t, d DESC ROWS UNBOUNDED PRECEDING) AS c
       FROM points
     ),
     peaks AS (
       SELECT scope, name, c, t, row_number() OVER (PARTITION BY scope, name ORDER BY c DESC, t) AS rn
       FROM running
     ),
     combined AS (
       SELECT scope, name, c AS peak, t AS peak_at, 0 AS pending FROM peaks WHERE rn = 1
       UNION ALL
       SELECT scope, name, 0 AS peak, NULL AS peak_at, n AS pending FROM pend
     ),
     agg AS (
       SELECT scope, name, sum(pending) AS pending, sum(peak) AS peak, max(peak_at) AS peak_at
       FROM combined GROUP BY scope, name
     )
     SELECT * FROM (
       SELECT scope, name, pending, peak, peak_at,
         CASE WHEN pending > ? THEN 1 ELSE 0 END AS pending_over,
         CASE WHEN peak > ? THEN 1 ELSE 0 END AS peak_over,
         count(*) OVER () AS total,
         sum(CASE WHEN pending > ? OR peak > ? THEN 1 ELSE 0 END) OVER () AS over,
         CASE WHEN pending > ? OR peak > ? THEN 1 ELSE 0 END AS any_over
       FROM agg ${inner.length > 0 ? `WHERE ${inner.join(' AND ')}` : ''}
     ) r ${outer.length > 0 ? `WHERE ${outer.join(' AND ')}` : ''}
     ORDER BY pending DESC, peak DESC, scope, name LIMIT ?`,
    [...params, limit + 1],
  );
  const items = rows.slice(0, limit).map((r) => ({
    scope: String(r.scope) as BlastScope,
    name: String(r.name),
    pendingVms: toNumber(r.pending),
    maxConcurrentVms: toNumber(r.peak),
    peakAt: r.peak_at === null || r.peak_at === undefined ? null : String(r.peak_at),
    overThreshold: toNumber(r.any_over) === 1,
    pendingOverThreshold: toNumber(r.pending_over) === 1,
    peakOverThreshold: toNumber(r.peak_over) === 1,
  }));
  const last = items.at(-1);
  // The totals are window functions of the inner query, computed before the keyset condition (neither store
  // pushes a condition into a subquery with a window function that has no PARTITION BY): every page has them.
  // A page past the end (the history changed under the cursor) has no row to read them from: recount.
  const first = rows[0];
  const totals =
    first === undefined && request.cursor
      ? await blastRadiusByQuery(db, filter, threshold, { limit: 1 }, scope)
      : { total: toNumber(first?.total ?? 0), overThreshold: toNumber(first?.over ?? 0) };
  return {
    items,
    threshold,
    total: totals.total,
    overThreshold: totals.overThreshold,
    nextCursor:
      rows.length > limit && last
        ? encodeCursor([last.pendingVms, last.maxConcurrentVms, last.scope, last.name])
        : null,
  };
}

// ----------------------------------------------------------------------------------------------------------
// Lead time and impact

/** Nearest-rank p50 and p90, and the maximum, of one measure over a group of maintenance events. */
export interface Spread {
  /** Events with a value. */
  count: number;
  p50: number | null;
  p90: number | null;
  max: number | null;
}

/** One event type in one region, or in every region (`location` "(all)"). */
export interface LeadTimeRow {
  eventType: string;
  location: string;
  /** Maintenance events of the group. */
  events: number;
  /** Notice lead time (NotBefore − first seen), seconds. */
  notice: Spread;
  /** Observed impact (the longest on an affected VM), seconds. */
  observed: Spread;
}

export interface LeadTimeAndImpact {
  filter: EventFilter;
  /** VMs that sent a heartbeat in the window (FleetHistory adds it). */
  coveredVms: number;
  /** By type, then region, each type's "(all)" row first. */
  rows: LeadTimeRow[];
}

/** The `location` of a type's row over every region. */
export const ALL_REGIONS = '(all)';

/**
 * Notice lead time and observed impact per event type and region (and per type over all regions): count, p50,
 * p90 (nearest rank, as the summary's: exact over at most 256 values, otherwise within 1%) and max (exact), from
 * the rollups' per-type-and-region rows ('tl'; with a dimension filter the 'dims' rows) and the edge hours'
 * entries, merged per group.
 */
export async function leadTimeAndImpact(
  db: SqlExecutor,
  filter: EventFilter = {},
): Promise<Omit<LeadTimeAndImpact, 'coveredVms'>> {
  const read = await readEvents(db, filter, 'tl');
  const byGroup = new Map<string, { type: string; location: string; aggregate: Aggregate }>();
  const groupOf = (type: string, location: string) => {
    const key = `${type}\u0000${location}`;
    let g = byGroup.get(key);
    if (g === undefined) {
      g = { type, location, aggregate: new Aggregate() };
      byGroup.set(key, g);
    }
    return g.aggregate;
  };
  for (const b of read.buckets) groupOf(b.dims.eventType, b.dims.location).merge(b.aggregate);
  for (const e of read.entries) groupOf(e.eventType, e.location).addLeadTime(e);
  const spread = (d: Measure): Spread => ({
    count: d.count,
    p50: d.percentile(50),
    p90: d.percentile(90),
    max: d.max,
  });
  const rows = new Map<string, LeadTimeRow>();
  const perType = new Map<string, Aggregate>();
  const put = (eventType: string, location: string, a: Aggregate) => {
    const key = `${eventType}\u0000${location}`;
    const row = rows.get(key);
    if (row === undefined) {
      rows.set(key, {
        eventType,
        location,
        events: a.events,
        notice: spread(a.notice),
        observed: spread(a.observed),
      });
      return;
    }
    row.events += a.events;
  };
  for (const g of byGroup.values()) {
    const eventType = g.type || UNKNOWN_TYPE;
    put(eventType, g.location || '(unknown)', g.aggregate);
    let all = perType.get(eventType);
    if (all === undefined) {
      all = new Aggregate();
      perType.set(eventType, all);
    }
    all.merge(g.aggregate);
  }
  for (const [eventType, a] of perType) put(eventType, ALL_REGIONS, a);
  const rank = (r: LeadTimeRow) => (r.location === ALL_REGIONS ? '' : r.location);
  return {
    filter,
    rows: [...rows.values()].sort((a, b) => cmp(a.eventType, b.eventType) || cmp(rank(a), rank(b))),
  };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

// ----------------------------------------------------------------------------------------------------------
// One event's page: its VMs' records and its approvals

/** A record of one VM of the event, as a timeline entry. */
export interface EventRecord extends TimelineEntry {
  source: string;
  vmName: string;
  affectsVm: boolean;
}

/** Sorts an event's records of one VM and time in lifecycle order (as vmTimeline). */
const RANK_OF_TRANSITION = `CASE r.transition WHEN 'scheduled' THEN 0 WHEN 'updated' THEN 1 WHEN 'approved' THEN 2
  WHEN 'started' THEN 3 WHEN 'completed' THEN 4 WHEN 'canceled' THEN 5 ELSE 6 END`;

/**
 * The records of one maintenance event, per VM (by name, then source), each VM's in time order: the timeline of
 * every affected VM (`affectsOnly`, the default) or of every reporting VM. Paged (keyset on VM, source, time,
 * transition, id) from the records_by_event index.
 */
export async function eventRecords(
  db: SqlExecutor,
  eventId: string,
  occurrence = 1,
  options: { affectsOnly?: boolean | undefined } = {},
  request: PageRequest = {},
): Promise<Page<EventRecord>> {
  const limit = pageSize(request);
  const clauses = ['r.event_id = ?', 'r.occurrence = ?'];
  const params: SqlValue[] = [eventId, occurrence];
  if (options.affectsOnly ?? true) clauses.push('o.affects_vm = 1');
  if (request.cursor) {
    clauses.push(`(r.vm_name, r.source, r.time, ${RANK_OF_TRANSITION}, r.id) > (?, ?, ?, ?, ?)`);
    params.push(...decodeCursor(request.cursor, 5));
  }
  const rows = await db.all(
    `SELECT r.source, r.vm_name, r.id, r.time, r.transition, r.event_id, r.occurrence, r.event_type, r.body,
       o.affects_vm, ${RANK_OF_TRANSITION} AS rank
     FROM records r JOIN observations o
       ON o.event_id = r.event_id AND o.occurrence = r.occurrence AND o.source = r.source
     WHERE ${clauses.join(' AND ')}
     ORDER BY r.vm_name, r.source, r.time, ${RANK_OF_TRANSITION}, r.id LIMIT ?`,
    [...params, limit + 1],
  );
  const page = rows.slice(0, limit);
  const items = page.map((row) => {
    const record = JSON.parse(decodeBody(row.body)) as { data: Record<string, unknown> };
    return {
      source: String(row.source),
      vmName: String(row.vm_name),
      affectsVm: toNumber(row.affects_vm) === 1,
      time: String(row.time),
      transition: String(row.transition),
      eventId: String(row.event_id),
      occurrence: toNumber(row.occurrence),
      eventType: String(row.event_type),
      id: String(row.id),
      detail: timelineDetail(String(row.transition), record.data),
    };
  });
  const last = page.at(-1);
  return {
    items,
    nextCursor:
      rows.length > limit && last
        ? encodeCursor([
            String(last.vm_name),
            String(last.source),
            String(last.time),
            toNumber(last.rank),
            String(last.id),
          ])
        : null,
  };
}

/** One `approved` record of the event (what one VM's approval module decided). */
export interface ApprovalRecord {
  source: string;
  vmName: string;
  /** When the record was made. */
  time: string;
  approvedAt: string | null;
  rule: string | null;
  /** Whether that VM was the event's leader (the one that POSTs); null when the record does not say. */
  leader: boolean | null;
  /** StartRequests was POSTed (the rule of src/domain/approval.ts). */
  posted: boolean;
  dryRun: boolean;
  /** Prepare hooks run, and how many of them failed. */
  hooks: number;
  hooksFailed: number;
}

/** The approvals of one event: its fleet-wide outcome, every VM's approved records, the VMs whose window lapsed. */
export interface EventApprovals {
  outcome: ApprovalOutcome;
  rule: string | null;
  approvedAt: string | null;
  records: ApprovalRecord[];
  /** More than APPROVAL_RECORDS_LIMIT approved records: only the first are listed. */
  truncated: boolean;
  /** VMs (names) the event affects whose approval lapsed (Azure started it before we approved). */
  lapsed: string[];
}

/** Approved records listed per event at most (one per VM and kind: a broadcast to a large set stays below). */
export const APPROVAL_RECORDS_LIMIT = 1000;

/** The approvals of one maintenance event; undefined when the event is unknown. */
export async function eventApprovals(
  db: SqlExecutor,
  eventId: string,
  occurrence = 1,
): Promise<EventApprovals | undefined> {
  const [[event], records, lapsed] = await Promise.all([
    db.all(
      'SELECT approval, approval_rule, approved_at FROM maintenance WHERE event_id = ? AND occurrence = ?',
      [eventId, occurrence],
    ),
    db.all(
      `SELECT source, vm_name, time, body FROM records
       WHERE event_id = ? AND occurrence = ? AND transition = 'approved' ORDER BY time, vm_name, source LIMIT ?`,
      [eventId, occurrence, APPROVAL_RECORDS_LIMIT + 1],
    ),
    db.all(
      `SELECT vm_name FROM observations WHERE event_id = ? AND occurrence = ? AND affects_vm = 1
         AND approval = 'lapsed' ORDER BY vm_name LIMIT ?`,
      [eventId, occurrence, APPROVAL_RECORDS_LIMIT],
    ),
  ]);
  if (event === undefined) return undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    outcome: (str(event.approval) as ApprovalOutcome) ?? null,
    rule: str(event.approval_rule),
    approvedAt: str(event.approved_at),
    truncated: records.length > APPROVAL_RECORDS_LIMIT,
    records: records.slice(0, APPROVAL_RECORDS_LIMIT).map((row) => {
      const data = (JSON.parse(decodeBody(row.body)) as { data: Record<string, unknown> }).data ?? {};
      const a = recordedApproval(data);
      const hooks = Array.isArray(a.hooks) ? (a.hooks as Array<Record<string, unknown>>) : [];
      return {
        source: String(row.source),
        vmName: String(row.vm_name),
        time: String(row.time),
        approvedAt: str(a.approvedAt),
        rule: str(a.rule),
        leader: typeof a.leader === 'boolean' ? a.leader : null,
        posted: approvalRecordPosted(data),
        dryRun: a.dryRun === true,
        hooks: hooks.length,
        hooksFailed: hooks.filter((h) => h.ok !== true).length,
      };
    }),
    lapsed: lapsed.map((r) => String(r.vm_name)),
  };
}

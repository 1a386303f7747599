/**
 * Read-side of the fleet history: filtered event lists, pending-now, per-VM timelines and the summary used by
 * the dashboard and `fleet report`. Plain SQL over the tables documented in docs/fleet.md.
 */
import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { transitionRank } from '../domain/index.ts';
import { approvalRecordPosted } from '../transform/approval-posted.ts';

/** Filters shared by the dashboard, the exports and the report. Times are ISO 8601. */
export interface EventFilter {
  /** first_seen_at >= since */
  since?: string | undefined;
  /** first_seen_at < until */
  until?: string | undefined;
  eventType?: string | undefined;
  location?: string | undefined;
  zone?: string | undefined;
  scaleSet?: string | undefined;
  status?: string | undefined;
  /** Case-insensitive substring of the VM name. */
  vm?: string | undefined;
  /** Only events that affect the reporting VM (default false: broadcasts too). */
  affectsOnly?: boolean | undefined;
}

/** An event as returned by the API and exports (camelCase). */
export interface EventView {
  source: string;
  eventId: string;
  occurrence: number;
  vmName: string;
  vmId: string;
  location: string;
  zone: string;
  scaleSet: string;
  eventType: string;
  affectsVm: boolean;
  status: string;
  firstSeenStatus: string;
  firstSeenAt: string;
  notBefore: string | null;
  noticeSeconds: number | null;
  advertisedSeconds: number | null;
  observedSeconds: number | null;
  startedAt: string | null;
  endedAt: string | null;
  inferred: boolean | null;
  reason: string | null;
  approval: string | null;
  approvedAt: string | null;
  updates: number;
  missing: string[];
  vmDeleted: boolean;
  records: number;
  description: string;
}

/** Column order of the CSV export. */
export const EXPORT_COLUMNS: ReadonlyArray<keyof EventView> = [
  'vmName',
  'eventId',
  'occurrence',
  'eventType',
  'status',
  'location',
  'zone',
  'scaleSet',
  'affectsVm',
  'firstSeenStatus',
  'firstSeenAt',
  'notBefore',
  'noticeSeconds',
  'advertisedSeconds',
  'observedSeconds',
  'startedAt',
  'endedAt',
  'inferred',
  'reason',
  'approval',
  'approvedAt',
  'updates',
  'missing',
  'vmDeleted',
  'records',
  'vmId',
  'source',
];

/** SQL WHERE clause for `filter`; `alias` qualifies the events table's columns (e.g. 'e.'). */
function where(filter: EventFilter, alias = ''): { sql: string; params: SQLInputValue[] } {
  const clauses: string[] = [];
  const params: SQLInputValue[] = [];
  const add = (clause: string, value: SQLInputValue) => {
    clauses.push(clause);
    params.push(value);
  };
  const c = (column: string) => `${alias}${column}`;
  if (filter.since) add(`${c('first_seen_at')} >= ?`, new Date(filter.since).toISOString());
  if (filter.until) add(`${c('first_seen_at')} < ?`, new Date(filter.until).toISOString());
  if (filter.eventType) add(`${c('event_type')} = ?`, filter.eventType);
  if (filter.location) add(`${c('location')} = ?`, filter.location);
  if (filter.zone !== undefined && filter.zone !== '') add(`${c('zone')} = ?`, filter.zone);
  if (filter.scaleSet) add(`${c('scale_set')} = ?`, filter.scaleSet);
  if (filter.status) add(`${c('status')} = ?`, filter.status);
  if (filter.vm) add(`lower(${c('vm_name')}) LIKE '%' || lower(?) || '%'`, filter.vm);
  if (filter.affectsOnly) clauses.push(`${c('affects_vm')} = 1`);
  return { sql: clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '', params };
}

function toView(row: Record<string, unknown>): EventView {
  const bool = (v: unknown) => (v === null || v === undefined ? null : Number(v) === 1);
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    source: String(row.source),
    eventId: String(row.event_id),
    occurrence: Number(row.occurrence),
    vmName: String(row.vm_name),
    vmId: String(row.vm_id),
    location: String(row.location),
    zone: String(row.zone),
    scaleSet: String(row.scale_set),
    eventType: String(row.event_type),
    affectsVm: Number(row.affects_vm) === 1,
    status: String(row.status),
    firstSeenStatus: String(row.first_seen_status),
    firstSeenAt: String(row.first_seen_at),
    notBefore: (row.not_before as string | null) ?? null,
    noticeSeconds: n(row.notice_seconds),
    advertisedSeconds: n(row.advertised_seconds),
    observedSeconds: n(row.observed_seconds),
    startedAt: (row.started_at as string | null) ?? null,
    endedAt: (row.ended_at as string | null) ?? null,
    inferred: bool(row.inferred),
    reason: (row.reason as string | null) ?? null,
    approval: (row.approval as string | null) ?? null,
    approvedAt: (row.approved_at as string | null) ?? null,
    updates: Number(row.updates),
    missing: JSON.parse(String(row.missing)) as string[],
    vmDeleted: Number(row.vm_deleted) === 1,
    records: Number(row.records),
    description: String(row.description),
  };
}

/** Events matching `filter`, newest first. */
export function listEvents(db: DatabaseSync, filter: EventFilter = {}): EventView[] {
  const w = where(filter);
  const rows = db
    .prepare(`SELECT * FROM events ${w.sql} ORDER BY first_seen_at DESC, vm_name, event_id, occurrence`)
    .all(...w.params) as Array<Record<string, unknown>>;
  return rows.map(toView);
}

/**
 * Events pending now: scheduled or started, not ended, and not on a VM that Preempt/Terminate deleted (a started
 * Preempt/Terminate of the reporting VM never gets a terminal record).
 */
export function pendingEvents(db: DatabaseSync, filter: EventFilter = {}): EventView[] {
  return listEvents(db, filter)
    .filter((e) => (e.status === 'scheduled' || e.status === 'started') && !e.vmDeleted)
    .sort((a, b) => (a.notBefore ?? a.firstSeenAt).localeCompare(b.notBefore ?? b.firstSeenAt));
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

/** Every record of one VM (by CloudEvent source, or by VM name when no source matches), oldest first. */
export function vmTimeline(db: DatabaseSync, vm: string): TimelineEntry[] {
  const rows = db
    .prepare(
      `SELECT id, time, transition, event_id, occurrence, event_type, body FROM records
       WHERE source = ? OR vm_name = ? ORDER BY time, event_id, occurrence`,
    )
    .all(vm, vm) as Array<Record<string, unknown>>;
  return rows
    .map((row) => {
      const record = JSON.parse(String(row.body)) as { data: Record<string, unknown> };
      return {
        time: String(row.time),
        transition: String(row.transition),
        eventId: String(row.event_id),
        occurrence: Number(row.occurrence),
        eventType: String(row.event_type),
        id: String(row.id),
        detail: timelineDetail(String(row.transition), record.data),
      };
    })
    .sort(
      (a, b) =>
        a.time.localeCompare(b.time) ||
        a.eventId.localeCompare(b.eventId) ||
        transitionRank(a.transition) - transitionRank(b.transition),
    );
}

function timelineDetail(transition: string, data: Record<string, unknown>): string {
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
        parts.push(`stall ${Math.round(Number(i.longestStallMs))} ms`); // older records may carry fractions
      return parts.join(', ');
    }
    default:
      return String(data.EventStatus ?? '');
  }
}

/** VMs that sent records, with counts. */
export interface VmView {
  source: string;
  vmName: string;
  vmId: string;
  records: number;
  events: number;
  lastRecordAt: string;
}

export function listVms(db: DatabaseSync): VmView[] {
  const rows = db
    .prepare(
      `SELECT source, max(vm_name) AS vm_name, max(vm_id) AS vm_id, count(*) AS records,
              count(DISTINCT event_id || '#' || occurrence) AS events, max(time) AS last
       FROM records GROUP BY source ORDER BY vm_name`,
    )
    .all() as Array<Record<string, unknown>>;
  return rows.map((r) => ({
    source: String(r.source),
    vmName: String(r.vm_name),
    vmId: String(r.vm_id),
    records: Number(r.records),
    events: Number(r.events),
    lastRecordAt: String(r.last),
  }));
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

/** Nearest-rank percentiles. */
export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return { count: 0, min: null, p50: null, p90: null, max: null, mean: null };
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
  return {
    count: sorted.length,
    min: sorted[0] ?? null,
    p50: at(50),
    p90: at(90),
    max: sorted[sorted.length - 1] ?? null,
    mean: Math.round(mean * 1000) / 1000,
  };
}

/** The summary shown by the dashboard and `fleet report`. */
export interface FleetSummary {
  filter: EventFilter;
  generatedAt: string;
  ingest: { received: number; accepted: number; duplicates: number; rejected: number };
  vms: number;
  events: number;
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
  pending: EventView[];
}

function countBy(events: readonly EventView[], key: (e: EventView) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of events) {
    const k = key(e);
    out[k] = (out[k] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** Summary of the events matching `filter`. */
export function summarize(db: DatabaseSync, filter: EventFilter = {}, now: Date = new Date()): FleetSummary {
  const events = listEvents(db, filter);
  const stats = db.prepare('SELECT name, value FROM ingest_stats').all() as Array<{
    name: string;
    value: number;
  }>;
  const stat = (n: string) => Number(stats.find((s) => s.name === n)?.value ?? 0);
  const w = where(filter, 'e.');
  const transitions = db
    .prepare(
      `SELECT r.transition AS t, count(*) AS n FROM records r JOIN events e
         ON e.source = r.source AND e.event_id = r.event_id AND e.occurrence = r.occurrence
       ${w.sql}
       GROUP BY r.transition ORDER BY r.transition`,
    )
    .all(...w.params) as Array<{ t: string; n: number }>;
  const numbers = (pick: (e: EventView) => number | null) =>
    events.map(pick).filter((v): v is number => v !== null);
  const compared = events.filter((e) => e.advertisedSeconds !== null && e.observedSeconds !== null);
  return {
    filter,
    generatedAt: now.toISOString(),
    ingest: {
      received: stat('received'),
      accepted: stat('accepted'),
      duplicates: stat('duplicates'),
      rejected: stat('rejected'),
    },
    vms: new Set(events.map((e) => e.source)).size,
    events: events.length,
    records: events.reduce((s, e) => s + e.records, 0),
    byStatus: countBy(events, (e) => (e.vmDeleted ? 'vm-deleted' : e.status)),
    byType: countBy(events, (e) => e.eventType),
    byTransition: Object.fromEntries(transitions.map((t) => [t.t, Number(t.n)])),
    byLocation: countBy(events, (e) => e.location || '(unknown)'),
    byZone: countBy(events, (e) => e.zone || '(none)'),
    byScaleSet: countBy(events, (e) => e.scaleSet || '(none)'),
    noticeSeconds: distribution(numbers((e) => e.noticeSeconds)),
    advertisedSeconds: distribution(numbers((e) => e.advertisedSeconds)),
    observedSeconds: distribution(numbers((e) => e.observedSeconds)),
    impactVsAdvertised: {
      compared: compared.length,
      exceeded: compared.filter((e) => (e.observedSeconds ?? 0) > (e.advertisedSeconds ?? 0)).length,
    },
    approvals: countBy(
      events.filter((e) => e.approval !== null),
      (e) => e.approval ?? '',
    ),
    inferredEndings: countBy(
      events.filter((e) => e.inferred === true),
      (e) => e.reason ?? '(unknown)',
    ),
    missingTransitions: events.filter((e) => e.missing.length > 0).length,
    vmDeleted: events.filter((e) => e.vmDeleted).length,
    pending: pendingEvents(db, filter),
  };
}

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = Array.isArray(value) ? value.join(' ') : String(value);
  return /[",\r\n]/.test(text) || /^[=+\-@]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** CSV (RFC 4180, header row, CRLF) of events. */
export function eventsToCsv(events: readonly EventView[]): string {
  const lines = [EXPORT_COLUMNS.join(',')];
  for (const e of events) lines.push(EXPORT_COLUMNS.map((c) => csvCell(e[c])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

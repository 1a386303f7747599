/**
 * Pure logic of the fleet history: checking an incoming CloudEvent, and folding every record of one event
 * occurrence (source, EventId, occurrence) into one summary row. The fold sorts its input itself, so the result
 * does not depend on arrival order, duplicates or missing transitions (Completed without Started, a VM deleted
 * by Preempt/Terminate that never sent a terminal record).
 */

import {
  approvalRecordPosted,
  type LifecycleRecord,
  recordedApproval,
  TRANSITION_RANK,
  TRANSITIONS,
  type Transition,
} from '../domain/index.ts';

/** Where an event stands in the fleet history. */
export type FleetEventStatus = 'scheduled' | 'started' | 'completed' | 'canceled';

/** How an event ended up with respect to approvals. */
export type ApprovalOutcome = 'us' | 'dry-run' | 'lapsed' | 'none' | null;

/** One row of the `events` table (see docs/fleet.md). */
export interface FleetEvent {
  source: string;
  eventId: string;
  occurrence: number;
  vmName: string;
  vmId: string;
  resourceId: string;
  location: string;
  zone: string;
  scaleSet: string;
  eventType: string;
  affectsVm: boolean;
  resources: string[];
  description: string;
  eventSource: string;
  status: FleetEventStatus;
  firstSeenStatus: string;
  firstSeenAt: string;
  /** Latest known NotBefore (ISO), null when never known. */
  notBefore: string | null;
  /** Latest known NotBefore − first seen, whole seconds. */
  noticeSeconds: number | null;
  /** Azure's DurationInSeconds; null when -1 / unknown. */
  advertisedSeconds: number | null;
  startedAt: string | null;
  endedAt: string | null;
  inferred: boolean | null;
  reason: string | null;
  hostRebooted: boolean | null;
  downtimeSeconds: number | null;
  longestStallMs: number | null;
  /** Observed impact in seconds: reboot downtime, else the longest stall; null when nothing was measured. */
  observedSeconds: number | null;
  approval: ApprovalOutcome;
  approvedAt: string | null;
  approvalRule: string | null;
  updates: number;
  /** Transitions that must have happened but whose record never arrived (e.g. ["started"]). */
  missing: string[];
  /** Preempt/Terminate of this VM that started: the VM is (being) deleted, no terminal record will come. */
  vmDeleted: boolean;
  records: number;
  /** Records per transition. */
  transitions: Record<Transition, number>;
  lastRecordAt: string;
}

/** A record accepted for ingestion, with where it came from. */
export interface IncomingRecord {
  record: LifecycleRecord;
  partitionId: string;
  sequenceNumber: number;
  enqueuedAt: string;
}

/** The key that groups records into one event occurrence. */
export function occurrenceOf(record: LifecycleRecord): number {
  const n = record.data.occurrence;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : 1;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function str(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function minIso(values: Array<string | null | undefined>): string | null {
  let best: string | null = null;
  for (const v of values) {
    if (typeof v !== 'string' || v === '') continue;
    if (best === null || Date.parse(v) < Date.parse(best)) best = v;
  }
  return best;
}

/** Sort order: observation time, then the natural order of transitions (ties in one poll). */
export function compareRecords(a: LifecycleRecord, b: LifecycleRecord): number {
  const dt = Date.parse(a.time) - Date.parse(b.time);
  if (dt !== 0) return dt;
  const dr = TRANSITION_RANK[a.transition] - TRANSITION_RANK[b.transition];
  if (dr !== 0) return dr;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Folds all records of one event occurrence (any order, at least one) into its summary row. */
export function foldEvent(input: readonly LifecycleRecord[]): FleetEvent {
  if (input.length === 0) throw new Error('foldEvent needs at least one record');
  const records = [...input].sort(compareRecords);
  const last = records[records.length - 1]!;
  const terminal = firstTerminalRecord(records);
  const sighting = firstSighting(records);
  const startedAt = minIso(records.map((r) => r.data.timing?.startedAt));
  const status = statusOf(records, terminal, startedAt);
  const reported = reportedByLastRecord(last);

  return {
    ...reported,
    status,
    ...sighting,
    ...latestNotice(records),
    advertisedSeconds: advertisedSeconds(last),
    startedAt,
    ...ending(terminal),
    ...observedImpact(terminal),
    ...approvalOf(records, terminal, status, sighting.firstSeenStatus),
    updates: countOf(records, 'updated'),
    missing: missingTransitions(records, sighting.firstSeenStatus, startedAt),
    vmDeleted: isVmBeingDeleted(reported, status),
    records: records.length,
    transitions: Object.fromEntries(TRANSITIONS.map((t) => [t, countOf(records, t)])) as Record<
      Transition,
      number
    >,
    lastRecordAt: last.time,
  };
}

function hasTransition(records: readonly LifecycleRecord[], transition: Transition): boolean {
  return records.some((r) => r.transition === transition);
}

function countOf(records: readonly LifecycleRecord[], transition: Transition): number {
  return records.filter((r) => r.transition === transition).length;
}

/** The first Completed or Canceled record (records sorted). */
function firstTerminalRecord(records: readonly LifecycleRecord[]): LifecycleRecord | undefined {
  return records.find((r) => r.transition === 'completed' || r.transition === 'canceled');
}

/** What the VM, its event type and the event's static fields were, as the newest record says. */
function reportedByLastRecord(
  last: LifecycleRecord,
): Pick<
  FleetEvent,
  | 'source'
  | 'eventId'
  | 'occurrence'
  | 'vmName'
  | 'vmId'
  | 'resourceId'
  | 'location'
  | 'zone'
  | 'scaleSet'
  | 'eventType'
  | 'affectsVm'
  | 'resources'
  | 'description'
  | 'eventSource'
> {
  const d = last.data;
  return {
    source: last.source,
    eventId: last.subject,
    occurrence: occurrenceOf(last),
    vmName: d.vm?.name ?? '',
    vmId: d.vm?.vmId || last.vmid || '',
    resourceId: d.vm?.resourceId ?? '',
    location: d.vm?.location ?? '',
    zone: d.vm?.zone ?? '',
    scaleSet: d.vm?.vmScaleSetName ?? '',
    eventType: str(d.EventType) ?? last.maintenancetype ?? '',
    affectsVm: d.affectsThisVm === true,
    resources: Array.isArray(d.Resources) ? d.Resources.map(String) : [],
    description: d.Description ?? '',
    eventSource: d.EventSource ?? '',
  };
}

/** When the event was first seen and in which status (records sorted). */
function firstSighting(
  records: readonly LifecycleRecord[],
): Pick<FleetEvent, 'firstSeenStatus' | 'firstSeenAt'> {
  const firstSeenStatus =
    records.map((r) => r.data.firstSeenStatus).find((s): s is string => typeof s === 'string') ??
    (records[0]!.transition === 'started' ? 'Started' : 'Scheduled');
  const firstSeenAt = minIso(records.map((r) => r.data.timing?.firstSeenAt)) ?? records[0]!.time;
  return { firstSeenStatus, firstSeenAt };
}

/** The NotBefore and notice of the newest records that carry them (records sorted). */
function latestNotice(records: readonly LifecycleRecord[]): Pick<FleetEvent, 'notBefore' | 'noticeSeconds'> {
  let notBefore: string | null = null;
  let noticeSeconds: number | null = null;
  for (const r of records) {
    if (r.data.notBeforeUtc) notBefore = r.data.notBeforeUtc;
    const n = num(r.data.timing?.noticeSeconds);
    if (n !== null) noticeSeconds = n;
  }
  return { notBefore, noticeSeconds };
}

/** Azure's DurationInSeconds from the newest record; null when -1 / unknown. */
function advertisedSeconds(last: LifecycleRecord): number | null {
  const advertised = num(last.data.DurationInSeconds);
  return advertised !== null && advertised >= 0 ? advertised : null;
}

function statusOf(
  records: readonly LifecycleRecord[],
  terminal: LifecycleRecord | undefined,
  startedAt: string | null,
): FleetEventStatus {
  if (terminal) return terminal.transition as FleetEventStatus;
  return startedAt !== null || hasTransition(records, 'started') ? 'started' : 'scheduled';
}

/** How the event ended, from its terminal record; all null while it has not ended. */
function ending(terminal: LifecycleRecord | undefined): Pick<FleetEvent, 'endedAt' | 'inferred' | 'reason'> {
  return {
    endedAt: terminal ? (str(terminal.data.timing?.endedAt) ?? terminal.time) : null,
    inferred: terminal ? terminal.data.inferred === true : null,
    reason: terminal ? (str(terminal.data.reason) ?? null) : null,
  };
}

/** The impact measured on the VM, from a Completed record; all null otherwise. */
function observedImpact(
  terminal: LifecycleRecord | undefined,
): Pick<FleetEvent, 'hostRebooted' | 'downtimeSeconds' | 'longestStallMs' | 'observedSeconds'> {
  const impact = (terminal?.transition === 'completed' ? terminal.data.observedImpact : undefined) as
    | Record<string, unknown>
    | undefined;
  const downtimeSeconds = num(impact?.downtimeSeconds);
  const longestStallMs = num(impact?.longestStallMs);
  const observedSeconds =
    downtimeSeconds !== null
      ? downtimeSeconds
      : longestStallMs !== null
        ? Math.round(longestStallMs) / 1000
        : null;
  return {
    hostRebooted: typeof impact?.hostRebooted === 'boolean' ? impact.hostRebooted : null,
    downtimeSeconds,
    longestStallMs,
    observedSeconds,
  };
}

/** Who approved the event, when and by which rule (records sorted). */
function approvalOf(
  records: readonly LifecycleRecord[],
  terminal: LifecycleRecord | undefined,
  status: FleetEventStatus,
  firstSeenStatus: string,
): Pick<FleetEvent, 'approval' | 'approvedAt' | 'approvalRule'> {
  const approvals = records.filter((r) => r.transition === 'approved');
  const posted = approvals.find((r) => approvalRecordPosted(r.data));
  const chosen = posted ?? approvals[0];
  const recorded = chosen ? recordedApproval(chosen.data) : undefined;
  let approval: ApprovalOutcome = null;
  if (posted || terminal?.data.reason === 'approved-by-us') approval = 'us';
  else if (approvals.length > 0) approval = 'dry-run';
  else if (status === 'started' || status === 'completed') {
    // Azure started it on its own: our window lapsed (or, first seen Started, there was none).
    approval = firstSeenStatus === 'Started' ? 'none' : 'lapsed';
  } else if (status === 'canceled') approval = 'none';
  return {
    approval,
    approvedAt: chosen ? (str(recorded?.approvedAt) ?? chosen.time) : null,
    approvalRule: chosen ? str(recorded?.rule) : null,
  };
}

/** Transitions that must have happened but whose record never arrived. */
function missingTransitions(
  records: readonly LifecycleRecord[],
  firstSeenStatus: string,
  startedAt: string | null,
): string[] {
  const missing: string[] = [];
  if (!hasTransition(records, 'scheduled') && firstSeenStatus !== 'Started') missing.push('scheduled');
  if (!hasTransition(records, 'started') && startedAt !== null) missing.push('started');
  return missing;
}

/** A Preempt/Terminate of this VM that started: the VM is (being) deleted, no terminal record will come. */
function isVmBeingDeleted(
  reported: Pick<FleetEvent, 'eventType' | 'affectsVm'>,
  status: FleetEventStatus,
): boolean {
  const deleting = reported.eventType === 'Preempt' || reported.eventType === 'Terminate';
  return deleting && reported.affectsVm && status === 'started';
}

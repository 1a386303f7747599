/** Rows of the fleet tables (snake_case, as either driver returns them) → the camelCase shapes of the API. */
import { TRANSITIONS, type Transition } from '../../domain/index.ts';
import type { ApprovalOutcome, FleetEvent, FleetEventStatus } from '../fold.ts';
import { type SqlRow, toNumber, toNumberOrNull } from './sql.ts';

const bool = (v: unknown): boolean | null => (v === null || v === undefined ? null : Number(v) === 1);
const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const textOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const json = <T>(v: unknown, fallback: T): T => {
  try {
    return JSON.parse(String(v)) as T;
  } catch {
    return fallback;
  }
};

/** An `observations` row: one VM's view of one maintenance event (what the fold of its records gave). */
export function observationFromRow(row: SqlRow): FleetEvent {
  return {
    source: text(row.source),
    eventId: text(row.event_id),
    occurrence: toNumber(row.occurrence),
    vmName: text(row.vm_name),
    vmId: text(row.vm_id),
    resourceId: text(row.resource_id),
    location: text(row.location),
    zone: text(row.zone),
    scaleSet: text(row.scale_set),
    eventType: text(row.event_type),
    affectsVm: Number(row.affects_vm) === 1,
    resources: json<string[]>(row.resources, []),
    description: text(row.description),
    eventSource: text(row.event_source),
    status: text(row.status) as FleetEventStatus,
    firstSeenStatus: text(row.first_seen_status),
    firstSeenAt: text(row.first_seen_at),
    notBefore: textOrNull(row.not_before),
    noticeSeconds: toNumberOrNull(row.notice_seconds),
    advertisedSeconds: toNumberOrNull(row.advertised_seconds),
    startedAt: textOrNull(row.started_at),
    endedAt: textOrNull(row.ended_at),
    inferred: bool(row.inferred),
    reason: textOrNull(row.reason),
    hostRebooted: bool(row.host_rebooted),
    downtimeSeconds: toNumberOrNull(row.downtime_seconds),
    longestStallMs: toNumberOrNull(row.longest_stall_ms),
    observedSeconds: toNumberOrNull(row.observed_seconds),
    approval: textOrNull(row.approval) as ApprovalOutcome,
    approvedAt: textOrNull(row.approved_at),
    approvalRule: textOrNull(row.approval_rule),
    updates: toNumber(row.updates),
    missing: json<string[]>(row.missing, []),
    vmDeleted: Number(row.vm_deleted) === 1,
    records: toNumber(row.records),
    transitions: json<Record<Transition, number>>(row.transitions, {} as Record<Transition, number>),
    lastRecordAt: text(row.last_record_at),
  };
}

/** What one VM observed of one event, as the API and exports return it. */
export interface ObservationView {
  source: string;
  eventId: string;
  occurrence: number;
  vmName: string;
  vmId: string;
  location: string;
  zone: string;
  scaleSet: string;
  eventType: string;
  /** false: this VM only observed an event of another VM (a broadcast). */
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

export function observationView(row: SqlRow): ObservationView {
  const o = observationFromRow(row);
  return {
    source: o.source,
    eventId: o.eventId,
    occurrence: o.occurrence,
    vmName: o.vmName,
    vmId: o.vmId,
    location: o.location,
    zone: o.zone,
    scaleSet: o.scaleSet,
    eventType: o.eventType,
    affectsVm: o.affectsVm,
    status: o.status,
    firstSeenStatus: o.firstSeenStatus,
    firstSeenAt: o.firstSeenAt,
    notBefore: o.notBefore,
    noticeSeconds: o.noticeSeconds,
    advertisedSeconds: o.advertisedSeconds,
    observedSeconds: o.observedSeconds,
    startedAt: o.startedAt,
    endedAt: o.endedAt,
    inferred: o.inferred,
    reason: o.reason,
    approval: o.approval,
    approvedAt: o.approvedAt,
    updates: o.updates,
    missing: o.missing,
    vmDeleted: o.vmDeleted,
    records: o.records,
    description: o.description,
  };
}

/** A maintenance event counted once fleet-wide, as the API and exports return it. */
export interface MaintenanceView {
  eventId: string;
  occurrence: number;
  eventType: string;
  status: string;
  pending: boolean;
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
  approvalRule: string | null;
  updates: number;
  missing: string[];
  vmDeleted: boolean;
  affectedVms: number;
  affectedNames: string[];
  reportingVms: number;
  observers: number;
  location: string;
  zone: string;
  scaleSet: string;
  description: string;
  eventSource: string;
  records: number;
  transitions: Record<Transition, number>;
  lastRecordAt: string;
}

export function maintenanceView(row: SqlRow): MaintenanceView {
  const names = text(row.affected_names);
  return {
    eventId: text(row.event_id),
    occurrence: toNumber(row.occurrence),
    eventType: text(row.event_type),
    status: text(row.status),
    pending: Number(row.pending) === 1,
    firstSeenAt: text(row.first_seen_at),
    notBefore: textOrNull(row.not_before),
    noticeSeconds: toNumberOrNull(row.notice_seconds),
    advertisedSeconds: toNumberOrNull(row.advertised_seconds),
    observedSeconds: toNumberOrNull(row.observed_seconds),
    startedAt: textOrNull(row.started_at),
    endedAt: textOrNull(row.ended_at),
    inferred: bool(row.inferred),
    reason: textOrNull(row.reason),
    approval: textOrNull(row.approval),
    approvedAt: textOrNull(row.approved_at),
    approvalRule: textOrNull(row.approval_rule),
    updates: toNumber(row.updates),
    missing: json<string[]>(row.missing, []),
    vmDeleted: Number(row.vm_deleted) === 1,
    affectedVms: toNumber(row.affected_vms),
    affectedNames: names === '' ? [] : names.split(' '),
    reportingVms: toNumber(row.reporting_vms),
    observers: toNumber(row.observers),
    location: text(row.location),
    zone: text(row.zone),
    scaleSet: text(row.scale_set),
    description: text(row.description),
    eventSource: text(row.event_source),
    records: toNumber(row.records),
    transitions: Object.fromEntries(TRANSITIONS.map((t) => [t, toNumber(row[`n_${t}`])])) as Record<
      Transition,
      number
    >,
    lastRecordAt: text(row.last_record_at),
  };
}

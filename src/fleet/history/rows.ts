/** Rows of the fleet tables (snake_case, as either driver returns them) → the camelCase shapes of the API. */
import { TRANSITIONS, type Transition } from '../../domain/index.ts';
import type { ApprovalOutcome, FleetEvent, FleetEventStatus } from '../fold.ts';
import type { MaintenanceEvent } from '../fold-maintenance.ts';
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

/** What one VM observed of one event (its fold), as the API and exports return it. */
export type ObservationView = FleetEvent;

export const observationView: (row: SqlRow) => ObservationView = observationFromRow;

/** A maintenance event counted once fleet-wide, as the API and exports return it. */
export type MaintenanceView = MaintenanceEvent;

export function maintenanceView(row: SqlRow): MaintenanceView {
  const names = text(row.affected_names);
  return {
    eventId: text(row.event_id),
    occurrence: toNumber(row.occurrence),
    eventType: text(row.event_type),
    status: text(row.status) as FleetEventStatus,
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
    approval: textOrNull(row.approval) as ApprovalOutcome,
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

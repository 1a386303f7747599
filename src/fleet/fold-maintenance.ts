/**
 * Pure logic: folds what every VM observed of one maintenance event (EventId + occurrence) into the fleet-wide
 * row that counts it once.
 *
 * Azure sends an event to every VM of its availability set or placement group; each member's forwarder reports
 * it, with `affectsThisVm` true only where the VM is in the event's `Resources`. A VM that reported the event
 * without being affected is an **observer**. The fleet-wide row takes its status, timing, impact and approval
 * from the **basis**: the observations of affected VMs, or, when no affected VM reported (its forwarder is down,
 * or the VM was deleted), every observation.
 */
import { TRANSITIONS, type Transition } from '../domain/index.ts';
import type { ApprovalOutcome, FleetEvent, FleetEventStatus } from './fold.ts';

/** One row of the `maintenance` table (docs/fleet.md). */
export interface MaintenanceEvent {
  eventId: string;
  occurrence: number;
  eventType: string;
  /** Fleet-wide status: started while any affected VM is in it, scheduled while any waits, then how it ended. */
  status: FleetEventStatus;
  /** Scheduled or started on at least one affected VM that is not deleted: it is "pending now". */
  pending: boolean;
  firstSeenAt: string;
  notBefore: string | null;
  /** Longest notice any affected VM had (NotBefore − first seen), seconds. */
  noticeSeconds: number | null;
  advertisedSeconds: number | null;
  /** Longest observed impact on an affected VM, seconds. */
  observedSeconds: number | null;
  startedAt: string | null;
  endedAt: string | null;
  inferred: boolean | null;
  reason: string | null;
  approval: ApprovalOutcome;
  approvedAt: string | null;
  approvalRule: string | null;
  updates: number;
  missing: string[];
  vmDeleted: boolean;
  /** Distinct VMs the event affects: its Resources and every VM that reported it as affecting itself. */
  affectedVms: number;
  /** Those VMs' names, sorted. */
  affectedNames: string[];
  /** VMs whose forwarder reported the event (affected or not). */
  reportingVms: number;
  /** Reporting VMs the event does not affect. */
  observers: number;
  /** Region, zone and scale set of the affected VMs (the first in sort order when they differ). */
  location: string;
  zone: string;
  scaleSet: string;
  description: string;
  eventSource: string;
  records: number;
  transitions: Record<Transition, number>;
  lastRecordAt: string;
}

function firstSorted(values: Iterable<string>): string {
  return [...new Set(values)].filter((v) => v !== '').sort()[0] ?? '';
}

function maxOf(values: Array<number | null>): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : Math.max(...present);
}

function minIso(values: Array<string | null>): string | null {
  const present = values.filter((v): v is string => v !== null && v !== '');
  return present.length === 0 ? null : present.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

function maxIso(values: Array<string | null>): string | null {
  const present = values.filter((v): v is string => v !== null && v !== '');
  return present.length === 0 ? null : present.reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a));
}

const APPROVAL_ORDER: ApprovalOutcome[] = ['us', 'dry-run', 'lapsed', 'none'];

/** Folds the observations (one per reporting VM, any order, at least one) of one maintenance event. */
export function foldMaintenance(observations: readonly FleetEvent[]): MaintenanceEvent {
  if (observations.length === 0) throw new Error('foldMaintenance needs at least one observation');
  const all = [...observations].sort((a, b) => a.source.localeCompare(b.source));
  const affected = all.filter((o) => o.affectsVm);
  const basis = affected.length > 0 ? affected : all;
  const latest = [...all].sort((a, b) => Date.parse(a.lastRecordAt) - Date.parse(b.lastRecordAt)).at(-1)!;

  const statuses = new Set(basis.map((o) => o.status));
  const status: FleetEventStatus = statuses.has('started')
    ? 'started'
    : statuses.has('scheduled')
      ? 'scheduled'
      : statuses.has('completed')
        ? 'completed'
        : 'canceled';
  const pending = basis.some((o) => (o.status === 'scheduled' || o.status === 'started') && !o.vmDeleted);
  const ended = status === 'completed' || status === 'canceled';
  const terminalBasis = basis.filter((o) => o.status === status);

  const affectedNames = new Set<string>();
  for (const o of all) for (const name of o.resources) if (name !== '') affectedNames.add(name);
  for (const o of affected) if (o.vmName !== '') affectedNames.add(o.vmName);

  const approvals = all.map((o) => o.approval);
  const approval = APPROVAL_ORDER.find((a) => approvals.includes(a)) ?? null;
  const approvedBy = all.find((o) => o.approval === approval && o.approvedAt !== null);

  const transitions = Object.fromEntries(TRANSITIONS.map((t) => [t, 0])) as Record<Transition, number>;
  for (const o of all) {
    for (const t of TRANSITIONS) transitions[t] += o.transitions?.[t] ?? 0;
  }
  const notBeforeSource = [...basis]
    .filter((o) => o.notBefore !== null)
    .sort((a, b) => Date.parse(a.lastRecordAt) - Date.parse(b.lastRecordAt))
    .at(-1);

  return {
    eventId: latest.eventId,
    occurrence: latest.occurrence,
    eventType: basis.map((o) => o.eventType).find((t) => t !== '') ?? '',
    status,
    pending,
    firstSeenAt: minIso(all.map((o) => o.firstSeenAt)) ?? latest.firstSeenAt,
    notBefore: notBeforeSource?.notBefore ?? null,
    noticeSeconds: maxOf(basis.map((o) => o.noticeSeconds)),
    advertisedSeconds: maxOf(basis.map((o) => o.advertisedSeconds)),
    observedSeconds: maxOf(affected.map((o) => o.observedSeconds)),
    startedAt: minIso(basis.map((o) => o.startedAt)),
    endedAt: ended ? maxIso(basis.map((o) => o.endedAt)) : null,
    inferred: ended ? terminalBasis.every((o) => o.inferred === true) : null,
    reason: ended ? (terminalBasis.map((o) => o.reason).find((r) => r !== null) ?? null) : null,
    approval,
    approvedAt: approvedBy?.approvedAt ?? null,
    approvalRule: approvedBy?.approvalRule ?? null,
    updates: Math.max(...all.map((o) => o.updates)),
    missing: [...new Set(basis.flatMap((o) => o.missing))].sort(),
    vmDeleted: basis.some((o) => o.vmDeleted),
    affectedVms: affectedNames.size,
    affectedNames: [...affectedNames].sort(),
    reportingVms: new Set(all.map((o) => o.source)).size,
    observers: all.filter((o) => !o.affectsVm).length,
    location: firstSorted(basis.map((o) => o.location)),
    zone: firstSorted(basis.map((o) => o.zone)),
    scaleSet: firstSorted(basis.map((o) => o.scaleSet)),
    description: basis.map((o) => o.description).find((d) => d !== '') ?? '',
    eventSource: basis.map((o) => o.eventSource).find((s) => s !== '') ?? '',
    records: all.reduce((n, o) => n + o.records, 0),
    transitions,
    lastRecordAt: latest.lastRecordAt,
  };
}

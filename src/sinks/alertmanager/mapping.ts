/**
 * Pure mapping of lifecycle records to Alertmanager alerts (the `PostableAlert` of Alertmanager's API v2:
 * labels, annotations, startsAt, endsAt, generatorURL). Documented in docs/sinks-alerting.md.
 *
 * Alertmanager identifies an alert by its label set, so the labels hold only what stays the same for the whole
 * life of one event on one VM (the event, its type and severity, the reporting VM and where it runs, whether it
 * affects that VM): the record that resolves an alert, and every re-send, carry exactly the labels of the one
 * that fired it. The label set is fixed (RESERVED_LABELS plus the configured static labels): a label added
 * later would be a new identity for every alert. Everything that changes (status, NotBefore, Resources,
 * Description) goes into annotations.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { eventTypeSeverity, joinLimited, portalUrl, summaryLine, vmDisplayName } from '../format.ts';

export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL?: string;
}

export interface AlertMapping {
  alertname: string;
  /** Static labels (validated names; the sink's own labels win). */
  labels: Readonly<Record<string, string>>;
  /** The `severity` label by EventType, over the shared defaults (eventTypeSeverity in ../format.ts). */
  severityByEventType: Readonly<Record<string, string>>;
  /** How far after it is sent a firing alert's endsAt lies (the sink re-sends it before then). */
  endsAtAfterMs: number;
  /** generatorURL of every alert; undefined: the VM's Azure portal link (as Slack and Teams show it). */
  generatorUrl?: string | undefined;
}

/** completed and canceled resolve the event's alert; every other transition fires (or refreshes) it. */
export function resolvesAlert(record: LifecycleRecord): boolean {
  return record.transition === 'completed' || record.transition === 'canceled';
}

/** The `severity` label: configured for the EventType, else critical, warning or info (../format.ts). */
export function alertSeverity(
  record: LifecycleRecord,
  mapping: Pick<AlertMapping, 'severityByEventType'>,
): string {
  const type = record.data.EventType;
  return mapping.severityByEventType[type] ?? eventTypeSeverity(type);
}

/**
 * The alert's identity: the same for every record of one event (occurrence) on one VM. Empty values are left
 * out, as Alertmanager drops them itself.
 */
export function alertLabels(record: LifecycleRecord, mapping: AlertMapping): Record<string, string> {
  const d = record.data;
  const own: Record<string, string> = {
    alertname: mapping.alertname,
    event_id: d.EventId,
    event_type: d.EventType,
    severity: alertSeverity(record, mapping),
    vm: vmDisplayName(record),
    subscription: d.vm.subscriptionId,
    resource_group: d.vm.resourceGroup,
    scale_set: d.vm.vmScaleSetName,
    zone: d.vm.zone,
    location: d.vm.location,
    affects_this_vm: String(d.affectsThisVm),
  };
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...mapping.labels, ...own })) {
    if (value !== '') labels[key] = value;
  }
  return labels;
}

/** What may change during the event's life: shown by receivers, never part of the alert's identity. */
export function alertAnnotations(record: LifecycleRecord): Record<string, string> {
  const d = record.data;
  const annotations: Record<string, string> = {
    summary: summaryLine(record),
    description: d.Description,
    event_status: d.EventStatus,
    not_before: d.notBeforeUtc ?? d.NotBefore,
    resources: joinLimited(d.Resources, 2000),
    event_source: d.EventSource,
    duration_in_seconds: d.DurationInSeconds < 0 ? '' : String(d.DurationInSeconds),
    transition: record.transition,
  };
  for (const key of Object.keys(annotations)) if (annotations[key] === '') delete annotations[key];
  return annotations;
}

function parseMs(iso: string | null | undefined): number | undefined {
  if (iso === null || iso === undefined || iso === '') return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * startsAt: when the event was first seen (never after the record's time). endsAt: the record's time when it
 * resolves the alert; otherwise `endsAtAfterMs` after `nowMs`, the moment it is sent. The sink re-sends the
 * firing alert of every pending event well before that (as Prometheus does), so the alert stays firing while
 * the forwarder runs and the event is pending, and expires by itself when the forwarder stops re-sending.
 */
export function alertTimes(
  record: LifecycleRecord,
  nowMs: number,
  endsAtAfterMs: number,
): { startsAt: number; endsAt: number } {
  const time = parseMs(record.time) ?? 0;
  const startsAt = Math.min(parseMs(record.data.timing?.firstSeenAt) ?? time, time);
  if (resolvesAlert(record)) return { startsAt, endsAt: time };
  return { startsAt, endsAt: Math.max(nowMs, startsAt) + endsAtAfterMs };
}

/** The alert of one record, sent at `nowMs`. */
export function toAlert(record: LifecycleRecord, mapping: AlertMapping, nowMs: number): PostableAlert {
  const { startsAt, endsAt } = alertTimes(record, nowMs, mapping.endsAtAfterMs);
  const generatorURL = mapping.generatorUrl ?? portalUrl(record) ?? undefined;
  return {
    labels: alertLabels(record, mapping),
    annotations: alertAnnotations(record),
    startsAt: new Date(startsAt).toISOString(),
    endsAt: new Date(endsAt).toISOString(),
    ...(generatorURL === undefined ? {} : { generatorURL }),
  };
}

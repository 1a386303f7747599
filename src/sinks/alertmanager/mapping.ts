/**
 * Pure mapping of lifecycle records to Alertmanager alerts (the `PostableAlert` of Alertmanager's API v2:
 * labels, annotations, startsAt, endsAt, generatorURL). Documented in docs/sinks-alerting.md.
 *
 * Alertmanager identifies an alert by its label set, so the labels hold only what stays the same for the whole
 * life of one event on one VM (the event, its type, the reporting VM and where it runs, whether it affects that
 * VM): the record that resolves an alert carries exactly the labels of the one that fired it. Everything that
 * changes (status, NotBefore, Resources, Description) goes into annotations.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { joinLimited, summaryLine, vmDisplayName } from '../format.ts';

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
  /** How far past the expected end a firing alert's endsAt lies. */
  endsAtMarginSeconds: number;
  generatorUrl?: string | undefined;
}

/** completed and canceled resolve the event's alert; every other transition fires (or refreshes) it. */
export function resolvesAlert(record: LifecycleRecord): boolean {
  return record.transition === 'completed' || record.transition === 'canceled';
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
    vm: vmDisplayName(record),
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
 * startsAt: when the event was first seen (never after the record's time); endsAt: the record's time when it
 * resolves the alert, otherwise past the expected end of the event — NotBefore plus DurationInSeconds when
 * known (the record's time when NotBefore is empty or already passed) plus the margin — so Alertmanager keeps
 * it firing until the resolving record arrives, and resolves it by itself if that never comes.
 */
export function alertTimes(
  record: LifecycleRecord,
  marginSeconds: number,
): { startsAt: number; endsAt: number } {
  const time = parseMs(record.time) ?? 0;
  const startsAt = Math.min(parseMs(record.data.timing?.firstSeenAt) ?? time, time);
  if (resolvesAlert(record)) return { startsAt, endsAt: time };
  const notBefore = parseMs(record.data.notBeforeUtc);
  const duration = Math.max(0, record.data.DurationInSeconds) * 1000;
  const expectedEnd = notBefore === undefined ? time : Math.max(notBefore + duration, time);
  return { startsAt, endsAt: expectedEnd + marginSeconds * 1000 };
}

/** One alert per record, in batch order. */
export function toAlert(record: LifecycleRecord, mapping: AlertMapping): PostableAlert {
  const { startsAt, endsAt } = alertTimes(record, mapping.endsAtMarginSeconds);
  return {
    labels: alertLabels(record, mapping),
    annotations: alertAnnotations(record),
    startsAt: new Date(startsAt).toISOString(),
    endsAt: new Date(endsAt).toISOString(),
    ...(mapping.generatorUrl === undefined ? {} : { generatorURL: mapping.generatorUrl }),
  };
}

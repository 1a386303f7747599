/**
 * Assembles LifecycleRecords (CloudEvents 1.0 structured JSON) from the transform's tracked state.
 * Pure: no clock reads, times come from the observations.
 */

import {
  type KubernetesRecordContext,
  type LifecycleRecord,
  type LifecycleRecordData,
  recordType,
  type ScheduledEvent,
  type Transition,
  type VmIdentity,
} from '../domain/index.ts';
import { recordId } from './ids.ts';
import type { ForwarderState, TrackedEvent } from './state.ts';

/**
 * The CloudEvents `source` for this VM: its ARM resource ID; `urn:azure:vm:<vmId>` when that is unknown;
 * `urn:azure:vm-name:<name>` when even the vmId is unknown; `urn:azure:vm:unknown` when nothing is known.
 */
export function recordSource(vm: VmIdentity | undefined): string {
  if (vm?.resourceId) return vm.resourceId;
  if (vm?.vmId) return `urn:azure:vm:${vm.vmId}`;
  if (vm?.name) return `urn:azure:vm-name:${encodeURIComponent(vm.name)}`;
  return 'urn:azure:vm:unknown';
}

/** Normalises a resource name for comparison: case-insensitive, without the pre-2017-08-01 leading '_'. */
function normaliseResourceName(name: string): string {
  return name.replace(/^_/, '').toLowerCase();
}

/** True when this VM's name (compute.name, e.g. `vmss_3` for scale-set instances) is in Resources. */
export function affectsVm(resources: readonly string[], vm: VmIdentity | undefined): boolean {
  if (!vm?.name) return false;
  const own = normaliseResourceName(vm.name);
  return resources.some((resource) => normaliseResourceName(resource) === own);
}

/** ISO 8601 UTC of an epoch-ms instant. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** `data.vm` of a record (and of a heartbeat): every field, "" when unknown. */
export function vmData(vm: VmIdentity | undefined): LifecycleRecordData['vm'] {
  return {
    name: vm?.name ?? '',
    vmId: vm?.vmId ?? '',
    resourceId: vm?.resourceId ?? '',
    subscriptionId: vm?.subscriptionId ?? '',
    resourceGroup: vm?.resourceGroupName ?? '',
    location: vm?.location ?? '',
    zone: vm?.zone ?? '',
    vmScaleSetName: vm?.vmScaleSetName ?? '',
    vmSize: vm?.vmSize ?? '',
    computerName: vm?.computerName ?? '',
  };
}

/** Seconds between first sight and NotBefore, or null when NotBefore is unknown. */
function noticeSeconds(tracked: TrackedEvent): number | null {
  if (tracked.lastNotBeforeUtc === null) return null;
  const notBefore = Date.parse(tracked.lastNotBeforeUtc);
  if (Number.isNaN(notBefore)) return null;
  return Math.round((notBefore - tracked.firstSeenAtMs) / 1000);
}

/** `data.kubernetes`: a copy, with only the fields that are set (labels in the configured order). */
function kubernetesData(k8s: KubernetesRecordContext): KubernetesRecordContext {
  return {
    nodeName: k8s.nodeName,
    ...(k8s.clusterName === undefined ? {} : { clusterName: k8s.clusterName }),
    ...(k8s.labels === undefined ? {} : { labels: { ...k8s.labels } }),
  };
}

/** Everything a record needs besides the tracked event. */
export interface RecordContext {
  vm: VmIdentity | undefined;
  source: string;
  /** The Kubernetes node (enrichment); undefined outside Kubernetes: no `data.kubernetes` at all. */
  kubernetes?: KubernetesRecordContext | undefined;
}

/** Per-record inputs. */
export interface RecordSpec {
  transition: Transition;
  /** Observation (or approval) time, epoch ms. */
  timeMs: number;
  /** DocumentIncarnation to report. */
  incarnation: number;
  /** Set on completed/canceled records: when the event was seen gone. */
  endedAtMs?: number;
  /** Distinguishes several records of one transition (updated, approved). */
  discriminator?: string;
  /** Transition-specific data fields (inferred, reason, previous, observedImpact, approval, ...). */
  extras?: Record<string, unknown>;
}

/** The IMDS fields of an event, under their IMDS names. */
function imdsFields(event: ScheduledEvent): Omit<ScheduledEvent, 'extra' | 'notBeforeUtc'> {
  return {
    EventId: event.EventId,
    EventType: event.EventType,
    EventStatus: event.EventStatus,
    ResourceType: event.ResourceType,
    Resources: [...event.Resources],
    NotBefore: event.NotBefore,
    Description: event.Description,
    EventSource: event.EventSource,
    DurationInSeconds: event.DurationInSeconds,
  };
}

/** Builds one record for a tracked event. */
export function buildRecord(ctx: RecordContext, tracked: TrackedEvent, spec: RecordSpec): LifecycleRecord {
  const event = tracked.last;
  const data: LifecycleRecordData = {
    ...imdsFields(event),
    DocumentIncarnation: spec.incarnation,
    notBeforeUtc: event.notBeforeUtc,
    affectsThisVm: affectsVm(event.Resources, ctx.vm),
    vm: vmData(ctx.vm),
    ...(ctx.kubernetes === undefined ? {} : { kubernetes: kubernetesData(ctx.kubernetes) }),
    timing: {
      firstSeenAt: isoTime(tracked.firstSeenAtMs),
      startedAt: tracked.startedAtMs === null ? null : isoTime(tracked.startedAtMs),
      endedAt: spec.endedAtMs === undefined ? null : isoTime(spec.endedAtMs),
      noticeSeconds: noticeSeconds(tracked),
    },
    firstSeenStatus: tracked.firstSeenStatus,
    occurrence: tracked.occurrence,
    ...(event.extra && Object.keys(event.extra).length > 0 ? { imdsExtra: { ...event.extra } } : {}),
    ...spec.extras,
  };
  return {
    specversion: '1.0',
    id: recordId(ctx.source, event.EventId, spec.transition, tracked.occurrence, spec.discriminator),
    source: ctx.source,
    type: recordType(spec.transition),
    subject: event.EventId,
    time: isoTime(spec.timeMs),
    datacontenttype: 'application/json',
    transition: spec.transition,
    maintenancetype: event.EventType,
    vmid: ctx.vm?.vmId ?? '',
    data,
  };
}

/**
 * The record of every tracked (pending) event as of its current status, in first-seen order: `started` once
 * it was seen Started, else `scheduled`, timed by the last document that showed it (so its id is that
 * transition's record id). The pipeline builds what periodic sends read from the committed state with it
 * (PeriodicInput.pendingRecords, src/sinks/types.ts): an alert re-send carries the labels of the record that
 * fired the alert. Pure, like the rest of the transform.
 */
export function pendingEventRecords(
  state: Pick<ForwarderState, 'events'>,
  ctx: RecordContext,
): LifecycleRecord[] {
  return state.events.map((tracked) =>
    buildRecord(ctx, tracked, {
      transition: tracked.startedAtMs === null ? 'scheduled' : 'started',
      timeMs: tracked.lastSeenAtMs,
      incarnation: tracked.lastIncarnation,
    }),
  );
}

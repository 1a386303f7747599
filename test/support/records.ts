/**
 * The shared lifecycle record fixture: `makeRecord(transition, overrides)` plays a short IMDS history through
 * the real transform (src/transform) and returns the record it produces, checked against the record schema, so
 * a fixture is always a record the forwarder could send. A test that needs a record the transform cannot
 * produce (malformed, for validation tests) builds it explicitly in that test.
 */
import { createHash } from 'node:crypto';
import type { LifecycleRecord, ScheduledEvent, Transition, VmIdentity } from '../../src/domain/index.ts';
import { validateRecord } from '../../src/domain/record-schema.ts';
import {
  type ForwarderState,
  initialState,
  type TransformInput,
  transform,
} from '../../src/transform/index.ts';

/** The VM every fixture record comes from unless `vm` is given. */
export const FIXTURE_VM: VmIdentity = {
  name: 'vm-web-01',
  vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
  resourceId:
    '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-web-prod/providers/Microsoft.Compute/virtualMachines/vm-web-01',
  subscriptionId: '11111111-2222-3333-4444-555555555555',
  resourceGroupName: 'rg-web-prod',
  location: 'westeurope',
  zone: '2',
  vmScaleSetName: '',
  vmSize: 'Standard_D4s_v5',
  osType: 'Linux',
  computerName: 'vm-web-01',
};

export const FIXTURE_EVENT_ID = '3DA1B9AA-1111-2222-3333-444455556666';
/** When the record is observed, unless `time` is given. */
export const FIXTURE_TIME = '2025-09-19T18:14:47.123Z';
/** The event's NotBefore for FIXTURE_TIME (RFC 1123, as IMDS sends it): 15 minutes later. */
export const FIXTURE_NOT_BEFORE = 'Fri, 19 Sep 2025 18:29:47 GMT';

export interface RecordOverrides {
  eventId?: string;
  /** Freeze, Reboot (default), Redeploy, Preempt, Terminate. */
  eventType?: string;
  /** Observation time of the record (ISO 8601); the earlier polls a transition needs happen before it. */
  time?: string;
  /** The VM the forwarder runs on (default FIXTURE_VM); undefined: an unknown identity. */
  vm?: VmIdentity | undefined;
  /** The event's Resources (default: this VM's name, so affectsThisVm is true). */
  resources?: string[];
  description?: string;
  eventSource?: string;
  /** NotBefore as IMDS sends it (RFC 1123; "" for none); default 15 minutes after `time`. */
  notBefore?: string;
  durationInSeconds?: number;
  /** DocumentIncarnation of the document that produces the record. */
  incarnation?: number;
}

const MINUTE = 60_000;

/** One record of `transition`, produced by the real transform from the polls that lead to it. */
export function makeRecord(transition: Transition, overrides: RecordOverrides = {}): LifecycleRecord {
  const vm = 'vm' in overrides ? overrides.vm : FIXTURE_VM;
  const atMs = Date.parse(overrides.time ?? FIXTURE_TIME);
  // 15 minutes' notice (whole seconds, as IMDS sends it): FIXTURE_NOT_BEFORE for FIXTURE_TIME
  const notBefore =
    overrides.notBefore ?? new Date(Math.floor(atMs / 1000) * 1000 + 15 * MINUTE).toUTCString();
  const scheduled: ScheduledEvent = {
    EventId: overrides.eventId ?? FIXTURE_EVENT_ID,
    EventType: overrides.eventType ?? 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: overrides.resources ?? [vm?.name || 'vm-web-01'],
    EventStatus: 'Scheduled',
    NotBefore: notBefore,
    notBeforeUtc: notBefore === '' ? null : new Date(Date.parse(notBefore)).toISOString(),
    Description: overrides.description ?? 'Host server is undergoing maintenance.',
    EventSource: overrides.eventSource ?? 'Platform',
    DurationInSeconds: overrides.durationInSeconds ?? -1,
  };
  const started: ScheduledEvent = { ...scheduled, EventStatus: 'Started', NotBefore: '', notBeforeUtc: null };
  const incarnation = overrides.incarnation ?? 7;
  const before = atMs - MINUTE;
  // The polls (time, events) whose last one yields the record.
  const polls: Array<{ atMs: number; events: ScheduledEvent[]; approve?: boolean }> = {
    scheduled: [{ atMs, events: [scheduled] }],
    started: [{ atMs, events: [started] }],
    completed: [
      { atMs: before, events: [started] },
      { atMs, events: [] },
    ],
    canceled: [
      { atMs: before, events: [scheduled] },
      { atMs, events: [] },
    ],
    updated: [
      { atMs: before, events: [{ ...scheduled, Description: `${scheduled.Description} (earlier notice)` }] },
      { atMs, events: [scheduled] },
    ],
    approved: [{ atMs, events: [scheduled], approve: true }],
  }[transition];

  let state: ForwarderState = initialState();
  let records: LifecycleRecord[] = [];
  polls.forEach((poll, i) => {
    const input: TransformInput = {
      outcome: {
        kind: 'document',
        document: { DocumentIncarnation: incarnation - (polls.length - 1 - i), Events: poll.events },
        observed: { wallMs: poll.atMs, monotonicMs: poll.atMs },
        changed: true,
      },
      vm,
      maxGapMs: 2 * MINUTE,
      ...(poll.approve
        ? {
            approvals: [
              {
                eventId: scheduled.EventId,
                approvedAtMs: poll.atMs,
                rule: 'fixture',
                leader: true,
                hooks: [],
              },
            ],
          }
        : {}),
    };
    ({ state, records } = transform(state, input));
  });
  const record = records.findLast((r) => r.transition === transition);
  if (record === undefined) throw new Error(`the transform produced no ${transition} record`);
  const errors = validateRecord(record);
  if (errors.length > 0) throw new Error(`fixture ${transition} record is invalid: ${errors.join('; ')}`);
  return record;
}

/** The VM of numberedRecord's records. */
export const NUMBERED_VM: VmIdentity = {
  name: 'vm1',
  vmId: '11111111-2222-3333-4444-555555555555',
  resourceId: '/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1',
  subscriptionId: 'sub',
  resourceGroupName: 'rg',
  location: 'westeurope',
  zone: '1',
  vmScaleSetName: '',
  vmSize: 'Standard_D2s_v5',
  osType: 'Linux',
  computerName: 'vm1',
};

/**
 * A ~1 KiB scheduled record numbered `n`, for tests that count and order records: the record the transform
 * builds for event `E<n>` (observed n seconds after 2026-01-01, DocumentIncarnation n), with the readable
 * id `rec-<n>` in place of the derived one. `overrides` replaces top-level fields.
 */
export function numberedRecord(n: number, overrides: Partial<LifecycleRecord> = {}): LifecycleRecord {
  const record = makeRecord('scheduled', {
    vm: NUMBERED_VM,
    notBefore: 'Mon, 19 Sep 2016 18:29:47 GMT',
    eventId: `E${String(n).padStart(6, '0')}-0000-4000-8000-000000000000`,
    time: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    description: 'Virtual machine is going to be restarted as requested by authorized user.'.repeat(4),
    eventSource: 'User',
    incarnation: n,
  });
  return { ...record, id: `rec-${n}`, ...overrides };
}

/** A stable GUID-shaped id derived from `seed`. */
function seededGuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** VM `name` of a fleet of fixture VMs: its vmId is derived from the name, so it is the same in every call. */
export function fleetVm(name: string, scaleSet = ''): VmIdentity {
  return {
    name,
    vmId: seededGuid(`vm:${name}`),
    resourceId: `/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${name}`,
    subscriptionId: '11111111-2222-3333-4444-555555555555',
    resourceGroupName: 'rg',
    location: 'westeurope',
    zone: '1',
    vmScaleSetName: scaleSet,
    vmSize: 'Standard_D2s_v5',
    osType: 'Linux',
    computerName: name,
  };
}

export interface VmRecordOptions {
  /** The VM's name (default vm-0); see fleetVm. */
  vm?: string;
  scaleSet?: string;
  /** Default: an id derived from the VM and `n`, so every (vm, n) is its own event. */
  eventId?: string;
  transition?: Transition;
  /** Extra characters in Description, to make a record big. */
  padding?: number;
}

/**
 * Record number `n` of a fleet of VMs (for sinks that partition or batch by VM): the `scheduled` record (or
 * `transition`) the transform builds for VM `vm`'s event, observed n seconds after 2025-09-19T18:14:47Z.
 */
export function vmRecord(n: number, options: VmRecordOptions = {}): LifecycleRecord {
  const vm = options.vm ?? 'vm-0';
  return makeRecord(options.transition ?? 'scheduled', {
    vm: fleetVm(vm, options.scaleSet),
    eventId: options.eventId ?? seededGuid(`event:${vm}:${n}`),
    time: new Date(Date.UTC(2025, 8, 19, 18, 14, 47) + n * 1000).toISOString(),
    description: `Virtual machine is going to be restarted.${'x'.repeat(options.padding ?? 0)}`,
    incarnation: n + 1,
  });
}

/** `count` records spread over `vms` VMs (vm-0, vm-1, … round-robin), numbered from `from`. */
export function vmRecords(count: number, vms = 3, from = 0): LifecycleRecord[] {
  return Array.from({ length: count }, (_, i) => vmRecord(from + i, { vm: `vm-${(from + i) % vms}` }));
}

/** Lifecycle record fixtures for the fleet tests (the shape documented in docs/record-format.md). */
import { createHash } from 'node:crypto';
import { type LifecycleRecord, recordType, type Transition } from '../../../src/domain/index.ts';

function guid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface FixtureOptions {
  vm?: string;
  eventId?: string;
  eventType?: string;
  /** Seconds after 2025-01-01T00:00:00Z when the transition was observed. */
  at: number;
  firstSeenAt?: number;
  startedAt?: number | null;
  notBeforeAt?: number | null;
  durationInSeconds?: number;
  firstSeenStatus?: string;
  location?: string;
  zone?: string;
  scaleSet?: string;
  extra?: Record<string, unknown>;
}

const T0 = Date.UTC(2025, 0, 1);
export const iso = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString();

/** One record of `transition` for the given event. */
export function record(transition: Transition, o: FixtureOptions): LifecycleRecord {
  const vm = o.vm ?? 'web_1';
  const eventId = o.eventId ?? 'E1';
  const source = `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${vm}`;
  const firstSeen = o.firstSeenAt ?? 0;
  const notBefore = o.notBeforeAt === undefined ? 900 : o.notBeforeAt;
  const ended = transition === 'completed' || transition === 'canceled';
  return {
    specversion: '1.0',
    id: guid(`${source}|${eventId}|${transition}|${o.at}`),
    source,
    type: recordType(transition),
    subject: eventId,
    time: iso(o.at),
    datacontenttype: 'application/json',
    transition,
    maintenancetype: o.eventType ?? 'Freeze',
    vmid: guid(vm),
    data: {
      EventId: eventId,
      EventType: o.eventType ?? 'Freeze',
      EventStatus: o.startedAt === undefined || o.startedAt === null ? 'Scheduled' : 'Started',
      ResourceType: 'VirtualMachine',
      Resources: [vm],
      NotBefore: '',
      Description: 'maintenance',
      EventSource: 'Platform',
      DurationInSeconds: o.durationInSeconds ?? 5,
      DocumentIncarnation: 1,
      notBeforeUtc: notBefore === null ? null : iso(notBefore),
      affectsThisVm: true,
      vm: {
        name: vm,
        vmId: guid(vm),
        resourceId: source,
        subscriptionId: 's',
        resourceGroup: 'rg',
        location: o.location ?? 'westeurope',
        zone: o.zone ?? '1',
        vmScaleSetName: o.scaleSet ?? '',
        vmSize: 'Standard_D2s_v5',
        computerName: vm,
      },
      timing: {
        firstSeenAt: iso(firstSeen),
        startedAt: o.startedAt === undefined || o.startedAt === null ? null : iso(o.startedAt),
        endedAt: ended ? iso(o.at) : null,
        noticeSeconds: notBefore === null ? null : notBefore - firstSeen,
      },
      firstSeenStatus: o.firstSeenStatus ?? 'Scheduled',
      occurrence: 1,
      ...(o.extra ?? {}),
    },
  };
}

/** A Freeze scheduled at 0 (NotBefore 900), started at 950, completed at 960 with a 4.2 s stall. */
export function freezeLifecycle(vm = 'web_1', eventId = 'E1'): LifecycleRecord[] {
  return [
    record('scheduled', { vm, eventId, at: 0 }),
    record('started', { vm, eventId, at: 950, startedAt: 950 }),
    record('completed', {
      vm,
      eventId,
      at: 960,
      startedAt: 950,
      extra: {
        inferred: false,
        observedImpact: {
          expectedDurationSeconds: 5,
          hostRebooted: false,
          downtimeSeconds: null,
          downtimeFrom: null,
          downtimeTo: null,
          longestStallMs: 4200,
          longestObservationGapMs: 1000,
        },
      },
    }),
  ];
}

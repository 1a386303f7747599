/**
 * Lifecycle record fixtures for the fleet tests (the shape documented in docs/record-format.md).
 * freezeLifecycle() is played through the real transform. record() stays explicit: the fleet tests need
 * records the transform does not produce from one VM's polls — a transition at any instant with its
 * firstSeenAt/startedAt/NotBefore chosen freely (other VMs' clocks, a broadcast seen by many VMs, events 30
 * days old), transitions without their predecessors, several records of one transition at different times
 * (ids include `at`), and `extra` fields a consumer must tolerate or reject (validate.test.ts).
 */
import { createHash } from 'node:crypto';
import {
  type HeartbeatRecord,
  type HeartbeatSink,
  type LifecycleRecord,
  recordType,
  type ScheduledEvent,
  type Transition,
  type VmIdentity,
} from '../../src/domain/index.ts';
import { validateHeartbeat, validateRecord } from '../../src/domain/record-schema.ts';
import { buildHeartbeat, type ForwarderState, initialState, transform } from '../../src/transform/index.ts';

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

/** One record of `transition` for the given event, written field by field (see the header for why). */
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

/** The identity of fleet VM `vm` (the one record() describes), for records played through the transform. */
function fleetVmIdentity(vm: string): VmIdentity {
  return {
    name: vm,
    vmId: guid(vm),
    resourceId: `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${vm}`,
    subscriptionId: 's',
    resourceGroupName: 'rg',
    location: 'westeurope',
    zone: '1',
    vmScaleSetName: '',
    vmSize: 'Standard_D2s_v5',
    osType: 'Linux',
    computerName: vm,
  };
}

/**
 * A broadcast Reboot R1 to the availability set web_1..web_5, affecting web_1 and web_2 (Resources): all five
 * report it scheduled at 10 s, the two affected report it started at 950 s, so it is pending. `fields` (a zone,
 * say) apply to every record.
 */
export function broadcastReboot(fields: Partial<Omit<FixtureOptions, 'at'>> = {}): LifecycleRecord[] {
  const members = ['web_1', 'web_2', 'web_3', 'web_4', 'web_5'];
  const affected = ['web_1', 'web_2'];
  const out: LifecycleRecord[] = [];
  for (const vm of members) {
    const o = {
      vm,
      eventId: 'R1',
      eventType: 'Reboot',
      firstSeenAt: 10,
      ...fields,
      extra: { Resources: affected, affectsThisVm: affected.includes(vm) },
    };
    out.push(record('scheduled', { ...o, at: 10 }));
    if (affected.includes(vm)) out.push(record('started', { ...o, at: 950, startedAt: 950 }));
  }
  return out;
}

/**
 * A Freeze scheduled at 0 (NotBefore 900), started at 950, completed at 960 with a 4.2 s stall: the three
 * records the real transform produces from the VM's polls (one a second while the event runs), so the
 * lifecycle is one the forwarder really sends.
 */
export function freezeLifecycle(vm = 'web_1', eventId = 'E1'): LifecycleRecord[] {
  const notBeforeUtc = iso(900);
  const scheduled: ScheduledEvent = {
    EventId: eventId,
    EventType: 'Freeze',
    ResourceType: 'VirtualMachine',
    Resources: [vm],
    EventStatus: 'Scheduled',
    NotBefore: new Date(notBeforeUtc).toUTCString(),
    notBeforeUtc,
    Description: 'maintenance',
    EventSource: 'Platform',
    DurationInSeconds: 5,
  };
  const started: ScheduledEvent = { ...scheduled, EventStatus: 'Started', NotBefore: '', notBeforeUtc: null };
  // (seconds, events, stall measured since the previous poll)
  const polls: Array<[number, ScheduledEvent[], number?]> = [
    [0, [scheduled]],
    [949, [scheduled]],
  ];
  for (let s = 950; s < 960; s++) polls.push([s, [started], s === 955 ? 4200 : undefined]);
  polls.push([960, []]);
  let state: ForwarderState = initialState();
  const out: LifecycleRecord[] = [];
  polls.forEach(([seconds, events, stall], i) => {
    const atMs = Date.parse(iso(seconds));
    const step = transform(state, {
      outcome: {
        kind: 'document',
        document: { DocumentIncarnation: i + 1, Events: events },
        observed: { wallMs: atMs, monotonicMs: atMs },
        changed: true,
      },
      vm: fleetVmIdentity(vm),
      ...(stall === undefined ? {} : { maxStallMs: stall }),
    });
    state = step.state;
    out.push(...step.records);
  });
  for (const r of out) {
    const errors = validateRecord(r);
    if (errors.length > 0)
      throw new Error(`freezeLifecycle: invalid ${r.transition} record: ${errors.join('; ')}`);
  }
  return out;
}

/** What a heartbeat fixture may change (every field of the sink entry defaults to a healthy, empty queue). */
export interface HeartbeatFixture {
  vm?: string;
  /** Seconds after 2025-01-01T00:00:00Z when it was sent. */
  at: number;
  trigger?: HeartbeatRecord['data']['trigger'];
  sequence?: number;
  intervalSeconds?: number;
  version?: string;
  location?: string;
  zone?: string;
  scaleSet?: string;
  /** Seconds after T0 when this run started (default: at). */
  startedAt?: number;
  imdsOk?: boolean;
  sink?: Partial<HeartbeatSink>;
}

/**
 * A heartbeat of `vm` (the same VM, source and vmId as record()'s), built by the forwarder's own builder and
 * valid against schemas/heartbeat.schema.json.
 */
export function heartbeatOf(o: HeartbeatFixture): HeartbeatRecord {
  const name = o.vm ?? 'web_1';
  const source = `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${name}`;
  const vm: VmIdentity = {
    name,
    vmId: guid(name),
    resourceId: source,
    subscriptionId: 's',
    resourceGroupName: 'rg',
    location: o.location ?? 'westeurope',
    zone: o.zone ?? '',
    vmScaleSetName: o.scaleSet ?? '',
    vmSize: 'Standard_D2s_v5',
    osType: 'Linux',
    computerName: name,
  };
  const heartbeat = buildHeartbeat({
    trigger: o.trigger ?? 'interval',
    sequence: o.sequence ?? 2,
    intervalSeconds: o.intervalSeconds ?? 3600,
    timeMs: T0 + o.at * 1000,
    vm,
    forwarder: {
      version: o.version ?? '0.1.0',
      configDigest: 'sha256:0123456789abcdef',
      startedAtMs: T0 + (o.startedAt ?? o.at) * 1000,
      platform: 'linux',
      source: 'imds',
    },
    imds: { ok: o.imdsOk ?? true, lastSuccessAt: iso(o.at), consecutiveFailures: o.imdsOk === false ? 9 : 0 },
    store: { ok: true },
    sinks: [
      {
        name: 'hub',
        type: 'eventhubs',
        state: 'ok',
        pending: 0,
        oldestPendingAgeSeconds: 0,
        deadLetters: 0,
        ...o.sink,
      },
    ],
    approval: { policy: false, rules: 0, dryRun: false, leader: 'first', hooks: 0 },
  });
  const problems = validateHeartbeat(heartbeat);
  if (problems.length > 0) throw new Error(`invalid heartbeat fixture: ${problems.join('; ')}`);
  return heartbeat;
}

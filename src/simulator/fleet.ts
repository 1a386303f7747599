/**
 * Synthetic fleet: the lifecycle records a real fleet's forwarders would send, for benchmarking and testing the
 * fleet history (src/fleet) at 10,000 VMs and more. Pure and deterministic: a seeded PRNG, no Math.random, no
 * clock reads — the same options always give the same VMs, records (with the same ids) and truth.
 *
 * The fleet: availability sets (zone '') and zonal scale sets (50–200 VMs, zones '1'/'2'/'3') over a few regions.
 * Every VM is affected by `ownEventsPerVmPerDay` events per day on average. An availability set's event is shown
 * to every member (Azure broadcasts it); ~20% of them affect several members (one EventId, `Resources` lists
 * them), the others report it as observers (`affectsThisVm` false). Preempt/Terminate delete a scale-set VM: it
 * reports Scheduled and Started, never a terminal record, and the scale set replaces it with a new instance.
 *
 * Each VM's records are what the pure transform (src/transform) emits for the documents that VM would see, polling
 * once a second at its own phase: the records are built by the transform's own buildRecord (ids, envelope,
 * `data`), and an observer of a broadcast event reports it exactly like the transform does (its document shows the
 * event Scheduled, then Started, then gone: scheduled → started → completed, not inferred).
 *
 * `generateFleet()` plans the events up front (one small object per maintenance event) and computes the truth
 * from the plan; `records()` streams the records lazily in time order (a heap holds only the steps of the events
 * that are alive at the current time), so memory does not grow with the number of records.
 */

import {
  type HeartbeatRecord,
  type HeartbeatSink,
  type LifecycleRecord,
  type ScheduledEvent,
  TRANSITION_RANK,
  type Transition,
  type VmIdentity,
} from '../domain/index.ts';
import { buildRecord, isoTime, type RecordContext } from '../transform/build-record.ts';
import { buildHeartbeat } from '../transform/heartbeat.ts';
import { contentHash } from '../transform/ids.ts';
import type { TrackedEvent } from '../transform/state.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Every simulated forwarder polls once a second (the recommended interval), each at its own phase. */
const POLL_MS = 1_000;

export const FLEET_DEFAULTS = {
  vms: 10_000,
  days: 90,
  ownEventsPerVmPerDay: 0.1,
  seed: 1,
  start: '2026-01-01T00:00:00Z',
  availabilitySetSize: 5,
  availabilitySetFraction: 0.3,
  regions: ['westeurope', 'northeurope', 'eastus2'] as readonly string[],
  observerReports: true,
  heartbeatIntervalSeconds: 3600,
  heartbeatDays: 0,
} as const;

export interface FleetOptions {
  /** VMs alive at any time (scale-set VMs deleted by Preempt/Terminate are replaced). Default 10,000. */
  vms?: number;
  /** Length of the window in days. Default 90. */
  days?: number;
  /** Events affecting each VM per day, on average. Default 0.1. */
  ownEventsPerVmPerDay?: number;
  /** PRNG seed (an integer). Default 1. */
  seed?: number;
  /** Start of the window, ISO 8601. Default 2026-01-01T00:00:00Z. */
  start?: string;
  /** VMs per availability set. Default 5. */
  availabilitySetSize?: number;
  /** Share of VMs in availability sets (0..1); the rest are in zonal scale sets of 50–200. Default 0.3. */
  availabilitySetFraction?: number;
  /** Regions the groups are spread over. Default westeurope, northeurope, eastus2. */
  regions?: readonly string[];
  /** Whether unaffected members of an availability set report its events (affectsThisVm false). Default true. */
  observerReports?: boolean;
  /** Every forwarder's heartbeat interval (the forwarder's default, 3600); 0: no heartbeats. */
  heartbeatIntervalSeconds?: number;
  /** Heartbeats over the last this many days of the window only; 0 (default): the whole window. */
  heartbeatDays?: number;
}

/** One VM of the fleet (scale-set replacements included). */
export interface VmInfo {
  /** compute.name: `<availabilitySet>-vm<n>`, or `<scaleSet>_<instanceId>` for scale-set VMs. */
  name: string;
  vmId: string;
  /** The records' CloudEvents `source`: the VM's ARM resource ID. */
  source: string;
  subscriptionId: string;
  resourceGroup: string;
  location: string;
  /** '1' | '2' | '3' for scale-set VMs, '' in availability sets. */
  zone: string;
  /** '' unless a scale-set VM. */
  scaleSet: string;
  /** '' unless in an availability set. */
  availabilitySet: string;
  vmSize: string;
  computerName: string;
  /** When a replacement instance was created (ISO), null for VMs that exist from the start. */
  createdAt: string | null;
  /** When Preempt/Terminate deleted the VM (ISO), null when it lives to the end of the window. */
  deletedAt: string | null;
}

export type TruthStatus = 'scheduled' | 'started' | 'completed' | 'canceled';

/** One maintenance event (EventId + occurrence) as planned. */
export interface TruthEvent {
  eventId: string;
  occurrence: number;
  eventType: string;
  /** Names in Resources. */
  affected: string[];
  /** VMs that report the event without being affected (other members of the availability set). */
  observers: string[];
  /** The most advanced status any affected VM reported before the window's end. */
  status: TruthStatus;
  /** Earliest observation by an affected VM (ISO). */
  firstSeenAt: string;
  /** Latest announced NotBefore (ISO), null when never announced. */
  notBefore: string | null;
}

export interface FleetTruth {
  /** Distinct EventId + occurrence. */
  maintenanceEvents: number;
  /** In time order of first sight. */
  events: TruthEvent[];
  counts: {
    /** Records `records()` yields. */
    records: number;
    /** Sum over events of the number of affected VMs. */
    affectedVmEvents: number;
    /** Records per transition. */
    byTransition: Record<Transition, number>;
    /** Events per EventType. */
    byType: Record<string, number>;
  };
}

export interface Fleet {
  /** The options in force (defaults applied). */
  options: Required<FleetOptions>;
  /** Start and end of the window (ISO); every record's time is inside [start, end). */
  window: { start: string; end: string };
  vms: VmInfo[];
  /** Streams every record, in time order across the fleet (per VM in the order it observed them). Re-iterable. */
  records(): Generator<LifecycleRecord>;
  /** Streams every forwarder's heartbeats (docs/record-format.md, Heartbeats), in time order. Re-iterable. */
  heartbeats(): Generator<HeartbeatRecord>;
  /** records() and heartbeats() merged in time order (what a hub would carry). Re-iterable. */
  events(): Generator<LifecycleRecord | HeartbeatRecord>;
  truth: FleetTruth;
  /** What the heartbeats say about each VM (see HeartbeatTruth). */
  heartbeatTruth: HeartbeatTruth;
}

/** The forwarders' story behind heartbeats(). */
export interface HeartbeatTruth {
  /** Heartbeats heartbeats() yields. */
  heartbeats: number;
  /** VMs whose forwarder stopped sending before the end (SIGKILL, or a clean stop), with when it stopped. */
  stopped: Array<{ vm: string; atMs: number; clean: boolean }>;
  /** VMs whose heartbeats report a problem during [fromMs, toMs) (toMs = the end: still at the end). */
  sick: Array<{ vm: string; kind: SickKind; fromMs: number; toMs: number }>;
}

/** What a sick forwarder's heartbeats report. */
export type SickKind = 'dead-letters' | 'backlog' | 'imds' | 'failing';

// ----------------------------------------------------------------------------------------------------------
// PRNG: sfc32 seeded through splitmix32 (fast, good enough statistically, fully deterministic).

class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const splitmix = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = splitmix();
    this.#b = splitmix();
    this.#c = splitmix();
    this.#d = splitmix();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  uint32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** [0, 1) */
  next(): number {
    return this.uint32() / 4_294_967_296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  uniform(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** Exponentially distributed with the given mean. */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  hex(chars: number): string {
    let out = '';
    while (out.length < chars) out += this.uint32().toString(16).padStart(8, '0');
    return out.slice(0, chars);
  }

  /** A GUID shaped like Azure's (version-4 layout). */
  guid(): string {
    const h = this.hex(32);
    const variant = ((Number.parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(18, 20)}-${h.slice(20, 32)}`;
  }
}

// ----------------------------------------------------------------------------------------------------------
// The plan.

type EventType = 'Freeze' | 'Reboot' | 'Redeploy' | 'Preempt' | 'Terminate';

const DESCRIPTION: Record<EventType, string> = {
  Freeze: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
  Reboot: 'Host server is undergoing maintenance.',
  Redeploy: 'Host server is undergoing maintenance.',
  Preempt: '',
  Terminate: '',
};

/** Overall mix (the brief's "roughly"): Preempt/Terminate happen only to scale-set VMs. */
const TYPE_WEIGHTS: Record<EventType, number> = {
  Freeze: 0.55,
  Reboot: 0.2,
  Redeploy: 0.1,
  Preempt: 0.08,
  Terminate: 0.07,
};
const BROADCAST_SHARE = 0.2;
const CANCEL_SHARE = 0.03;
const UPDATE_SHARE = 0.02;
/** Of the events that can be approved (not Preempt/Terminate, not canceled or updated): ~10% of all events. */
const APPROVAL_SHARE_OF_ELIGIBLE = 0.12;
const LONG_NOTICE_SHARE = 0.1;
const USER_SOURCE_SHARE = 0.15;

const VM_SIZES = ['Standard_D2s_v5', 'Standard_D4s_v5', 'Standard_E4s_v5', 'Standard_F8s_v2'];

interface Group {
  kind: 'avset' | 'vmss';
  name: string;
  location: string;
  subscriptionId: string;
  resourceGroup: string;
  vmSize: string;
  /** VM indices (initial members). */
  members: number[];
  /** Scale sets: the notice of their Terminate events (5–15 min, user-configurable per scale set). */
  terminateNoticeMs: number;
  /** Scale sets: next instance id. */
  nextInstance: number;
}

interface Approval {
  atMs: number;
  rule: string;
  hooks: Array<{ name: string; ok: boolean; exitCode: number | null; durationMs: number; timedOut: boolean }>;
}

interface PlannedEvent {
  eventId: string;
  type: EventType;
  eventSource: string;
  durationInSeconds: number;
  /** VM indices in Resources, ascending. */
  affected: number[];
  /** VM indices that see the event (affected first, then observers), ascending within each part. */
  audience: number[];
  /** Azure published it (Scheduled). */
  publishMs: number;
  /** Announced NotBefore (whole seconds). */
  notBeforeMs: number;
  /** NotBefore moved (updated record) at atMs to notBeforeMs. */
  update: { atMs: number; notBeforeMs: number } | null;
  /** Approved by the leader (the first VM of Resources) at atMs: an `approved` record, then Started. */
  approval: Approval | null;
  /** Azure canceled it at this time (it disappears while Scheduled). */
  cancelMs: number | null;
  /** Azure started it (null when canceled). */
  startMs: number | null;
  /** Azure removed it (completed); null when canceled or when the VM is deleted (Preempt/Terminate). */
  removeMs: number | null;
  /** Per-event seed of the per-VM details (poll timing of reboots, stalls). */
  subSeed: number;
}

interface Step {
  /** Observation (record) time, epoch ms. */
  t: number;
  rank: number;
  /** Event index. */
  e: number;
  /** VM index. */
  v: number;
  kind: Transition;
  /** completed only. */
  impact?: Impact;
}

interface Impact {
  inferred: boolean;
  hostRebooted: boolean;
  downtimeFromMs: number | null;
  downtimeToMs: number | null;
  stallMs: number | null;
  gapMs: number | null;
}

function validate(options: FleetOptions): Required<FleetOptions> {
  const o = {
    vms: options.vms ?? FLEET_DEFAULTS.vms,
    days: options.days ?? FLEET_DEFAULTS.days,
    ownEventsPerVmPerDay: options.ownEventsPerVmPerDay ?? FLEET_DEFAULTS.ownEventsPerVmPerDay,
    seed: options.seed ?? FLEET_DEFAULTS.seed,
    start: options.start ?? FLEET_DEFAULTS.start,
    availabilitySetSize: options.availabilitySetSize ?? FLEET_DEFAULTS.availabilitySetSize,
    availabilitySetFraction: options.availabilitySetFraction ?? FLEET_DEFAULTS.availabilitySetFraction,
    regions: [...(options.regions ?? FLEET_DEFAULTS.regions)],
    observerReports: options.observerReports ?? FLEET_DEFAULTS.observerReports,
    heartbeatIntervalSeconds: options.heartbeatIntervalSeconds ?? FLEET_DEFAULTS.heartbeatIntervalSeconds,
    heartbeatDays: options.heartbeatDays ?? FLEET_DEFAULTS.heartbeatDays,
  };
  const integer = (name: string, value: number, min: number) => {
    if (!Number.isInteger(value) || value < min)
      throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  };
  integer('vms', o.vms, 1);
  integer('availabilitySetSize', o.availabilitySetSize, 1);
  integer('seed', o.seed, 0);
  if (o.seed > 0xffffffff) throw new RangeError(`seed must be <= ${0xffffffff}, got ${o.seed}`);
  if (!Number.isFinite(o.days) || o.days <= 0)
    throw new RangeError(`days must be a number > 0, got ${o.days}`);
  if (!Number.isFinite(o.ownEventsPerVmPerDay) || o.ownEventsPerVmPerDay < 0)
    throw new RangeError(`ownEventsPerVmPerDay must be a number >= 0, got ${o.ownEventsPerVmPerDay}`);
  if (!(o.availabilitySetFraction >= 0 && o.availabilitySetFraction <= 1))
    throw new RangeError(`availabilitySetFraction must be between 0 and 1, got ${o.availabilitySetFraction}`);
  if (o.regions.length === 0 || o.regions.some((r) => typeof r !== 'string' || r === ''))
    throw new RangeError('regions must be a non-empty list of region names');
  integer('heartbeatIntervalSeconds', o.heartbeatIntervalSeconds, 0);
  if (!Number.isFinite(o.heartbeatDays) || o.heartbeatDays < 0)
    throw new RangeError(`heartbeatDays must be a number >= 0, got ${o.heartbeatDays}`);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(o.start) || Number.isNaN(Date.parse(o.start)))
    throw new RangeError(`start must be an ISO 8601 time, got ${o.start}`);
  return o;
}

/** The next poll of VM `phase` at or after `ms`: each forwarder polls once a second at its own phase. */
function observe(ms: number, phase: number): number {
  return ms + ((((phase - ms) % POLL_MS) + POLL_MS) % POLL_MS);
}

/** The last poll of VM `phase` at or before `ms`. */
function lastPollBefore(ms: number, phase: number): number {
  return ms - ((((ms - phase) % POLL_MS) + POLL_MS) % POLL_MS);
}

const floorToSecond = (ms: number): number => Math.floor(ms / 1000) * 1000;
/** RFC 1123, as IMDS sends NotBefore (`Mon, 11 Apr 2022 22:26:58 GMT`). */
const rfc1123 = (ms: number): string => new Date(ms).toUTCString();

/** Generates a fleet. Throws a RangeError naming a bad option. */
export function generateFleet(input: FleetOptions = {}): Fleet {
  const options = validate(input);
  const rng = new Prng(options.seed);
  const startMs = Date.parse(options.start);
  const endMs = startMs + Math.round(options.days * DAY);
  // One PRNG, drawn in this order: the subscriptions, the VMs (1), the events (2). The truth (3) draws nothing.
  const vms = new FleetVms(rng, options.regions);
  const groups = placeGroups(vms, rng, options);
  const events = planEvents(vms, groups, { rng, options, startMs, endMs });
  const world: World = { events, identities: vms.identities, phases: vms.phases, endMs, options };
  // 4. The forwarders' heartbeats: planned with a PRNG of their own, so the records above are the same whether
  //    or not heartbeats are asked for.
  const beats = planHeartbeats(world, vms.infos, startMs);
  return {
    options,
    window: { start: isoTime(startMs), end: isoTime(endMs) },
    vms: vms.infos,
    records: () => streamRecords(world),
    heartbeats: () => streamHeartbeats(world, beats.plans),
    events: () => mergeByTime(streamRecords(world), streamHeartbeats(world, beats.plans)),
    truth: fleetTruth(world),
    heartbeatTruth: beats.truth,
  };
}

/** The fleet's VMs as they are created: identities (for the records), infos (for the truth), poll phases. */
class FleetVms {
  readonly identities: VmIdentity[] = [];
  readonly infos: VmInfo[] = [];
  readonly phases: number[] = [];
  readonly #rng: Prng;
  readonly #regions: readonly string[];
  readonly #subscriptions: string[];

  constructor(rng: Prng, regions: readonly string[]) {
    this.#rng = rng;
    this.#regions = regions;
    this.#subscriptions = [0, 1, 2].map(() => rng.guid());
  }

  newGroup(kind: Group['kind'], name: string): Group {
    const rng = this.#rng;
    return {
      kind,
      name,
      location: rng.pick(this.#regions),
      subscriptionId: rng.pick(this.#subscriptions),
      resourceGroup: `rg-${name}`,
      vmSize: rng.pick(VM_SIZES),
      members: [],
      terminateNoticeMs: rng.int(5, 15) * MINUTE,
      nextInstance: 0,
    };
  }

  /** Member `j` of an availability set (exists from the start). */
  addAvailabilitySetVm(group: Group, j: number): number {
    const name = `${group.name}-vm${j}`;
    return this.#add(group, name, `${armBase(group)}/virtualMachines/${name}`, '', name, null);
  }

  /** The scale set's next instance, in `zone`; `createdAt` for a replacement (null: exists from the start). */
  addScaleSetInstance(group: Group, zone: string, createdAt: number | null): number {
    const instance = group.nextInstance++;
    return this.#add(
      group,
      `${group.name}_${instance}`,
      `${armBase(group)}/virtualMachineScaleSets/${group.name}/virtualMachines/${instance}`,
      zone,
      `${group.name}${instance.toString(36).padStart(6, '0')}`,
      createdAt,
    );
  }

  /** Preempt/Terminate deleted VM `vm` at `atMs`. */
  deleted(vm: number, atMs: number): void {
    (this.infos[vm] as VmInfo).deletedAt = isoTime(atMs);
  }

  #add(
    group: Group,
    name: string,
    resourceId: string,
    zone: string,
    computerName: string,
    createdAt: number | null,
  ): number {
    const vmId = this.#rng.guid();
    const scaleSet = group.kind === 'vmss' ? group.name : '';
    this.identities.push({
      name,
      vmId,
      resourceId,
      subscriptionId: group.subscriptionId,
      resourceGroupName: group.resourceGroup,
      location: group.location,
      zone,
      vmScaleSetName: scaleSet,
      vmSize: group.vmSize,
      osType: 'Linux',
      computerName,
    });
    this.infos.push({
      name,
      vmId,
      source: resourceId,
      subscriptionId: group.subscriptionId,
      resourceGroup: group.resourceGroup,
      location: group.location,
      zone,
      scaleSet,
      availabilitySet: group.kind === 'avset' ? group.name : '',
      vmSize: group.vmSize,
      computerName,
      createdAt: createdAt === null ? null : isoTime(createdAt),
      deletedAt: null,
    });
    this.phases.push(this.#rng.int(0, POLL_MS - 1));
    return this.identities.length - 1;
  }
}

const armBase = (group: Group): string =>
  `/subscriptions/${group.subscriptionId}/resourceGroups/${group.resourceGroup}/providers/Microsoft.Compute`;

/** 1. The fleet: availability sets first, then zonal scale sets of 50–200 (zones '1', '2', '3' in turn). */
function placeGroups(vms: FleetVms, rng: Prng, options: Required<FleetOptions>): Group[] {
  const groups: Group[] = [];
  const avsetVms = Math.round(options.vms * options.availabilitySetFraction);
  for (let placed = 0, n = 0; placed < avsetVms; n++) {
    const group = vms.newGroup('avset', `avset-${String(n).padStart(4, '0')}`);
    groups.push(group);
    const size = Math.min(options.availabilitySetSize, avsetVms - placed);
    for (let j = 0; j < size; j++) group.members.push(vms.addAvailabilitySetVm(group, j));
    placed += size;
  }
  for (let placed = avsetVms, n = 0; placed < options.vms; n++) {
    const group = vms.newGroup('vmss', `vmss-${String(n).padStart(4, '0')}`);
    groups.push(group);
    const size = Math.min(rng.int(50, 200), options.vms - placed);
    for (let j = 0; j < size; j++)
      group.members.push(vms.addScaleSetInstance(group, String(1 + (j % 3)), null));
    placed += size;
  }
  return groups;
}
/** What planning the events draws from and where: the PRNG, the options, the window. */
interface PlanContext {
  rng: Prng;
  options: Required<FleetOptions>;
  startMs: number;
  endMs: number;
}

/**
 * 2. The events, in the order Azure publishes them: per availability set, a Poisson stream of events that affect
 * one member or (broadcast) several; per scale-set instance, one event at a time, a Preempt/Terminate deleting the
 * instance and the scale set replacing it.
 */
function planEvents(vms: FleetVms, groups: readonly Group[], context: PlanContext): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  if (context.options.ownEventsPerVmPerDay > 0) {
    for (const group of groups) {
      if (group.kind === 'avset') planAvailabilitySetEvents(group, context, events);
      else planScaleSetEvents(vms, group, context, events);
    }
  }
  return events.sort((a, b) => a.publishMs - b.publishMs);
}

/** Arrivals stop one poll before the end, so every event's first record falls inside the window. */
const lastArrival = (context: PlanContext): number => context.endMs - POLL_MS;

function planAvailabilitySetEvents(group: Group, context: PlanContext, events: PlannedEvent[]): void {
  const { rng, options } = context;
  const size = group.members.length;
  const broadcast = size >= 2 ? BROADCAST_SHARE : 0;
  // Each member is affected `rate` times a day: events reach 1 member, or 2..size when broadcast.
  const meanAffected = 1 - broadcast + (broadcast * (2 + size)) / 2;
  const meanGap = DAY / ((options.ownEventsPerVmPerDay * size) / meanAffected);
  for (
    let t = context.startMs + rng.exponential(meanGap);
    t < lastArrival(context);
    t += rng.exponential(meanGap)
  ) {
    const type = drawType(rng, context, false);
    const k = rng.chance(broadcast) ? rng.int(2, size) : 1;
    const affected = pickSubset(rng, group.members, k);
    const observers = options.observerReports ? group.members.filter((m) => !affected.includes(m)) : [];
    events.push(planEvent(rng, type, Math.round(t), affected, [...affected, ...observers], group));
  }
}

/** Scale-set VMs: one slot per initial instance; a deleted instance is replaced by a new one. */
function planScaleSetEvents(vms: FleetVms, group: Group, context: PlanContext, events: PlannedEvent[]): void {
  const { rng, endMs } = context;
  const meanGap = DAY / context.options.ownEventsPerVmPerDay;
  for (const first of group.members) {
    let vm = first;
    for (let t = context.startMs + rng.exponential(meanGap); t < lastArrival(context); ) {
      const type = drawType(rng, context, true);
      const event = planEvent(rng, type, Math.round(t), [vm], [vm], group);
      events.push(event);
      let busyUntil = event.removeMs ?? event.cancelMs ?? event.startMs ?? t;
      if (type === 'Preempt' || type === 'Terminate') {
        const deletedAt = (event.startMs as number) + rng.int(5, 60) * 1000;
        if (deletedAt >= endMs) break;
        vms.deleted(vm, deletedAt);
        const createdAt = deletedAt + rng.int(60, 600) * 1000;
        if (createdAt >= endMs) break;
        vm = vms.addScaleSetInstance(group, vms.identities[vm]?.zone ?? '1', createdAt);
        busyUntil = createdAt;
      }
      // One maintenance at a time per scale-set VM (an event never outlives the VM it targets).
      t = Math.max(t + rng.exponential(meanGap), busyUntil + MINUTE);
    }
  }
}

/** An event type by TYPE_WEIGHTS; only scale-set VMs are preempted or terminated. */
function drawType(rng: Prng, context: PlanContext, scaleSet: boolean): EventType {
  const vmssDeleting = Math.min(
    0.6,
    (TYPE_WEIGHTS.Preempt + TYPE_WEIGHTS.Terminate) / (1 - context.options.availabilitySetFraction || 1),
  );
  if (scaleSet && rng.chance(vmssDeleting))
    return rng.chance(TYPE_WEIGHTS.Preempt / (TYPE_WEIGHTS.Preempt + TYPE_WEIGHTS.Terminate))
      ? 'Preempt'
      : 'Terminate';
  const x = rng.next() * (TYPE_WEIGHTS.Freeze + TYPE_WEIGHTS.Reboot + TYPE_WEIGHTS.Redeploy);
  if (x < TYPE_WEIGHTS.Freeze) return 'Freeze';
  return x < TYPE_WEIGHTS.Freeze + TYPE_WEIGHTS.Reboot ? 'Reboot' : 'Redeploy';
}

/** k of the members, drawn without replacement, ascending. */
function pickSubset(rng: Prng, members: readonly number[], k: number): number[] {
  const pool = [...members];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [pool[i], pool[j]] = [pool[j] as number, pool[i] as number];
  }
  return pool.slice(0, k).sort((a, b) => a - b);
}

/** How long before NotBefore Azure announces an event of this type. */
function drawNoticeMs(rng: Prng, type: EventType, group: Group): number {
  if (type === 'Freeze') return 15 * MINUTE;
  if (type === 'Preempt') return 30_000;
  if (type === 'Terminate') return group.terminateNoticeMs;
  if (rng.chance(LONG_NOTICE_SHARE)) return rng.int(1 * DAY, 7 * DAY);
  return rng.int(15 * MINUTE, 2 * HOUR);
}

/** The leader's approval at atMs: a short Freeze by rule alone, anything else after a drain hook. */
function drawApproval(rng: Prng, type: EventType, atMs: number): Approval {
  if (type === 'Freeze') return { atMs, rule: 'approve-short-freeze', hooks: [] };
  const hook = { name: 'drain-lb', ok: true, exitCode: 0, durationMs: rng.int(300, 8000), timedOut: false };
  return { atMs, rule: 'drain-then-approve', hooks: [hook] };
}

/** When Azure removes a started event (completed); null for Preempt/Terminate (the VM is deleted). */
function drawRemoveMs(rng: Prng, type: EventType, startMs: number): number | null {
  if (type === 'Freeze') return startMs + rng.int(30, 300) * 1000;
  if (type === 'Reboot') return startMs + rng.int(120, 900) * 1000;
  if (type === 'Redeploy') return startMs + rng.int(300, 1200) * 1000;
  return null;
}

/**
 * One event's life: its source and duration, its notice, maybe a NotBefore update, then canceled — or approved
 * or not, started and (unless it deletes the VM) removed.
 */
function planEvent(
  rng: Prng,
  type: EventType,
  publishMs: number,
  affected: number[],
  audience: number[],
  group: Group,
): PlannedEvent {
  const deleting = type === 'Preempt' || type === 'Terminate';
  const eventSource =
    type === 'Terminate' || ((type === 'Reboot' || type === 'Redeploy') && rng.chance(USER_SOURCE_SHARE))
      ? 'User'
      : 'Platform';
  const durationInSeconds = type === 'Freeze' ? rng.pick([0, 2, 5, 5, 5, 9]) : -1;
  const notBeforeMs = floorToSecond(publishMs + drawNoticeMs(rng, type, group));
  let notBefore = notBeforeMs;
  let update: PlannedEvent['update'] = null;
  if (type !== 'Preempt' && rng.chance(UPDATE_SHARE)) {
    const atMs = Math.round(publishMs + rng.uniform(0.1, 0.6) * (notBeforeMs - publishMs));
    notBefore = notBeforeMs + rng.int(10, 120) * MINUTE;
    update = { atMs, notBeforeMs: notBefore };
  }
  let cancelMs: number | null = null;
  let approval: Approval | null = null;
  let startMs: number | null = null;
  let removeMs: number | null = null;
  if (!deleting && rng.chance(CANCEL_SHARE)) {
    const from = update?.atMs ?? publishMs;
    cancelMs = Math.min(
      Math.round(from + rng.uniform(0.1, 0.9) * (notBefore - from)),
      notBefore - 2 * POLL_MS,
    );
  } else {
    if (!deleting && update === null && rng.chance(APPROVAL_SHARE_OF_ELIGIBLE)) {
      const atMs = Math.round(publishMs + POLL_MS + rng.uniform(0.02, 0.3) * (notBefore - publishMs));
      approval = drawApproval(rng, type, atMs);
      startMs = atMs + rng.int(1, 30) * 1000;
    } else {
      startMs = notBefore + (type === 'Preempt' ? rng.int(0, 5_000) : rng.int(0, 90_000));
    }
    removeMs = drawRemoveMs(rng, type, startMs);
  }
  return {
    eventId: rng.guid().toUpperCase(),
    type,
    eventSource,
    durationInSeconds,
    affected,
    audience,
    publishMs,
    notBeforeMs,
    update,
    approval,
    cancelMs,
    startMs,
    removeMs,
    subSeed: rng.uint32(),
  };
}

/** 3. The truth, from the same steps records() will stream. */
function fleetTruth(world: World): FleetTruth {
  const byTransition: Record<Transition, number> = {
    scheduled: 0,
    updated: 0,
    approved: 0,
    started: 0,
    completed: 0,
    canceled: 0,
  };
  const byType: Record<string, number> = {};
  let recordCount = 0;
  let affectedVmEvents = 0;
  const events = world.events.map((event, e): TruthEvent => {
    const steps = eventSteps(world, e);
    for (const step of steps) byTransition[step.kind]++;
    recordCount += steps.length;
    affectedVmEvents += event.affected.length;
    byType[event.type] = (byType[event.type] ?? 0) + 1;
    return truthEvent(world, event, steps);
  });
  return {
    maintenanceEvents: world.events.length,
    events,
    counts: { records: recordCount, affectedVmEvents, byTransition, byType },
  };
}

/** What the affected VMs of one event reported: the furthest status, the first sighting. */
function truthEvent(world: World, event: PlannedEvent, steps: readonly Step[]): TruthEvent {
  const affected = new Set(event.affected);
  let status: TruthStatus = 'scheduled';
  let firstSeen = Number.POSITIVE_INFINITY;
  for (const step of steps) {
    if (!affected.has(step.v)) continue;
    if (step.kind === 'scheduled') firstSeen = Math.min(firstSeen, step.t);
    if (step.kind === 'completed' || step.kind === 'canceled') status = step.kind;
    else if (step.kind === 'started' && status === 'scheduled') status = 'started';
  }
  const name = (v: number): string => world.identities[v]?.name ?? '';
  return {
    eventId: event.eventId,
    occurrence: 1,
    eventType: event.type,
    affected: event.affected.map(name),
    observers: event.audience.slice(event.affected.length).map(name),
    status,
    firstSeenAt: isoTime(firstSeen),
    notBefore: isoTime(event.update?.notBeforeMs ?? event.notBeforeMs),
  };
}

interface World {
  events: PlannedEvent[];
  identities: VmIdentity[];
  phases: number[];
  endMs: number;
  options: Required<FleetOptions>;
}

/**
 * Every record step of one event, for every VM that sees it, cut at the window's end (a step observed at or
 * after the end is not reported: the event stays pending). Deterministic: per-VM details come from the event's
 * own seed, drawn in a fixed order.
 */
function eventSteps(world: World, e: number): Step[] {
  const event = world.events[e] as PlannedEvent;
  const rng = new Prng(event.subSeed);
  const steps: Step[] = [];
  const add = (t: number, v: number, kind: Transition, impact?: Impact) => {
    if (t < world.endMs)
      steps.push({ t, rank: TRANSITION_RANK[kind], e, v, kind, ...(impact ? { impact } : {}) });
  };
  const leader = event.affected[0];
  for (let i = 0; i < event.audience.length; i++) {
    const v = event.audience[i] as number;
    const affected = i < event.affected.length;
    const phase = world.phases[v] as number;
    add(observe(event.publishMs, phase), v, 'scheduled');
    if (event.update) add(observe(event.update.atMs, phase), v, 'updated');
    if (event.approval && v === leader) add(event.approval.atMs, v, 'approved');
    if (event.cancelMs !== null) {
      add(observe(event.cancelMs, phase), v, 'canceled');
      continue;
    }
    const startMs = event.startMs as number;
    add(observe(startMs, phase), v, 'started');
    if (event.removeMs === null) continue; // Preempt / Terminate: the VM is deleted, nothing more is sent
    const removedAt = observe(event.removeMs, phase);
    if (!affected) {
      // An observer: its own VM is not touched; only the stall detector's jitter and one poll interval.
      add(removedAt, v, 'completed', {
        inferred: false,
        hostRebooted: false,
        downtimeFromMs: null,
        downtimeToMs: null,
        stallMs: rng.int(0, 40),
        gapMs: POLL_MS + rng.int(0, 150),
      });
      continue;
    }
    if (event.type === 'Freeze') {
      const stallMs = rng.int(500, 10_000);
      add(removedAt, v, 'completed', {
        inferred: false,
        hostRebooted: false,
        downtimeFromMs: null,
        downtimeToMs: null,
        stallMs,
        gapMs: Math.max(POLL_MS, rng.int(0, POLL_MS - 1) + stallMs),
      });
      continue;
    }
    // Reboot / Redeploy: the host reboots some seconds after Started; the VM is down 30 s – 10 min. If the event
    // is gone from the first document after boot, the transform infers completed (host-rebooted).
    const fromMs = lastPollBefore(startMs + rng.int(5, 60) * 1000, phase);
    const downtimeSeconds = rng.int(30, 600);
    const toMs = fromMs + downtimeSeconds * 1000;
    const vanished = event.removeMs <= toMs;
    add(vanished ? toMs : removedAt, v, 'completed', {
      inferred: vanished,
      hostRebooted: true,
      downtimeFromMs: fromMs,
      downtimeToMs: toMs,
      stallMs: rng.int(0, 40),
      gapMs: toMs - fromMs,
    });
  }
  return steps;
}

// ----------------------------------------------------------------------------------------------------------
// Streaming.

/** Time order; ties in one poll of one VM in the transitions' natural order (TRANSITION_RANK). */
function before(a: Step, b: Step): boolean {
  if (a.t !== b.t) return a.t < b.t;
  if (a.v !== b.v) return a.v < b.v;
  if (a.rank !== b.rank) return a.rank < b.rank;
  return a.e < b.e;
}

/** A binary min-heap of steps. */
class StepHeap {
  readonly #items: Step[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): Step | undefined {
    return this.#items[0];
  }

  push(step: Step): void {
    const items = this.#items;
    items.push(step);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i] as Step, items[parent] as Step)) break;
      [items[i], items[parent]] = [items[parent] as Step, items[i] as Step];
      i = parent;
    }
  }

  pop(): Step | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && before(items[l] as Step, items[m] as Step)) m = l;
        if (r < items.length && before(items[r] as Step, items[m] as Step)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m] as Step, items[i] as Step];
        i = m;
      }
    }
    return top;
  }
}

function* streamRecords(world: World): Generator<LifecycleRecord> {
  const { events } = world;
  // Per-VM DocumentIncarnation: every change of the document a VM sees bumps it (one bump per poll).
  const incarnation = new Int32Array(world.identities.length).fill(1);
  const lastChange = new Float64Array(world.identities.length).fill(-1);
  const heap = new StepHeap();
  let next = 0;
  for (;;) {
    const top = heap.peek();
    const event = events[next];
    if (event !== undefined && (top === undefined || event.publishMs <= top.t)) {
      for (const step of eventSteps(world, next)) heap.push(step);
      next++;
      continue;
    }
    const step = heap.pop();
    if (step === undefined) return;
    if (step.kind !== 'approved' && lastChange[step.v] !== step.t) {
      incarnation[step.v] = (incarnation[step.v] as number) + 1;
      lastChange[step.v] = step.t;
    }
    yield buildStepRecord(world, step, incarnation[step.v] as number);
  }
}

function buildStepRecord(world: World, step: Step, incarnation: number): LifecycleRecord {
  const event = world.events[step.e] as PlannedEvent;
  const vm = world.identities[step.v] as VmIdentity;
  const phase = world.phases[step.v] as number;
  const firstSeenAtMs = observe(event.publishMs, phase);
  const updatedAtMs = event.update === null ? null : observe(event.update.atMs, phase);
  const updated = updatedAtMs !== null && step.t >= updatedAtMs;
  const notBeforeMs = updated ? (event.update?.notBeforeMs as number) : event.notBeforeMs;
  const started = step.kind === 'started' || (step.kind === 'completed' && event.startMs !== null);
  const scheduledEvent = (status: 'Scheduled' | 'Started', nb: number): ScheduledEvent => ({
    EventId: event.eventId,
    EventType: event.type,
    ResourceType: 'VirtualMachine',
    Resources: event.affected.map((v) => world.identities[v]?.name ?? ''),
    EventStatus: status,
    NotBefore: status === 'Started' ? '' : rfc1123(nb),
    notBeforeUtc: status === 'Started' ? null : isoTime(nb),
    Description: DESCRIPTION[event.type],
    EventSource: event.eventSource,
    DurationInSeconds: event.durationInSeconds,
  });
  const last = scheduledEvent(started ? 'Started' : 'Scheduled', notBeforeMs);
  const tracked: TrackedEvent = {
    eventId: event.eventId,
    occurrence: 1,
    last,
    firstSeenStatus: 'Scheduled',
    firstSeenAtMs,
    startedAtMs: started && event.startMs !== null ? observe(event.startMs, phase) : null,
    lastNotBeforeUtc: isoTime(notBeforeMs),
    lastSeenAtMs: step.t,
    lastIncarnation: incarnation,
    approvedByUs: event.approval !== null && step.v === event.affected[0],
    approvalsRecorded: [],
    updateCount: updated ? 1 : 0,
    maxStallMs: step.impact?.stallMs ?? null,
    maxObservationGapMs: step.impact?.gapMs ?? null,
    downtime: null,
  };
  const ctx: RecordContext = { vm, source: vm.resourceId };
  const base = { transition: step.kind, timeMs: step.t, incarnation };
  switch (step.kind) {
    case 'updated': {
      const previous = scheduledEvent('Scheduled', event.notBeforeMs);
      const previousValues = {
        NotBefore: previous.NotBefore,
        notBeforeUtc: previous.notBeforeUtc,
        Resources: [...previous.Resources],
        DurationInSeconds: previous.DurationInSeconds,
        Description: previous.Description,
      };
      const changed = ['NotBefore'];
      const change = contentHash({
        changed,
        previous: previousValues,
        current: [last.NotBefore, last.Resources, last.DurationInSeconds, last.Description],
      });
      return buildRecord(ctx, tracked, {
        ...base,
        discriminator: `update=1|change=${change}`,
        extras: { changed, previous: previousValues, updateSequence: 1 },
      });
    }
    case 'approved': {
      const approval = event.approval as Approval;
      return buildRecord(ctx, tracked, {
        ...base,
        extras: {
          approval: {
            approvedAt: isoTime(approval.atMs),
            rule: approval.rule,
            leader: true,
            posted: true,
            dryRun: false,
            hooks: approval.hooks.map((hook) => ({ ...hook })),
          },
        },
      });
    }
    case 'canceled':
      return buildRecord(ctx, tracked, { ...base, endedAtMs: step.t, extras: { inferred: false } });
    case 'completed': {
      const impact = step.impact as Impact;
      const rebooted = impact.downtimeFromMs !== null && impact.downtimeToMs !== null;
      return buildRecord(ctx, tracked, {
        ...base,
        endedAtMs: step.t,
        extras: {
          inferred: impact.inferred,
          ...(impact.inferred ? { reason: 'host-rebooted' } : {}),
          observedImpact: {
            expectedDurationSeconds: event.durationInSeconds,
            hostRebooted: impact.hostRebooted,
            downtimeSeconds: rebooted
              ? ((impact.downtimeToMs as number) - (impact.downtimeFromMs as number)) / 1000
              : null,
            downtimeFrom: rebooted ? isoTime(impact.downtimeFromMs as number) : null,
            downtimeTo: rebooted ? isoTime(impact.downtimeToMs as number) : null,
            longestStallMs: impact.stallMs,
            longestObservationGapMs: impact.gapMs,
          },
        },
      });
    }
    default:
      return buildRecord(ctx, tracked, base);
  }
}

// ----------------------------------------------------------------------------------------------------------
// Heartbeats.

/** Forwarder versions of the synthetic fleet: most run the current one, some the previous. */
const FORWARDER_VERSIONS = ['0.1.0', '0.0.9'] as const;
/** Share of VMs whose forwarder stops sending before the end: in the last 6 days (silent at the end)… */
const STOP_RECENT_SHARE = 0.015;
/** …or earlier in the window (gone at the end: quiet for more than 7 days). */
const STOP_EARLY_SHARE = 0.01;
/** Of the stopped forwarders, the share that stopped cleanly (a stop heartbeat: service stopped, VM off). */
const CLEAN_STOP_SHARE = 0.5;
/** Share of VMs with a problem spell lasting to the end, and with one that ended before it. */
const SICK_AT_END_SHARE = 0.015;
const SICK_BEFORE_SHARE = 0.01;
const SICK_KINDS: readonly SickKind[] = ['dead-letters', 'backlog', 'imds', 'failing'];
/** VMs that also report a Slack sink in their heartbeats. */
const SLACK_SHARE = 0.3;

interface HeartbeatPlan {
  v: number;
  phaseMs: number;
  version: string;
  slack: boolean;
  /** The run's start (for the heartbeat ids and sequence numbers). */
  runStartMs: number;
  /** First and last (exclusive) heartbeat time. */
  fromMs: number;
  toMs: number;
  /** A start heartbeat at fromMs (a VM created in the window). */
  starts: boolean;
  /** A stop heartbeat at toMs (a clean stop). */
  cleanStop: boolean;
  sick: { kind: SickKind; fromMs: number; toMs: number } | null;
}

function planHeartbeats(
  world: World,
  infos: readonly VmInfo[],
  startMs: number,
): { plans: HeartbeatPlan[]; truth: HeartbeatTruth } {
  const { options, endMs } = world;
  const truth: HeartbeatTruth = { heartbeats: 0, stopped: [], sick: [] };
  const intervalMs = options.heartbeatIntervalSeconds * 1000;
  if (intervalMs === 0) return { plans: [], truth };
  const from =
    options.heartbeatDays > 0 ? Math.max(startMs, endMs - Math.round(options.heartbeatDays * DAY)) : startMs;
  const rng = new Prng((options.seed ^ 0x6e61b3a7) >>> 0);
  const plans: HeartbeatPlan[] = [];
  infos.forEach((info, v) => {
    const created = info.createdAt === null ? null : Date.parse(info.createdAt);
    const deleted = info.deletedAt === null ? null : Date.parse(info.deletedAt);
    const plan: HeartbeatPlan = {
      v,
      phaseMs: rng.int(0, intervalMs - 1),
      version: rng.chance(0.85) ? FORWARDER_VERSIONS[0] : FORWARDER_VERSIONS[1],
      slack: rng.chance(SLACK_SHARE),
      runStartMs: created === null ? startMs - rng.int(1, 30) * DAY : created + 30_000,
      fromMs: created === null ? from : Math.max(from, created + 30_000),
      toMs: deleted ?? endMs,
      starts: created !== null && created + 30_000 >= from,
      cleanStop: false,
      sick: null,
    };
    const roll = rng.next();
    if (deleted === null && roll < STOP_RECENT_SHARE + STOP_EARLY_SHARE) {
      const recent = roll < STOP_RECENT_SHARE;
      // Recent stops fall inside the heartbeat window (a VM that stopped before it sent none: it is unknown).
      const recentWithin = Math.max(4 * 3600, Math.min(6 * 86_400, (endMs - from) / 1000 - 3600));
      const stopAt = recent
        ? endMs - rng.int(3 * 3600, recentWithin) * 1000
        : startMs + rng.uniform(0, Math.max(0, endMs - startMs - 8 * DAY));
      plan.toMs = Math.max(plan.fromMs, Math.round(stopAt));
      plan.cleanStop = rng.chance(CLEAN_STOP_SHARE);
    }
    const sickRoll = rng.next();
    if (sickRoll < SICK_AT_END_SHARE + SICK_BEFORE_SHARE) {
      const kind = rng.pick(SICK_KINDS);
      const sickFrom = endMs - rng.int(2 * 3600, 20 * 86_400) * 1000;
      const sickTo = sickRoll < SICK_AT_END_SHARE ? endMs : sickFrom + rng.int(2 * 3600, 3 * 86_400) * 1000;
      plan.sick = { kind, fromMs: sickFrom, toMs: Math.min(endMs, sickTo) };
    }
    // A forwarder that sends nothing in the heartbeat window (stopped or deleted before it) is not known.
    if (plan.toMs <= plan.fromMs) return;
    plans.push(plan);
    if (plan.toMs < (deleted ?? endMs))
      truth.stopped.push({ vm: info.name, atMs: plan.toMs, clean: plan.cleanStop });
    if (plan.sick !== null && plan.sick.toMs > plan.fromMs && plan.sick.fromMs < plan.toMs)
      truth.sick.push({
        vm: info.name,
        kind: plan.sick.kind,
        fromMs: plan.sick.fromMs,
        toMs: plan.sick.toMs,
      });
  });
  for (const plan of plans) truth.heartbeats += countHeartbeats(plan, intervalMs);
  return { plans, truth };
}

/** The times a plan's forwarder sends heartbeats (start, every interval at its phase, a clean stop), in order. */
function* heartbeatTimes(plan: HeartbeatPlan, intervalMs: number): Generator<number> {
  if (plan.starts) yield plan.fromMs;
  const first = plan.fromMs + ((((plan.phaseMs - plan.fromMs) % intervalMs) + intervalMs) % intervalMs);
  for (
    let t = first === plan.fromMs && plan.starts ? first + intervalMs : first;
    t < plan.toMs;
    t += intervalMs
  )
    yield t;
  if (plan.cleanStop) yield plan.toMs;
}

function countHeartbeats(plan: HeartbeatPlan, intervalMs: number): number {
  let n = 0;
  for (const _ of heartbeatTimes(plan, intervalMs)) n++;
  return n;
}

function* streamHeartbeats(world: World, plans: readonly HeartbeatPlan[]): Generator<HeartbeatRecord> {
  const intervalMs = world.options.heartbeatIntervalSeconds * 1000;
  if (intervalMs === 0) return;
  // One lazy cursor per VM in a heap by its next time (then VM): memory grows with the VMs, not the heartbeats.
  const cursors = plans.map((plan) => {
    const times = heartbeatTimes(plan, intervalMs);
    return { plan, times, current: times.next(), index: 0 };
  });
  const heap = new StepHeap();
  cursors.forEach((c, i) => {
    if (!c.current.done) heap.push({ t: c.current.value, rank: 0, e: i, v: c.plan.v, kind: 'scheduled' });
  });
  for (let top = heap.pop(); top !== undefined; top = heap.pop()) {
    const cursor = cursors[top.e]!;
    const next = cursor.times.next();
    yield buildFleetHeartbeat(world, cursor.plan, top.t, cursor.index++, next.done === true);
    cursor.current = next;
    if (!next.done) heap.push({ t: next.value, rank: 0, e: top.e, v: top.v, kind: 'scheduled' });
  }
}

function buildFleetHeartbeat(
  world: World,
  plan: HeartbeatPlan,
  t: number,
  index: number,
  last: boolean,
): HeartbeatRecord {
  const intervalMs = world.options.heartbeatIntervalSeconds * 1000;
  const trigger = plan.starts && index === 0 ? 'start' : plan.cleanStop && last ? 'stop' : 'interval';
  const sick = plan.sick !== null && t >= plan.sick.fromMs && t < plan.sick.toMs ? plan.sick : null;
  const sinks: HeartbeatSink[] = [
    {
      name: 'fleet-hub',
      type: 'eventhubs',
      state: 'ok',
      pending: 0,
      oldestPendingAgeSeconds: 0,
      deadLetters: 0,
    },
  ];
  if (plan.slack)
    sinks.push({
      name: 'ops-slack',
      type: 'slack',
      state: 'ok',
      pending: 0,
      oldestPendingAgeSeconds: 0,
      deadLetters: 0,
    });
  const sickSink = sinks.at(-1)!;
  if (sick?.kind === 'dead-letters')
    sickSink.deadLetters = 1 + Math.floor((t - sick.fromMs) / (6 * 3_600_000));
  if (sick?.kind === 'backlog') {
    sickSink.state = 'retrying';
    sickSink.pending = 3 + Math.floor((t - sick.fromMs) / 3_600_000);
    sickSink.oldestPendingAgeSeconds = Math.round((t - sick.fromMs) / 1000) + 3600;
    sickSink.lastError = 'http-503: destination unavailable';
  }
  if (sick?.kind === 'failing') {
    sickSink.state = 'failing';
    sickSink.pending = 1;
    sickSink.oldestPendingAgeSeconds = Math.min(1200, Math.round((t - sick.fromMs) / 1000));
    sickSink.lastError = 'Unauthorized: the identity has no Azure Event Hubs Data Sender role';
  }
  const imdsOk = sick?.kind !== 'imds';
  const vm = world.identities[plan.v] as VmIdentity;
  return buildHeartbeat({
    trigger,
    sequence: 1 + Math.max(0, Math.round((t - plan.runStartMs) / intervalMs)),
    intervalSeconds: world.options.heartbeatIntervalSeconds,
    timeMs: t,
    vm,
    forwarder: {
      version: plan.version,
      configDigest: plan.slack ? 'sha256:5a1e0b2c9d8f7e61' : 'sha256:0e9d8c7b6a5f4e32',
      startedAtMs: plan.runStartMs,
      platform: 'linux',
      source: 'imds',
    },
    imds: imdsOk
      ? { ok: true, lastSuccessAt: isoTime(t - 400), consecutiveFailures: 0 }
      : {
          ok: false,
          lastSuccessAt: isoTime(sick!.fromMs),
          consecutiveFailures: Math.round((t - sick!.fromMs) / POLL_MS),
          lastFailure: { reason: 'timeout', at: isoTime(t - 400) },
        },
    store: { ok: true },
    sinks,
    approval: { policy: false, rules: 0, dryRun: false, leader: 'first', hooks: 0 },
  });
}

/** Two time-ordered streams as one (records before heartbeats at the same millisecond). */
function* mergeByTime(
  records: Generator<LifecycleRecord>,
  heartbeats: Generator<HeartbeatRecord>,
): Generator<LifecycleRecord | HeartbeatRecord> {
  let r = records.next();
  let h = heartbeats.next();
  for (;;) {
    if (r.done) {
      if (h.done) return;
      yield h.value;
      h = heartbeats.next();
    } else if (h.done || r.value.time <= h.value.time) {
      yield r.value;
      r = records.next();
    } else {
      yield h.value;
      h = heartbeats.next();
    }
  }
}

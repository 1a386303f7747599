/**
 * The simulator's world: VMs (identities, availability sets, per-VM DocumentIncarnation), events and their
 * state machine, approvals, and timed actions (scenario steps). Pure logic driven by a SimClock; `sync()`
 * applies every transition that is due, in time order, so a poller that looks rarely sees skipped
 * incarnations exactly like a slow poller on Azure.
 */
import type { ScheduledEvent, VmIdentity } from '../domain/index.ts';
import { parseDuration, type SimClock } from './clock.ts';
import {
  DEFAULT_DESCRIPTION,
  DEFAULT_NOTICE_MS,
  DEFAULT_STARTED_FOR_MS,
  FALLBACK_STARTED_FOR_MS,
  floorToSecond,
  type InjectEventInput,
  injectEventSchema,
  parseInstant,
  rfc1123,
  type SimEvent,
  type SimEventStatus,
} from './events.ts';
import { deriveIdentity, type SimVm } from './identity.ts';
import { featuresOf } from './versions.ts';

const { randomUUID } = process.getBuiltinModule('node:crypto');

/** An approval (POST StartRequests) the simulator received. */
export interface ApprovalRecord {
  eventId: string;
  /** Simulated time of the approval, ISO 8601. */
  at: string;
  /** The VM identity that posted it. */
  vm: string;
}

/** A Scheduled Events document as IMDS serves it (fields shaped by api-version). */
export interface SimDocument {
  DocumentIncarnation: number;
  Events: Array<Partial<Omit<ScheduledEvent, 'notBeforeUtc' | 'extra'>>>;
}

/** Options to register a VM. */
export interface VmOptions {
  identity?: Partial<VmIdentity>;
  availabilitySet?: string;
  incarnation?: number;
  platformFaultDomain?: number;
  platformUpdateDomain?: number;
}

interface TimedAction {
  dueMs: number;
  seq: number;
  label: string;
  run: () => void;
}

/** A change the state went through (for logs and diagnostics). */
export interface StateChange {
  at: number;
  what: string;
  eventId?: string;
}

export interface SimulatorStateOptions {
  clock: SimClock;
  primaryVmName: string;
  primaryVm?: VmOptions;
  /** Availability set of VMs registered without one (default "sim-avset": everyone sees everyone's events). */
  defaultAvailabilitySet?: string;
  /** DocumentIncarnation of a new VM (default 1). */
  initialIncarnation?: number;
  onChange?: (change: StateChange) => void;
}

/** The simulated IMDS world. */
export class SimulatorState {
  readonly clock: SimClock;
  readonly primaryVmName: string;
  readonly #vms = new Map<string, SimVm>();
  readonly #events = new Map<string, SimEvent>();
  readonly #knownIds = new Set<string>();
  readonly #approvals: ApprovalRecord[] = [];
  #actions: TimedAction[] = [];
  #seq = 0;
  readonly #defaultSet: string;
  readonly #initialIncarnation: number;
  readonly #onChange: ((change: StateChange) => void) | undefined;

  constructor(options: SimulatorStateOptions) {
    this.clock = options.clock;
    this.primaryVmName = options.primaryVmName;
    this.#defaultSet = options.defaultAvailabilitySet ?? 'sim-avset';
    this.#initialIncarnation = options.initialIncarnation ?? 1;
    this.#onChange = options.onChange;
    this.ensureVm(options.primaryVmName, options.primaryVm);
  }

  /** Returns the VM called `name`, registering it (deterministic identity, default set) if new. */
  ensureVm(name: string, options: VmOptions = {}): SimVm {
    const existing = this.#vms.get(name);
    if (existing) {
      if (options.identity) existing.identity = { ...existing.identity, ...options.identity, name };
      if (options.availabilitySet) existing.availabilitySet = options.availabilitySet;
      if (options.incarnation !== undefined) existing.incarnation = options.incarnation;
      return existing;
    }
    const index = this.#vms.size;
    const vm: SimVm = {
      identity: deriveIdentity(name, options.identity),
      availabilitySet: options.availabilitySet ?? this.#defaultSet,
      incarnation: options.incarnation ?? this.#initialIncarnation,
      platformFaultDomain: options.platformFaultDomain ?? index % 3,
      platformUpdateDomain: options.platformUpdateDomain ?? index % 5,
    };
    this.#vms.set(name, vm);
    return vm;
  }

  vm(name: string): SimVm | undefined {
    return this.#vms.get(name);
  }

  vms(): SimVm[] {
    return [...this.#vms.values()];
  }

  events(): SimEvent[] {
    return [...this.#events.values()].map((e) => ({ ...e, resources: [...e.resources] }));
  }

  event(id: string): SimEvent | undefined {
    return this.#events.get(id);
  }

  approvals(): ApprovalRecord[] {
    return this.#approvals.map((a) => ({ ...a }));
  }

  /** Number of timed actions (scenario steps) not yet run. */
  pendingActions(): number {
    return this.#actions.length;
  }

  /** Schedules `run` at simulated time `dueMs` (applied by sync()). */
  schedule(dueMs: number, label: string, run: () => void): void {
    this.#actions.push({ dueMs, seq: this.#seq++, label, run });
    this.#actions.sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
  }

  /** Applies every due transition and action, in time order. Returns how many were applied. */
  sync(): number {
    const now = this.clock.now();
    let applied = 0;
    for (let guard = 0; guard < 100_000; guard++) {
      const next = this.#nextDue(now);
      if (!next) break;
      next();
      applied++;
    }
    return applied;
  }

  /** Simulated time of the next automatic transition or timed action, or null when nothing is pending. */
  nextDueMs(): number | null {
    let best = this.#actions[0]?.dueMs ?? Number.POSITIVE_INFINITY;
    for (const event of this.#events.values()) {
      if (event.status === 'Scheduled' && event.autoStart && event.notBeforeMs !== null)
        best = Math.min(best, event.notBeforeMs);
      else if (event.status === 'Started' && event.startedAtMs !== null)
        best = Math.min(best, event.startedAtMs + event.startedForMs);
    }
    return Number.isFinite(best) ? best : null;
  }

  #nextDue(now: number): (() => void) | undefined {
    let bestMs = Number.POSITIVE_INFINITY;
    let best: (() => void) | undefined;
    const action = this.#actions[0];
    if (action && action.dueMs <= now) {
      bestMs = action.dueMs;
      best = () => {
        this.#actions.shift();
        action.run();
      };
    }
    for (const event of this.#events.values()) {
      if (event.status === 'Scheduled' && event.autoStart && event.notBeforeMs !== null) {
        if (event.notBeforeMs <= now && event.notBeforeMs < bestMs) {
          bestMs = event.notBeforeMs;
          const at = event.notBeforeMs;
          best = () => this.#start(event, at, 'NotBefore passed');
        }
      } else if (event.status === 'Started' && event.startedAtMs !== null) {
        const removeAt = event.startedAtMs + event.startedForMs;
        if (removeAt <= now && removeAt < bestMs) {
          bestMs = removeAt;
          best = () => this.#delete(event, removeAt, 'completed');
        }
      }
    }
    return best;
  }

  /** Injects an event (validated by injectEventSchema). Throws a RangeError/ZodError naming bad input. */
  inject(input: InjectEventInput, atMs: number = this.clock.now()): SimEvent {
    const spec = injectEventSchema.parse(input);
    const id = spec.id ?? randomUUID().toUpperCase();
    if (this.#events.has(id)) throw new RangeError(`event ${id} already exists`);
    const resources = spec.resources ?? [this.primaryVmName];
    for (const name of resources) this.ensureVm(name);
    let notBeforeMs: number | null = null;
    if (spec.notBefore !== undefined && spec.notBefore !== '') notBeforeMs = parseInstant(spec.notBefore);
    else if (spec.noticeSeconds !== undefined)
      notBeforeMs = atMs + parseDuration(spec.noticeSeconds, 'noticeSeconds');
    else if (spec.status === 'Scheduled') notBeforeMs = atMs + (DEFAULT_NOTICE_MS[spec.type] ?? 15 * 60_000);
    const audience = spec.availabilitySet
      ? [spec.availabilitySet]
      : [...new Set(resources.map((r) => this.ensureVm(r).availabilitySet))];
    const event: SimEvent = {
      id,
      type: spec.type,
      resourceType: spec.resourceType,
      resources,
      status: spec.status,
      notBeforeMs: notBeforeMs === null ? null : floorToSecond(notBeforeMs),
      description: spec.description ?? DEFAULT_DESCRIPTION[spec.type] ?? '',
      eventSource: spec.eventSource,
      durationInSeconds: spec.durationInSeconds,
      startedForMs:
        spec.startedFor !== undefined
          ? parseDuration(spec.startedFor, 'startedFor')
          : (DEFAULT_STARTED_FOR_MS[spec.type] ?? FALLBACK_STARTED_FOR_MS),
      autoStart: spec.autoStart,
      audienceSets: audience,
      createdAtMs: atMs,
      startedAtMs: spec.status === 'Started' ? atMs : null,
    };
    this.#events.set(id, event);
    this.#knownIds.add(id);
    this.#bump(event, atMs, `injected ${event.type} ${event.status}`);
    return { ...event };
  }

  /** Sets an event's status (Scheduled or Started). No change, no new incarnation. */
  setStatus(id: string, status: SimEventStatus, atMs: number = this.clock.now()): void {
    const event = this.#require(id);
    if (event.status === status) return;
    if (status === 'Started') this.#start(event, atMs, 'set Started');
    else {
      event.status = 'Scheduled';
      event.startedAtMs = null;
      if (event.notBeforeMs === null || event.notBeforeMs <= atMs)
        event.notBeforeMs = floorToSecond(atMs + 60_000);
      this.#bump(event, atMs, 'set Scheduled');
    }
  }

  /** Moves a Scheduled event's NotBefore (e.g. a predicted hardware failure rescheduled). */
  reschedule(id: string, notBefore: string | number, atMs: number = this.clock.now()): void {
    const event = this.#require(id);
    if (event.status !== 'Scheduled')
      throw new RangeError(`event ${id} is ${event.status}; only Scheduled events can be rescheduled`);
    const ms = floorToSecond(parseInstant(notBefore));
    if (ms === event.notBeforeMs) return;
    event.notBeforeMs = ms;
    this.#bump(event, atMs, `rescheduled to ${rfc1123(ms)}`);
  }

  /** Removes an event (Scheduled: Azure cancelled it; Started: it completed). */
  remove(id: string, atMs: number = this.clock.now()): void {
    const event = this.#require(id);
    this.#delete(event, atMs, event.status === 'Scheduled' ? 'cancelled' : 'completed');
  }

  /**
   * Records approvals from `vmName`. Known ids (also already started or finished ones) are accepted;
   * Scheduled ones start at once. Returns the ids the simulator never knew (the caller answers 400).
   */
  approve(vmName: string, ids: string[], atMs: number = this.clock.now()): { unknown: string[] } {
    const unknown = ids.filter((id) => !this.#knownIds.has(id));
    if (unknown.length > 0) return { unknown };
    for (const id of ids) {
      this.#approvals.push({ eventId: id, at: new Date(atMs).toISOString(), vm: vmName });
      const event = this.#events.get(id);
      if (event && event.status === 'Scheduled') this.#start(event, atMs, `approved by ${vmName}`);
    }
    return { unknown: [] };
  }

  /** The VM moved to another host: its DocumentIncarnation restarts at `incarnation` (default 1). */
  moveVm(name: string, incarnation = 1): void {
    const vm = this.ensureVm(name);
    vm.incarnation = incarnation;
    this.#onChange?.({
      at: this.clock.now(),
      what: `${name} moved to another host, incarnation ${incarnation}`,
    });
  }

  /** True when `vm` sees `event`: it is affected, or it is in an availability set the event is broadcast to. */
  visible(vm: SimVm, event: SimEvent): boolean {
    return event.resources.includes(vm.identity.name) || event.audienceSets.includes(vm.availabilitySet);
  }

  /**
   * The document VM `vmName` gets for `apiVersion` (undefined: the newest, every field). Fields and event
   * types the version does not know are left out, like IMDS does.
   */
  document(vmName: string, apiVersion?: string): SimDocument {
    const vm = this.ensureVm(vmName);
    const f = featuresOf(apiVersion ?? '9999-12-31');
    const events: SimDocument['Events'] = [];
    for (const e of this.#events.values()) {
      if (!this.visible(vm, e)) continue;
      if (e.type === 'Preempt' && !f.preempt) continue;
      if (e.type === 'Terminate' && !f.terminate) continue;
      const out: SimDocument['Events'][number] = {
        EventId: e.id,
        EventStatus: e.status,
        EventType: e.type,
        ResourceType: e.resourceType,
        Resources: e.resources.map((r) => (f.underscoreResourceNames ? `_${r}` : r)),
        NotBefore: e.status === 'Started' || e.notBeforeMs === null ? '' : rfc1123(e.notBeforeMs),
      };
      if (f.description) out.Description = e.description;
      if (f.eventSource) out.EventSource = e.eventSource;
      if (f.durationInSeconds) out.DurationInSeconds = e.durationInSeconds;
      events.push(out);
    }
    return { DocumentIncarnation: vm.incarnation, Events: events };
  }

  #require(id: string): SimEvent {
    const event = this.#events.get(id);
    if (!event) throw new RangeError(`no event with EventId ${id}`);
    return event;
  }

  #start(event: SimEvent, atMs: number, why: string): void {
    event.status = 'Started';
    event.startedAtMs = atMs;
    this.#bump(event, atMs, `started (${why})`);
  }

  #delete(event: SimEvent, atMs: number, why: string): void {
    this.#bump(event, atMs, `removed (${why})`);
    this.#events.delete(event.id);
  }

  /** A change to `event`: every VM that sees it gets a new DocumentIncarnation. */
  #bump(event: SimEvent, atMs: number, what: string): void {
    for (const vm of this.#vms.values()) if (this.visible(vm, event)) vm.incarnation++;
    this.#onChange?.({ at: atMs, what: `${event.id} ${what}`, eventId: event.id });
  }
}

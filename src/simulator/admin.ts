/**
 * SimulatorAdmin: the control surface of a running simulator, shared by the in-process API
 * (`RunningSimulator.admin`) and the HTTP admin API under /admin.
 */
import type { SimClock } from './clock.ts';
import type { InjectEventInput, SimEvent, SimEventStatus } from './events.ts';
import type { Fault, FaultController, FaultInput } from './faults.ts';
import type { SimVm } from './identity.ts';
import type { ApprovalRecord, SimDocument, SimulatorState, VmOptions } from './state.ts';

/** One request the simulator received. */
export interface RequestLogEntry {
  seq: number;
  /** Real time, ISO 8601. */
  at: string;
  method: string;
  path: string;
  vm: string;
  endpoint: 'scheduledevents' | 'instance' | 'token' | 'admin' | 'other';
  status: number | null;
  faults: string[];
}

/** Control operations of a running simulator (same operations as the HTTP /admin API). */
export interface SimulatorAdmin {
  /** Adds an event; returns it (with its EventId). */
  injectEvent(event: InjectEventInput): SimEvent;
  setStatus(eventId: string, status: SimEventStatus): void;
  /** Moves NotBefore of a Scheduled event (absolute RFC 1123 / ISO / epoch ms). */
  reschedule(eventId: string, notBefore: string | number): void;
  removeEvent(eventId: string): void;
  /** Jumps simulated time forward and applies every transition that became due. */
  advance(ms: number): void;
  /** Simulated now (epoch ms). */
  now(): number;
  /** Simulated time of the next automatic transition or scenario step (null: nothing pending). */
  nextTransitionAt(): number | null;
  setFaults(faults: FaultInput[]): Fault[];
  addFault(fault: FaultInput): Fault;
  clearFaults(): void;
  faults(): Array<Fault & { remaining: number | null }>;
  approvals(): ApprovalRecord[];
  /** The current document of a VM (default: the primary), all fields (newest api-version). */
  document(vmName?: string, apiVersion?: string): SimDocument;
  events(): SimEvent[];
  /** Registers (or updates) a VM identity. */
  addVm(name: string, options?: VmOptions): SimVm;
  vms(): SimVm[];
  /** The VM moved to another host: its DocumentIncarnation restarts. */
  moveVm(name: string, incarnation?: number): void;
  /** Requests received so far (count and log, newest last; the log keeps the last 10,000). */
  requests(): { count: number; log: RequestLogEntry[] };
  /** True once the scenario ended (all steps ran and no event is left, or endAfter passed). */
  scenarioDone(): boolean;
  /** Resolves when the scenario ends. */
  scenarioEnded(): Promise<void>;
}

/** The pieces the admin operates on. */
export interface AdminContext {
  state: SimulatorState;
  faults: FaultController;
  clock: SimClock;
  sync(): void;
  requests(): { count: number; log: RequestLogEntry[] };
  scenarioDone(): boolean;
  scenarioEnded(): Promise<void>;
}

/** Builds the admin facade over the simulator's state. Every mutation is followed by a sync(). */
export function createAdmin(ctx: AdminContext): SimulatorAdmin {
  const { state, faults, clock } = ctx;
  const mutate = <T>(fn: () => T): T => {
    ctx.sync();
    const result = fn();
    ctx.sync();
    return result;
  };
  return {
    injectEvent: (event) => mutate(() => state.inject(event)),
    setStatus: (id, status) => mutate(() => state.setStatus(id, status)),
    reschedule: (id, notBefore) => mutate(() => state.reschedule(id, notBefore)),
    removeEvent: (id) => mutate(() => state.remove(id)),
    advance: (ms) => mutate(() => clock.advance(ms)),
    now: () => clock.now(),
    nextTransitionAt: () => {
      ctx.sync();
      return state.nextDueMs();
    },
    setFaults: (list) => faults.set(list),
    addFault: (fault) => faults.add(fault),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    approvals: () => state.approvals(),
    document: (vmName, apiVersion) => {
      ctx.sync();
      return state.document(vmName ?? state.primaryVmName, apiVersion);
    },
    events: () => {
      ctx.sync();
      return state.events();
    },
    addVm: (name, options) => state.ensureVm(name, options),
    vms: () => state.vms(),
    moveVm: (name, incarnation) => mutate(() => state.moveVm(name, incarnation)),
    requests: () => ctx.requests(),
    scenarioDone: () => {
      ctx.sync();
      return ctx.scenarioDone();
    },
    scenarioEnded: () => ctx.scenarioEnded(),
  };
}

/**
 * Approving an event that affects several VMs only when every affected VM is prepared. An approval starts the event
 * for every VM in Resources, so the VM that approves must know the others' preparation: each VM publishes its
 * prepare state per event (PeerGate.publish), and before POSTing, an `approve-after-hooks` approval of an event
 * whose Resources name other VMs waits until every one of them is ready (PeerGate.check) — or records that it did
 * not approve and which VMs blocked. Approval knows only this interface; src/kubernetes implements it with the
 * Nodes of the cluster (docs/kubernetes.md#multi-node-events). The pure parts are here; the waiting is the runner's.
 */
import type { VmIdentity } from '../domain/index.ts';
import type { TrackedEvent } from '../transform/index.ts';
import { hookFailureReason } from './decision.ts';
import type { EventProgress } from './progress.ts';

/** This VM's preparation for an event, as the others read it. */
export interface PrepareState {
  state: 'preparing' | 'ready' | 'failed';
  /** Why it failed (the first failed hook and what it said). */
  detail?: string;
}

/** One other affected VM that is not ready (yet). */
export interface PeerStatus {
  /** The VM name as in Resources. */
  vm: string;
  /** How the VM is known to the gate (e.g. its Kubernetes node), if it is. */
  where?: string;
  /** Why it is not ready: preparing, failed (what it said), no state published, not a node of this cluster, ... */
  why: string;
}

/** What a check of the other affected VMs found. */
export interface PeerCheck {
  /** Will not become ready for this event (its preparation failed, it cannot be prepared): approval is off. */
  blocked: PeerStatus[];
  /** Not ready yet (check again). */
  waiting: PeerStatus[];
}

/** Implemented by src/kubernetes (ClusterPeers). Must not throw. */
export interface PeerGate {
  /** This VM's prepare state per EventId (the whole current set: events not in it are no longer published). */
  publish(states: ReadonlyMap<string, PrepareState>): void;
  /** Reads the other VMs of `resources` (this VM excluded) once: their prepare state for `eventId`. */
  check(eventId: string, others: readonly string[], signal: AbortSignal): Promise<PeerCheck>;
  /** How often a check is repeated while VMs are not ready. */
  readonly pollIntervalMs: number;
}

/** This VM's prepare state for an entry, or null when it publishes none (not affected, or the event ended). */
export function prepareStateOf(entry: EventProgress): PrepareState | null {
  if (!entry.affectsThisVm || entry.ended) return null;
  if (entry.prepare === 'pending' || entry.prepare === 'running') return { state: 'preparing' };
  const failed = hookFailureReason(entry.hooks);
  return failed === undefined ? { state: 'ready' } : { state: 'failed', detail: failed };
}

/** Every published prepare state, by EventId (the latest occurrence of an EventId wins). */
export function prepareStates(progress: readonly EventProgress[]): Map<string, PrepareState> {
  const states = new Map<string, PrepareState>();
  for (const entry of progress) {
    const state = prepareStateOf(entry);
    if (state !== null) states.set(entry.eventId, state);
  }
  return states;
}

/** Resource-name comparison as the transform does it: case-insensitive, without the pre-2017 leading '_'. */
export function normaliseVmName(name: string): string {
  return name.replace(/^_/, '').toLowerCase();
}

/**
 * The other VMs an approval of `event` would release, whose preparation it must wait for: the Resources besides
 * this VM (empty: a single-VM event, no wait).
 */
export function otherResources(event: TrackedEvent, vm: VmIdentity | undefined): string[] {
  const own = normaliseVmName(vm?.name ?? '');
  return event.last.Resources.filter((name) => normaliseVmName(name) !== own);
}

/** The `notPostedReason` of an approval the other VMs kept from being POSTed, naming each one and why. */
export function peersBlockedReason(statuses: readonly PeerStatus[], cutOff: string | null): string {
  const named = statuses.map((s) => `${s.vm}${s.where === undefined ? '' : ` (${s.where})`}: ${s.why}`);
  return `other affected VMs were not ready${cutOff === null ? '' : ` (${cutOff})`}: ${named.join('; ')}`;
}

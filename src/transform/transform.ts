/**
 * The pure diff transform: (previous state, poll outcome, VM identity, Kubernetes node, host boot time, stall,
 * approvals) → (next state, lifecycle records). No I/O, no clock reads, no randomness: every time comes from the
 * inputs, so the same inputs always give the same state and the same records (with the same ids).
 *
 * The rules are documented in docs/record-format.md ("When each transition is produced").
 */

import {
  approvalRecordKind,
  type KubernetesRecordContext,
  type LifecycleRecord,
  type LifecycleRecordData,
  type PollOutcome,
  type RecordedApproval,
  type ScheduledEvent,
  type VmIdentity,
} from '../domain/index.ts';
import { buildRecord, type RecordContext, recordSource } from './build-record.ts';
import { contentHash } from './ids.ts';
import {
  DEFAULT_MAX_GAP_MS,
  ENDED_MAX_ENTRIES,
  ENDED_RETENTION_MS,
  type ForwarderState,
  type ObservedDowntime,
  type TrackedEvent,
} from './state.ts';

/** One hook run reported with an approval. */
export interface ApprovalHookResult {
  name: string;
  ok: boolean;
  exitCode: number | null;
  durationMs: number;
  timedOut?: boolean;
  /** How long the hook was given (its timeout, cut to the deadline before NotBefore). */
  budgetMs?: number;
  /** What a built-in hook did or why it failed (e.g. the pods and PodDisruptionBudgets that blocked a drain). */
  detail?: string;
}

/** An approval committed by the approval module; becomes an `approved` record. */
export interface ApprovalInput {
  eventId: string;
  /** When the approval was decided/POSTed, epoch ms (the record's `time`). */
  approvedAtMs: number;
  /** Name of the policy rule (or 'manual'). */
  rule: string;
  /** Whether this VM is the leader for the event (only a leader POSTs). */
  leader: boolean;
  hooks: ApprovalHookResult[];
  dryRun?: boolean;
  /**
   * Whether StartRequests was actually POSTed for the event. Defaults to
   * `leader && !dryRun && every hook ok`. Only a posted approval makes the event "approved by us".
   */
  posted?: boolean;
  /**
   * Why the event will start without our approval (a leader's approval not POSTed: a hook failed, the drain was
   * interrupted, NotBefore passed, IMDS rejected it, other nodes were not ready; an affected non-leader whose own
   * preparation failed). Recorded as `approval.notPostedReason`.
   */
  notPostedReason?: string;
}

/** Everything one transform step needs. */
export interface TransformInput {
  outcome: PollOutcome;
  vm: VmIdentity | undefined;
  /**
   * The Kubernetes node this forwarder runs on (`kubernetes.enabled`), put in every record as `data.kubernetes`;
   * undefined (the default) outside Kubernetes: records carry no such field.
   */
  kubernetes?: KubernetesRecordContext | undefined;
  /** Host boot time, epoch ms (wall clock). A boot after the last observation means the host rebooted. */
  hostBootTimeMs?: number;
  /** Longest process stall measured since the previous document (StallDetector.takeMaxStallMs()). */
  maxStallMs?: number;
  /**
   * Largest interval between two successful observations that still counts as watched continuously.
   * Default DEFAULT_MAX_GAP_MS; pass about 2 × poll interval + request timeout.
   */
  maxGapMs?: number;
  approvals?: ApprovalInput[];
}

/** The transform's result: the next state (commit it with the records) and the records to deliver. */
export interface TransformResult {
  state: ForwarderState;
  records: LifecycleRecord[];
}

/** Why a completed record is inferred rather than observed. */
export type InferredReason = NonNullable<LifecycleRecordData['reason']>;

/** The IMDS fields whose change (with the same EventId and status) produces an updated record. */
export const UPDATE_FIELDS = ['NotBefore', 'Resources', 'DurationInSeconds', 'Description'] as const;
export type UpdateField = (typeof UPDATE_FIELDS)[number];

function isStarted(event: ScheduledEvent): boolean {
  return event.EventStatus.toLowerCase() === 'started';
}

/**
 * One document's events by EventId, in document order. Duplicate EventIds: the entry that is Started wins
 * (an event cannot be both; Started is the more advanced status), otherwise the first one; the position
 * is that of the first occurrence.
 */
function eventsById(events: readonly ScheduledEvent[]): Map<string, ScheduledEvent> {
  const byId = new Map<string, ScheduledEvent>();
  for (const event of events) {
    const existing = byId.get(event.EventId);
    if (existing === undefined || (!isStarted(existing) && isStarted(event))) byId.set(event.EventId, event);
  }
  return byId;
}

function sameNotBefore(a: ScheduledEvent, b: ScheduledEvent): boolean {
  if (a.notBeforeUtc !== null && b.notBeforeUtc !== null) return a.notBeforeUtc === b.notBeforeUtc;
  return a.NotBefore === b.NotBefore;
}

function sameResources(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sortedA = [...a].sort();
  const sortedB = [...b].sort();
  return sortedA.every((name, i) => name === sortedB[i]);
}

/** The update fields that differ between two sightings of the same event (same status). */
export function changedFields(previous: ScheduledEvent, current: ScheduledEvent): UpdateField[] {
  const changed: UpdateField[] = [];
  if (!sameNotBefore(previous, current)) changed.push('NotBefore');
  if (!sameResources(previous.Resources, current.Resources)) changed.push('Resources');
  if (previous.DurationInSeconds !== current.DurationInSeconds) changed.push('DurationInSeconds');
  if (previous.Description !== current.Description) changed.push('Description');
  return changed;
}

function maxOrNull(a: number | null, b: number | undefined | null): number | null {
  if (b === undefined || b === null || !Number.isFinite(b)) return a;
  const value = Math.max(0, b);
  return a === null ? value : Math.max(a, value);
}

function longerDowntime(a: ObservedDowntime | null, b: ObservedDowntime): ObservedDowntime {
  if (a === null || b.toMs - b.fromMs > a.toMs - a.fromMs) return b;
  return a;
}

function approvalKind(approval: ApprovalInput): { kind: string; posted: boolean } {
  const kind = approvalRecordKind(approval);
  return { kind, posted: kind === 'posted' };
}

function approvalData(approval: ApprovalInput, posted: boolean): { approval: RecordedApproval } {
  return {
    approval: {
      approvedAt: new Date(approval.approvedAtMs).toISOString(),
      rule: approval.rule,
      leader: approval.leader,
      posted,
      dryRun: approval.dryRun === true,
      hooks: approval.hooks.map((hook) => ({
        name: hook.name,
        ok: hook.ok,
        exitCode: hook.exitCode,
        durationMs: hook.durationMs,
        timedOut: hook.timedOut === true,
        ...(hook.budgetMs === undefined ? {} : { budgetMs: hook.budgetMs }),
        ...(hook.detail === undefined ? {} : { detail: hook.detail }),
      })),
      ...(approval.notPostedReason === undefined || posted
        ? {}
        : { notPostedReason: approval.notPostedReason }),
    },
  };
}

/** A placeholder tracked event for an approval of an event this state does not know (or no longer tracks). */
function unknownTracked(eventId: string, atMs: number): TrackedEvent {
  return {
    eventId,
    occurrence: 1,
    last: {
      EventId: eventId,
      EventType: '',
      ResourceType: '',
      Resources: [],
      EventStatus: '',
      NotBefore: '',
      notBeforeUtc: null,
      Description: '',
      EventSource: '',
      DurationInSeconds: -1,
    },
    firstSeenStatus: '',
    firstSeenAtMs: atMs,
    startedAtMs: null,
    lastNotBeforeUtc: null,
    lastSeenAtMs: atMs,
    lastIncarnation: -1,
    approvedByUs: false,
    approvalsRecorded: [],
    updateCount: 0,
    maxStallMs: null,
    maxObservationGapMs: null,
    downtime: null,
  };
}

function observedImpact(tracked: TrackedEvent): Record<string, unknown> {
  const downtime = tracked.downtime;
  return {
    expectedDurationSeconds: tracked.last.DurationInSeconds,
    hostRebooted: downtime !== null,
    downtimeSeconds: downtime === null ? null : (downtime.toMs - downtime.fromMs) / 1000,
    downtimeFrom: downtime === null ? null : new Date(downtime.fromMs).toISOString(),
    downtimeTo: downtime === null ? null : new Date(downtime.toMs).toISOString(),
    // Whole milliseconds: the monotonic clock's sub-millisecond digits are noise, not information.
    longestStallMs: roundMs(tracked.maxStallMs),
    longestObservationGapMs: roundMs(tracked.maxObservationGapMs),
  };
}

const roundMs = (ms: number | null): number | null => (ms === null ? null : Math.round(ms));

function recordContext(input: TransformInput): RecordContext {
  return { vm: input.vm, source: recordSource(input.vm), kubernetes: input.kubernetes };
}

/**
 * Applies one poll outcome to the state. A failed poll yields no record and changes nothing: without
 * approvals it returns the previous state object itself. Approvals passed along with a failed poll are
 * still recorded (they are not poll results, and must not be lost). The previous state is never mutated.
 */
export function transform(previous: ForwarderState, input: TransformInput): TransformResult {
  const { outcome } = input;
  if (outcome.kind !== 'document') {
    if (input.approvals === undefined || input.approvals.length === 0)
      return { state: previous, records: [] };
    const state: ForwarderState = structuredClone(previous);
    const ctx = recordContext(input);
    const records: LifecycleRecord[] = [];
    for (const approval of input.approvals) {
      const event =
        state.events.find((tracked) => tracked.eventId === approval.eventId) ??
        unknownTracked(approval.eventId, approval.approvedAtMs);
      records.push(...applyApproval(ctx, event, approval));
    }
    return { state, records };
  }

  const state: ForwarderState = structuredClone(previous);
  const nowMs = outcome.observed.wallMs;
  const document = outcome.document;
  const incarnation = document.DocumentIncarnation;
  const ctx = recordContext(input);
  const maxGapMs = input.maxGapMs ?? DEFAULT_MAX_GAP_MS;
  const records: LifecycleRecord[] = [];

  const lastObservedAtMs = state.lastObservedAtMs;
  const gapMs = lastObservedAtMs === null ? null : Math.max(0, nowMs - lastObservedAtMs);
  const rebooted =
    input.hostBootTimeMs !== undefined &&
    lastObservedAtMs !== null &&
    input.hostBootTimeMs > lastObservedAtMs;
  const watchedContinuously = !rebooted && gapMs !== null && gapMs <= maxGapMs;

  const tracked = new Map(state.events.map((event) => [event.eventId, event]));

  // 1. Approvals committed since the last step: recorded first, and they mark the event approved by us
  //    before the document is diffed (so its disappearance is Completed, never Canceled).
  const deferredApprovals: ApprovalInput[] = [];
  for (const approval of input.approvals ?? []) {
    const event = tracked.get(approval.eventId);
    if (event === undefined) deferredApprovals.push(approval);
    else records.push(...applyApproval(ctx, event, approval));
  }

  // 2. Measurements over the interval since the previous document.
  const current = eventsById(document.Events);
  for (const event of state.events) {
    const currentEvent = current.get(event.eventId);
    measure(event, {
      downtimeFromMs: rebooted ? lastObservedAtMs : null,
      nowMs,
      startedNow: currentEvent !== undefined && isStarted(currentEvent),
      maxStallMs: input.maxStallMs,
      gapMs,
    });
  }

  // 3. Events that went away: exactly one terminal record each.
  const remaining: TrackedEvent[] = [];
  for (const event of state.events) {
    if (current.has(event.eventId)) {
      remaining.push(event);
      continue;
    }
    records.push(terminalRecord(ctx, event, { nowMs, incarnation, rebooted, watchedContinuously }));
    state.ended.push({ eventId: event.eventId, occurrence: event.occurrence, endedAtMs: nowMs });
    tracked.delete(event.eventId);
  }
  state.events = remaining;

  // 4. Events present in the document: new ones, status changes, field updates.
  for (const event of current.values()) {
    const known = tracked.get(event.EventId);
    if (known === undefined) {
      const fresh = trackNew(state, event, nowMs, incarnation, input.maxStallMs, gapMs);
      tracked.set(event.EventId, fresh);
      state.events.push(fresh);
      const transition = fresh.startedAtMs === null ? 'scheduled' : 'started';
      records.push(buildRecord(ctx, fresh, { transition, timeMs: nowMs, incarnation }));
      continue;
    }
    records.push(...applySighting(ctx, known, event, nowMs, incarnation));
  }

  // 5. Approvals for events first seen in this document, or unknown altogether.
  for (const approval of deferredApprovals) {
    const event = tracked.get(approval.eventId);
    if (event !== undefined) records.push(...applyApproval(ctx, event, approval));
    else
      records.push(...applyApproval(ctx, unknownTracked(approval.eventId, approval.approvedAtMs), approval));
  }

  state.lastObservedAtMs = nowMs;
  state.lastIncarnation = incarnation;
  if (input.hostBootTimeMs !== undefined) state.lastBootTimeMs = input.hostBootTimeMs;
  state.ended = pruneEnded(state.ended, nowMs);
  return { state, records };
}

/** Step 2 of transform() for one tracked event (mutates `event`, a clone owned by the step). */
function measure(
  event: TrackedEvent,
  m: {
    downtimeFromMs: number | null;
    nowMs: number;
    startedNow: boolean;
    maxStallMs: number | undefined;
    gapMs: number | null;
  },
): void {
  if (m.downtimeFromMs !== null) {
    event.downtime = longerDowntime(event.downtime, { fromMs: m.downtimeFromMs, toMs: m.nowMs });
  }
  if (event.startedAtMs !== null || m.startedNow) {
    event.maxStallMs = maxOrNull(event.maxStallMs, m.maxStallMs);
    event.maxObservationGapMs = maxOrNull(event.maxObservationGapMs, m.gapMs);
  }
}

/** Everything observeUnchanged() needs: the observation time and the measurements transform() would get. */
export interface UnchangedInput {
  /** Wall time of the observation (outcome.observed.wallMs). */
  observedAtMs: number;
  hostBootTimeMs?: number;
  maxStallMs?: number;
}

/**
 * The cheap equivalent of `transform(previous, {document})` for a document EQUAL to the one that produced
 * `previous` (the source saw the same bytes, or the same parsed document): no event appeared, went away or
 * changed, so there is never a record. Returns exactly the state transform() would return — the observation
 * time, each event's last sighting and the Started-window measurements move — without cloning the whole
 * state: untouched parts (the ended list, an empty event list) are shared with `previous`, which is never
 * mutated. Only valid when `previous` came from that same document; approvals need transform().
 */
export function observeUnchanged(previous: ForwarderState, input: UnchangedInput): ForwarderState {
  const nowMs = input.observedAtMs;
  const lastObservedAtMs = previous.lastObservedAtMs;
  const gapMs = lastObservedAtMs === null ? null : Math.max(0, nowMs - lastObservedAtMs);
  const rebooted =
    input.hostBootTimeMs !== undefined &&
    lastObservedAtMs !== null &&
    input.hostBootTimeMs > lastObservedAtMs;
  const events =
    previous.events.length === 0
      ? previous.events
      : previous.events.map((tracked) => {
          const event: TrackedEvent = {
            ...tracked,
            downtime: tracked.downtime === null ? null : { ...tracked.downtime },
            lastSeenAtMs: nowMs,
          };
          measure(event, {
            downtimeFromMs: rebooted ? lastObservedAtMs : null,
            nowMs,
            startedNow: isStarted(tracked.last),
            maxStallMs: input.maxStallMs,
            gapMs,
          });
          return event;
        });
  const expired =
    previous.ended.length > ENDED_MAX_ENTRIES ||
    previous.ended.some((e) => e.endedAtMs < nowMs - ENDED_RETENTION_MS);
  return {
    ...previous,
    events,
    ended: expired ? pruneEnded(previous.ended, nowMs) : previous.ended,
    lastObservedAtMs: nowMs,
    lastBootTimeMs: input.hostBootTimeMs ?? previous.lastBootTimeMs,
  };
}

function applyApproval(ctx: RecordContext, event: TrackedEvent, approval: ApprovalInput): LifecycleRecord[] {
  const { kind, posted } = approvalKind(approval);
  if (event.approvalsRecorded.includes(kind)) return [];
  event.approvalsRecorded.push(kind);
  if (posted) event.approvedByUs = true;
  const known = event.lastIncarnation >= 0;
  return [
    buildRecord(ctx, event, {
      transition: 'approved',
      timeMs: approval.approvedAtMs,
      incarnation: event.lastIncarnation,
      discriminator: kind === 'posted' ? undefined : kind,
      extras: { ...approvalData(approval, posted), ...(known ? {} : { eventKnown: false }) },
    }),
  ];
}

function trackNew(
  state: ForwarderState,
  event: ScheduledEvent,
  nowMs: number,
  incarnation: number,
  maxStallMs: number | undefined,
  gapMs: number | null,
): TrackedEvent {
  const endedIndex = state.ended.findIndex((ended) => ended.eventId === event.EventId);
  let occurrence = 1;
  if (endedIndex >= 0) {
    occurrence = (state.ended[endedIndex]?.occurrence ?? 0) + 1;
    state.ended.splice(endedIndex, 1);
  }
  const started = isStarted(event);
  return {
    eventId: event.EventId,
    occurrence,
    last: structuredClone(event),
    firstSeenStatus: event.EventStatus,
    firstSeenAtMs: nowMs,
    startedAtMs: started ? nowMs : null,
    lastNotBeforeUtc: event.notBeforeUtc,
    lastSeenAtMs: nowMs,
    lastIncarnation: incarnation,
    approvedByUs: false,
    approvalsRecorded: [],
    updateCount: 0,
    maxStallMs: started ? maxOrNull(null, maxStallMs) : null,
    maxObservationGapMs: started ? maxOrNull(null, gapMs) : null,
    downtime: null,
  };
}

/** A tracked event seen again: Started, Updated, or nothing. Mutates `event` (a clone owned by this step). */
function applySighting(
  ctx: RecordContext,
  event: TrackedEvent,
  current: ScheduledEvent,
  nowMs: number,
  incarnation: number,
): LifecycleRecord[] {
  const previous = event.last;
  const records: LifecycleRecord[] = [];
  let transition: 'started' | 'updated' | undefined;
  let changed: UpdateField[] = [];
  if (event.startedAtMs === null && isStarted(current)) {
    event.startedAtMs = nowMs;
    transition = 'started';
  } else if (previous.EventStatus === current.EventStatus) {
    changed = changedFields(previous, current);
    if (changed.length > 0) transition = 'updated';
  }
  // A Started event reported as Scheduled again, or any other status change, is absorbed silently.

  event.last = structuredClone(current);
  event.lastSeenAtMs = nowMs;
  event.lastIncarnation = incarnation;
  if (current.notBeforeUtc !== null) event.lastNotBeforeUtc = current.notBeforeUtc;

  if (transition === 'started') {
    records.push(buildRecord(ctx, event, { transition, timeMs: nowMs, incarnation }));
  } else if (transition === 'updated') {
    const previousValues = {
      NotBefore: previous.NotBefore,
      notBeforeUtc: previous.notBeforeUtc,
      Resources: [...previous.Resources],
      DurationInSeconds: previous.DurationInSeconds,
      Description: previous.Description,
    };
    event.updateCount += 1;
    const change = contentHash({
      changed,
      previous: previousValues,
      current: [current.NotBefore, current.Resources, current.DurationInSeconds, current.Description],
    });
    records.push(
      buildRecord(ctx, event, {
        transition,
        timeMs: nowMs,
        incarnation,
        discriminator: `update=${event.updateCount}|change=${change}`,
        extras: { changed, previous: previousValues, updateSequence: event.updateCount },
      }),
    );
  }
  return records;
}

interface TerminalContext {
  nowMs: number;
  incarnation: number;
  rebooted: boolean;
  watchedContinuously: boolean;
}

/** The one terminal record of an event that went away: Completed (observed or inferred) or Canceled. */
function terminalRecord(ctx: RecordContext, event: TrackedEvent, terminal: TerminalContext): LifecycleRecord {
  const { nowMs, incarnation } = terminal;
  const base = { timeMs: nowMs, incarnation, endedAtMs: nowMs };
  let reason: InferredReason | undefined;
  if (terminal.rebooted) reason = 'host-rebooted';
  else if (event.startedAtMs !== null) reason = undefined;
  else if (event.approvedByUs) reason = 'approved-by-us';
  else if (!terminal.watchedContinuously) reason = 'observation-gap';
  else if (event.lastNotBeforeUtc === null || Number.isNaN(Date.parse(event.lastNotBeforeUtc))) {
    reason = 'not-before-unknown';
  } else if (Date.parse(event.lastNotBeforeUtc) <= nowMs) reason = 'not-before-passed';
  else {
    return buildRecord(ctx, event, { ...base, transition: 'canceled', extras: { inferred: false } });
  }
  const extras: Record<string, unknown> = {
    inferred: reason !== undefined,
    ...(reason === undefined ? {} : { reason }),
    observedImpact: observedImpact(event),
  };
  return buildRecord(ctx, event, { ...base, transition: 'completed', extras });
}

function pruneEnded(ended: ForwarderState['ended'], nowMs: number): ForwarderState['ended'] {
  const fresh = ended.filter((entry) => entry.endedAtMs >= nowMs - ENDED_RETENTION_MS);
  return fresh.length > ENDED_MAX_ENTRIES ? fresh.slice(fresh.length - ENDED_MAX_ENTRIES) : fresh;
}

/**
 * The forwarder's diff state: everything the pure transform needs to remember between polls.
 *
 * It is plain JSON (the store persists it with JSON.stringify) and carries a `version`. Events are kept in
 * arrays (never objects keyed by EventId) so that no EventId, however odd, can collide with object
 * prototype keys.
 */

import type { ScheduledEvent } from '../domain/index.ts';

/** Current version of the persisted state shape. */
export const STATE_VERSION = 1;

/**
 * Default largest interval (ms) between two successful observations that still counts as "watched
 * continuously". With the recommended 1 s poll interval, anything longer means at least one poll failed or
 * was missed. The pipeline should pass `maxGapMs` derived from its configured poll interval.
 */
export const DEFAULT_MAX_GAP_MS = 3_000;

/** How long an ended event is remembered (so a reappearing EventId is recognised), by observation time. */
export const ENDED_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** At most this many ended events are remembered (the oldest are forgotten first). */
export const ENDED_MAX_ENTRIES = 1_000;

/** A measured host reboot while an event was alive: last poll before it and first poll after boot. */
export interface ObservedDowntime {
  fromMs: number;
  toMs: number;
}

/** What the transform remembers about one live (present in the last document) event. */
export interface TrackedEvent {
  eventId: string;
  /** 1 for the first time this EventId was seen, 2 when it reappeared after ending, ... */
  occurrence: number;
  /** The event exactly as last seen (status included). */
  last: ScheduledEvent;
  /** EventStatus when first seen ('Scheduled', or 'Started' on the hardware-failure path). */
  firstSeenStatus: string;
  firstSeenAtMs: number;
  /** Observation time of the first document showing it Started, or null. */
  startedAtMs: number | null;
  /** Last non-null notBeforeUtc seen (NotBefore becomes "" once Started). */
  lastNotBeforeUtc: string | null;
  /** Observation time of the last document that contained the event. */
  lastSeenAtMs: number;
  /** DocumentIncarnation of the last document that contained the event. */
  lastIncarnation: number;
  /** True once an approval we POSTed was committed for this event. */
  approvedByUs: boolean;
  /** Approval kinds already recorded ('posted', 'dry-run', 'not-leader'). */
  approvalsRecorded: string[];
  /** Number of updated records produced so far (part of the updated record id). */
  updateCount: number;
  /** Longest process stall (ms) measured during the Started window, or null when never measured. */
  maxStallMs: number | null;
  /** Longest interval (ms) between successful observations during the Started window, or null. */
  maxObservationGapMs: number | null;
  /** The longest host reboot observed while the event was alive, or null. */
  downtime: ObservedDowntime | null;
}

/** An event that went away; kept for a while so a reappearing EventId gets a new occurrence number. */
export interface EndedEvent {
  eventId: string;
  occurrence: number;
  endedAtMs: number;
}

/** The transform's persisted state. */
export interface ForwarderState {
  version: typeof STATE_VERSION;
  /** Events present in the last successful document, in first-seen order. */
  events: TrackedEvent[];
  /** Recently ended events (see ENDED_RETENTION_MS / ENDED_MAX_ENTRIES). */
  ended: EndedEvent[];
  /** Wall time (epoch ms) of the last successful document observation, or null before the first. */
  lastObservedAtMs: number | null;
  /** DocumentIncarnation of the last successful document, or null. */
  lastIncarnation: number | null;
  /** Host boot time (epoch ms) last passed in, or null. */
  lastBootTimeMs: number | null;
}

/** The state before the first poll. */
export function initialState(): ForwarderState {
  return {
    version: STATE_VERSION,
    events: [],
    ended: [],
    lastObservedAtMs: null,
    lastIncarnation: null,
    lastBootTimeMs: null,
  };
}

/**
 * Checks a value loaded from storage (already JSON.parse'd) and returns it as a ForwarderState.
 * Throws an Error naming the problem when it is not a state this version understands.
 */
export function restoreState(value: unknown): ForwarderState {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('forwarder state is not a JSON object');
  }
  const candidate = value as Partial<ForwarderState>;
  if (candidate.version !== STATE_VERSION) {
    throw new Error(
      `forwarder state has version ${JSON.stringify(candidate.version)}; this build understands version ${STATE_VERSION}`,
    );
  }
  if (!Array.isArray(candidate.events) || !Array.isArray(candidate.ended)) {
    throw new Error('forwarder state is missing its "events" or "ended" arrays');
  }
  for (const event of candidate.events) {
    if (typeof event?.eventId !== 'string' || typeof event.last !== 'object' || event.last === null) {
      throw new Error('forwarder state holds a tracked event without "eventId" or "last"');
    }
  }
  return {
    version: STATE_VERSION,
    events: candidate.events,
    ended: candidate.ended,
    lastObservedAtMs: numberOrNull(candidate.lastObservedAtMs),
    lastIncarnation: numberOrNull(candidate.lastIncarnation),
    lastBootTimeMs: numberOrNull(candidate.lastBootTimeMs),
  };
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * What the delivery engine reports, as one tagged union, and the observer it reports to. The engine calls its
 * observer's `delivery(event)` directly (there is no EventEmitter); the pipeline passes the events on to its
 * PipelineObserver.delivery (src/pipeline/observer.ts), the one mechanism telemetry observes by.
 */
import type { DeadLetterReason } from '../store/index.ts';

export interface DeliveredEvent {
  sink: string;
  count: number;
  /** Per record: now − createdAt (commit time), in ms. */
  latenciesMs: number[];
  recordIds: string[];
}
export interface RetryEvent {
  sink: string;
  /** Failed attempts so far for the head of the queue. */
  attempts: number;
  delayMs: number;
  /** DeliveryError.code, or 'error' for other throws. */
  code: string;
  message: string;
}
export interface DeadLetteredEvent {
  sink: string;
  count: number;
  reason: DeadLetterReason;
  code?: string;
}
/** The dead-letter caps dropped the sink's oldest dead letters for good. */
export interface DeadLettersDroppedEvent {
  sink: string;
  count: number;
  bytes: number;
}
/**
 * A failed attempt that keeps (or puts) the sink paused: the destination refused everything (a permanent
 * failure of scope 'destination'). Reported at each such failure; `since` stays the same for one pause.
 */
export interface PausedEvent {
  sink: string;
  /** DeliveryError.code of the destination's refusal (e.g. http-403, tls). */
  code: string;
  /** The cause and its fix, redacted. */
  message: string;
  /** When the pause began (epoch ms). */
  since: number;
  /** Failed attempts since the pause began (1 = this failure paused the sink). */
  probes: number;
  /** When the next probe (one record) goes out, in ms from now. */
  probeInMs: number;
}
/** The first delivery (or record-level answer) after a pause: the destination accepts again. */
export interface ResumedEvent {
  sink: string;
  /** The code that had paused the sink. */
  code: string;
  pausedForMs: number;
}
export interface StoreErrorEvent {
  sink: string;
  full: boolean;
  message: string;
}

/** A delivery engine event, tagged with its name. */
export type DeliveryEngineEvent =
  | ({ type: 'delivered' } & DeliveredEvent)
  | ({ type: 'retry' } & RetryEvent)
  | ({ type: 'deadLettered' } & DeadLetteredEvent)
  | ({ type: 'deadLettersDropped' } & DeadLettersDroppedEvent)
  | ({ type: 'paused' } & PausedEvent)
  | ({ type: 'resumed' } & ResumedEvent)
  | ({ type: 'storeError' } & StoreErrorEvent)
  /** The sink's queue became empty after having work. */
  | { type: 'drained'; sink: string }
  /** The sink's worker found its queue empty and waits for a commit notification. */
  | { type: 'idle'; sink: string };

/** Receives the engine's events, synchronously, on the engine's own turn; a throw is ignored. */
export interface DeliveryObserver {
  delivery?(event: DeliveryEngineEvent): void;
}

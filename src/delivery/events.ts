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
  | ({ type: 'storeError' } & StoreErrorEvent)
  /** The sink's queue became empty after having work. */
  | { type: 'drained'; sink: string }
  /** The sink's worker found its queue empty and waits for a commit notification. */
  | { type: 'idle'; sink: string };

/** Receives the engine's events, synchronously, on the engine's own turn; a throw is ignored. */
export interface DeliveryObserver {
  delivery?(event: DeliveryEngineEvent): void;
}

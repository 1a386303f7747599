/**
 * A poll outcome: what a source hands the pipeline. A failure is never an empty document; every outcome
 * carries when it was observed (wall clock and monotonic).
 */
import type { ScheduledEventsDocument } from './scheduled-event.ts';

/** When an outcome was observed. */
export interface ObservationTime {
  /** Wall clock, epoch milliseconds. */
  wallMs: number;
  /** Monotonic clock (performance.now() based), milliseconds. */
  monotonicMs: number;
}

/** Why a poll failed; used as a low-cardinality metric label. */
export type PollFailureReason =
  | 'timeout'
  | 'network'
  | 'bad-request' // 400: configuration error (missing header, bad api-version)
  | 'not-found' // 404: not on Azure or wrong endpoint
  | 'throttled' // 429
  | 'gone' // 410
  | 'server-error' // 5xx
  | 'invalid-response' // not JSON, HTML page, truncated, empty, wrong shape
  | 'unexpected-status'
  | 'aborted';

export interface PollDocumentOutcome {
  kind: 'document';
  document: ScheduledEventsDocument;
  observed: ObservationTime;
  /** True when the document differs from the previous one this source emitted. */
  changed: boolean;
  /** How long the IMDS request took (monotonic ms); absent for sources that make none (replay). */
  requestMs?: number;
}

export interface PollFailureOutcome {
  kind: 'failure';
  reason: PollFailureReason;
  /** Human-readable message naming the problem (never a secret). */
  message: string;
  /** Short excerpt of the offending body, when there was one. */
  excerpt?: string;
  httpStatus?: number;
  observed: ObservationTime;
  /** 1 for the first failure after a success, then 2, 3, ... */
  consecutiveFailures: number;
  /** How long the failed IMDS request took (monotonic ms), when one was made. */
  requestMs?: number;
}

export type PollOutcome = PollDocumentOutcome | PollFailureOutcome;

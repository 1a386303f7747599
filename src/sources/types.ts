/**
 * The contract between sources (IMDS poller, replay) and the rest of the pipeline.
 *
 * A source emits poll outcomes: either a parsed Scheduled Events document or a failure. A failure is
 * never an empty document. Every outcome carries when it was observed (wall clock and monotonic).
 */

/** One event of the Scheduled Events document, normalised by the tolerant parser. */
export interface ScheduledEvent {
  EventId: string;
  /** Canonical casing for known values (Freeze, Reboot, Redeploy, Preempt, Terminate); unknown values kept as received. */
  EventType: string;
  ResourceType: string;
  Resources: string[];
  /** Canonical casing for known values (Scheduled, Started); unknown values kept as received. */
  EventStatus: string;
  /** NotBefore exactly as received ("" when empty or missing). */
  NotBefore: string;
  /** NotBefore parsed to an ISO 8601 UTC instant, or null when empty, missing or unparseable. */
  notBeforeUtc: string | null;
  /** "" when missing (api-version < 2019-04-01). */
  Description: string;
  /** Canonical casing for Platform / User; "" when missing (api-version < 2019-08-01). */
  EventSource: string;
  /** -1 when missing (api-version < 2020-07-01) or unknown. */
  DurationInSeconds: number;
  /** Fields IMDS sent that we do not know, kept verbatim. */
  extra?: Record<string, unknown>;
}

export interface ScheduledEventsDocument {
  DocumentIncarnation: number;
  Events: ScheduledEvent[];
}

/** The VM identity from the instance metadata endpoint (compute section). Missing values are "". */
export interface VmIdentity {
  name: string;
  vmId: string;
  resourceId: string;
  subscriptionId: string;
  resourceGroupName: string;
  location: string;
  zone: string;
  vmScaleSetName: string;
  vmSize: string;
  osType: string;
  computerName: string;
}

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
}

export type PollOutcome = PollDocumentOutcome | PollFailureOutcome;

/**
 * A source of poll outcomes. `start` resolves when the signal aborts (or a finite source is exhausted).
 * The source awaits `onOutcome` before producing the next outcome, so a slow consumer never causes
 * overlapping work.
 */
export interface Source {
  readonly name: string;
  start(signal: AbortSignal, onOutcome: (outcome: PollOutcome) => Promise<void> | void): Promise<void>;
}

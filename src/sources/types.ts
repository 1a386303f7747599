import type { z } from 'zod';
import type { Logger } from '../log.ts';

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

/** Anything that supplies the VM identity (the IMDS cache, or the identity recorded in a replayed capture). */
export interface IdentitySource {
  current(): VmIdentity | undefined;
  refresh(): Promise<VmIdentity | undefined>;
  start?(signal?: AbortSignal): Promise<VmIdentity | undefined>;
  stop?(): void;
}

/** How a source approves events (the IMDS StartRequests POST); none for a replay. */
export interface SourceApproval {
  approve(eventIds: string[], signal?: AbortSignal): Promise<void>;
  /** POST retries are never faster than this. */
  readonly minIntervalMs: number;
}

/** What a SourceFactory builds. */
export interface BuiltSource {
  source: Source;
  /** The VM identity supplier, where the source has one. */
  identity?: IdentitySource;
  /** The approval client, where the source can approve events. */
  approval?: SourceApproval;
  /**
   * The longest time between two observations that still counts as watching continuously (the transform's
   * gap limit): beyond it, what happened in between is inferred conservatively.
   */
  maxGapMs: number;
  /**
   * Readiness: how long the pipeline waits for the first outcome before it builds the sinks anyway (loading
   * their SDKs must not delay the first request, nor a slow first answer hold back a backlog's delivery).
   */
  firstOutcomeWaitMs: number;
  /** Releases what the source holds (connections) after it stopped. */
  close?(): void;
}

/** What every source factory receives besides its own options. */
export interface SourceContext {
  logger: Logger;
  /** The current VM identity (captures record it). */
  vm: () => VmIdentity | undefined;
  /** The whole validated configuration, for settings a source keeps in its own top-level section (`imds`). */
  settings: Readonly<Record<string, unknown>>;
}

/** One source type: its `source:` options schema and a lazy `create` (see src/sources/registry.ts). */
export interface SourceFactory<Schema extends z.ZodObject = z.ZodObject> {
  /** The `source.type` value in config. */
  readonly type: string;
  /** zod object of the `source:` section for this type, including its `type` literal. */
  readonly optionsSchema: Schema;
  /** Builds the source; the implementation module loads here. */
  create(options: z.infer<Schema>, context: SourceContext): Promise<BuiltSource>;
}

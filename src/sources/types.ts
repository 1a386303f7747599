/**
 * The contract between sources (IMDS poller, replay) and the rest of the pipeline. The data a source
 * emits (poll outcomes, documents, VM identity) lives in src/domain.
 */
import type { z } from 'zod';
import type { PollOutcome, VmIdentity } from '../domain/index.ts';
import type { Logger } from '../log.ts';

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
  /**
   * Rejects with a SourceRequestError (src/sources/errors.ts) that says whether a retry can help and how long to
   * wait; any other error counts as transient.
   */
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
   * The time between two polls. Readiness (/readyz) counts the source stale when its last successful poll is
   * older than `telemetry.readyPollIntervals` of them.
   */
  pollIntervalMs: number;
  /**
   * Readiness: how long the pipeline waits for the first outcome before it builds the sinks anyway (loading
   * their SDKs must not delay the first request, nor a slow first answer hold back a backlog's delivery).
   */
  firstOutcomeWaitMs: number;
  /** Releases what the source holds (connections) after it stopped. */
  close?(): void;
}

/**
 * What every source factory receives besides its own options. `Settings` are the top-level config sections the
 * source reads (`{ imds: ImdsSettings }`); the pipeline passes the whole validated configuration.
 */
export interface SourceContext<Settings extends object = object> {
  logger: Logger;
  /** The current VM identity (captures record it). */
  vm: () => VmIdentity | undefined;
  /** The validated configuration, for settings a source keeps in its own top-level section (`imds`). */
  settings: Readonly<Settings>;
}

/**
 * One source type: its `source:` options schema, the config sections it reads besides (`Settings`) and a lazy
 * `create` (see src/sources/registry.ts).
 */
export interface SourceFactory<Schema extends z.ZodObject = z.ZodObject, Settings extends object = object> {
  /** The `source.type` value in config. */
  readonly type: string;
  /** zod object of the `source:` section for this type, including its `type` literal. */
  readonly optionsSchema: Schema;
  /** Builds the source; the implementation module loads here. */
  create(options: z.infer<Schema>, context: SourceContext<Settings>): Promise<BuiltSource>;
}

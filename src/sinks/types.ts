/**
 * The one interface every sink implements, and the SinkFactory the registry (src/sinks/registry.ts) lists. The
 * contract, the folder layout and how to add a sink, step by step: docs/sinks.md (the one place that describes
 * it). In short, the registry (and with it the config schema and the CLI) loads every factory at start-up, so a
 * factory stays light and loads its implementation inside create() with `await import(...)`.
 */
import type { z } from 'zod';
import type { HeartbeatRecord, LifecycleRecord, VmIdentity } from '../domain/index.ts';
import type { Logger } from '../log.ts';

/**
 * What a permanent failure says can never be delivered (docs/delivery.md, "Two classes of permanent failure"):
 * - `record`: this record (one row the destination refused, a record too large): it goes to dead letters and
 *   the records behind it are delivered;
 * - `destination`: nothing, until the destination or its configuration is fixed (credentials, authorization, a
 *   missing endpoint or stream, TLS trust, a name that does not resolve): the records stay pending and the sink
 *   pauses, probing with one record until the destination accepts again.
 */
export type FailureScope = 'record' | 'destination';

/**
 * Thrown (or rejected) by Sink.deliver. `retryable: false` means permanent, and `scope` says what is
 * permanently refused: the record (dead letter) or everything (the sink pauses). Messages must name the problem
 * (for a destination failure: the cause and its fix) and never contain a secret (URL credentials, keys).
 */
export class DeliveryError extends Error {
  readonly retryable: boolean;
  /** For a permanent error: what can never be delivered (see FailureScope); undefined when retryable. */
  readonly scope: FailureScope | undefined;
  /** Server-requested delay (Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /**
   * For a permanent error in a multi-record batch: the index of the offending record (for a destination
   * failure, of the first record not delivered), when known. Records before it count as delivered. When
   * unknown, the engine re-delivers a batch that failed with a record failure one record at a time to isolate
   * the bad record.
   */
  readonly failedIndex: number | undefined;
  /** Low-cardinality code for metrics and dead-letter rows (e.g. 'http-503'): one of src/sinks/delivery-errors.ts. */
  readonly code: string;

  constructor(
    message: string,
    options: {
      retryable: boolean;
      code: string;
      /** Only for a permanent error; default 'record'. */
      scope?: FailureScope;
      retryAfterMs?: number;
      failedIndex?: number;
      cause?: unknown;
    },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DeliveryError';
    this.retryable = options.retryable;
    this.scope = options.retryable ? undefined : (options.scope ?? 'record');
    this.code = options.code;
    this.retryAfterMs = options.retryAfterMs;
    this.failedIndex = options.failedIndex;
  }
}

export interface Sink {
  /** Unique name from the config (used in the outbox, metrics and CLI). */
  readonly name: string;
  /** Largest batch the sink accepts in one deliver() call. */
  readonly maxBatch: number;
  /**
   * Resolves only when the destination confirmed every record in the batch. Rejects with DeliveryError
   * (any other error counts as retryable). Must honour the signal (abort in-flight work on shutdown).
   */
  deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void>;
  /**
   * Optional: sends again, every `intervalMs` and outside the outbox, what every pending event looks like now
   * (the Alertmanager sink: each one's firing alert, so a restarted Alertmanager has it back). The pipeline
   * drives it through its PeriodicSender (kind 'alert-refresh', src/pipeline/alert-refresh.ts). `pending()`
   * gives the record of each event pending in the committed state that passes this sink's filter; the sink calls
   * it when it sends, after any delivery in flight, so a re-send never overtakes the record that resolves an
   * event. Resolves when the destination accepted it; rejects with a DeliveryError (latest wins: not retried).
   */
  readonly refreshPending?: RefreshPending;
  /**
   * Sends one heartbeat (docs/record-format.md, Heartbeats) straight to the destination, never through the
   * outbox: resolves when it was accepted, rejects (DeliveryError) when not; the next heartbeat replaces a lost
   * one. Only sinks whose factory declares `heartbeats` implement it. Must honour the signal.
   */
  sendHeartbeat?(heartbeat: HeartbeatRecord, signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
}

/** See Sink.refreshPending. */
export interface RefreshPending {
  readonly intervalMs: number;
  send(pending: () => readonly LifecycleRecord[], signal: AbortSignal): Promise<void>;
}

/** What a factory gets besides its own options. */
export interface SinkContext {
  logger: Logger;
  /** The VM identity as currently known (from the IMDS instance endpoint); may be undefined early on. */
  vm(): VmIdentity | undefined;
  /** The forwarder's state directory (for sinks that need files). */
  stateDir: string;
  /**
   * The IMDS endpoint the forwarder polls (config imds.endpoint): where a sink asks for managed identity tokens
   * without an SDK (Event Hubs heartbeats). Absent in contexts without IMDS (tests, tools).
   */
  imdsEndpoint?: string;
}

export interface SinkFactory<Schema extends z.ZodObject = z.ZodObject> {
  /** The `type` value in config. */
  readonly type: string;
  /** One line for docs and `--help`. */
  readonly description: string;
  /** zod object with this sink's own options (without the common keys name/type/filter/delivery). */
  readonly optionsSchema: Schema;
  /** Default record filter for this sink type (e.g. slack/teams: this VM only). */
  readonly defaultFilter?: Partial<SinkFilter>;
  /**
   * Sinks of this type can receive heartbeats (their Sink implements sendHeartbeat): the sink entry's
   * `heartbeats` option, with this default. Absent: the type never receives heartbeats (chat and alerting
   * sinks, whose every message reaches a person) and `heartbeats: true` is a configuration error.
   */
  readonly heartbeats?: { readonly default: boolean };
  /**
   * Builds the sink; throws (or rejects) with a clear message when the options cannot work. May return a
   * Promise so that the implementation loads only when a sink of this type is configured: callers always
   * `await` the result.
   */
  create(name: string, options: z.infer<Schema>, context: SinkContext): Sink | Promise<Sink>;
  /**
   * Options that are valid but will probably not work as meant (a retired URL, an unsigned webhook, a command
   * this machine cannot find). One message per warning, naming the sink and the fix, never a secret. Called by
   * configWarnings (src/config/warnings.ts): `config validate` prints them, `run` logs them at start-up. Sync
   * and cheap (a stat or two): create() must not warn on its own. A check that depends on the machine says so.
   */
  warnings?(name: string, options: z.infer<Schema>): string[];
  /**
   * Why a sink with these options cannot start on this machine, for reasons that need no network (the
   * environment it reads included, e.g. a proxy variable), beyond what the options schema checks. One message per
   * problem, naming the sink and the fix, never a secret. `run` refuses to start on any of them before its first
   * poll and `config validate` reports them (src/pipeline/start-checks.ts, one function for both). create() must
   * refuse nothing else without the network: a refusal belongs here, so `validate` cannot accept what `run`
   * refuses. Sync and cheap; a secret that is missing (`config validate --allow-missing-secrets`) is skipped.
   */
  startProblems?(name: string, options: z.infer<Schema>, env: Record<string, string | undefined>): string[];
}

export interface SinkFilter {
  transitions: string[];
  eventTypes: string[];
  scope: 'this-vm' | 'all';
}

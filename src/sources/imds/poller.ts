/**
 * The IMDS poller: the first Source implementation. Polls Scheduled Events on a fixed-rate schedule
 * (tick n at start + n * interval; ticks that a slow request or a slow consumer overran are skipped, so there
 * is no overlap and no drift), emits every document with `changed`, and every failure with a consecutive
 * failure count — a failure is never an empty document. Transient failures back off with full jitter and
 * Retry-After (the exponent counts only the current run of consecutive transient failures; non-transient
 * answers such as 400/404 are polled at the normal interval and reset it), but polls always stay on the tick grid, so the poller never exceeds its configured rate
 * (IMDS allows about 5 requests/s per VM, shared by every agent on it).
 */

import { type BackoffOptions, retryDelayAtLeastMs } from '../../backoff.ts';
import { type Clock, sleep, systemClock } from '../../clock.ts';
import type { PollFailureOutcome, PollOutcome, VmIdentity } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { CaptureWriter } from '../capture/capture.ts';
import { documentFingerprint } from '../capture/document.ts';
import { ImdsError } from '../imds-protocol/errors.ts';
import type { Source } from '../types.ts';
import type { ImdsClient, ScheduledEventsAnswer } from './client.ts';
import {
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MAX_RETRY_AFTER_MS,
  DEFAULT_POLL_INTERVAL_MS,
  MIN_POLL_INTERVAL_MS,
} from './defaults.ts';

/** The part of ImdsClient the poller uses (lets tests substitute a scripted client). */
export type ScheduledEventsReader = Pick<ImdsClient, 'getScheduledEvents'>;

export interface ImdsPollerOptions {
  client: ScheduledEventsReader;
  /** Poll interval in ms (default 1000, minimum 200). */
  intervalMs?: number;
  clock?: Clock;
  logger: Logger;
  /** Append every distinct document (and failure state changes) to this JSON-lines capture (`--record`). */
  captureFile?: string;
  /** The VM identity written with each captured document, so a replay keeps it (the forwarder's cache). */
  identity?: () => VmIdentity | undefined;
  /** Cap of the exponential backoff after transient failures (default 10,000 ms). */
  maxBackoffMs?: number;
  /** Cap applied to Retry-After (default 60,000 ms). */
  maxRetryAfterMs?: number;
  /** Random source for jitter, [0, 1) (tests). */
  random?: () => number;
}

/** Schedules polls on the fixed-rate grid start + n * interval. Pure; exported for tests. */
export class FixedRateSchedule {
  readonly #start: number;
  readonly #interval: number;

  constructor(startMs: number, intervalMs: number) {
    this.#start = startMs;
    this.#interval = intervalMs;
  }

  /** The first grid tick at or after `earliestMs` and strictly after the tick `lastTickMs` (if any). */
  nextTick(earliestMs: number, lastTickMs?: number): number {
    let n = Math.max(0, Math.ceil((earliestMs - this.#start) / this.#interval));
    if (lastTickMs !== undefined) {
      const last = Math.round((lastTickMs - this.#start) / this.#interval);
      n = Math.max(n, last + 1);
    }
    return this.#start + n * this.#interval;
  }
}

/** Polls IMDS Scheduled Events; see the module comment. */
export class ImdsPoller implements Source {
  readonly name = 'imds';
  readonly #client: ScheduledEventsReader;
  readonly #intervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #capture: CaptureWriter | undefined;
  readonly #identity: (() => VmIdentity | undefined) | undefined;
  readonly #backoff: BackoffOptions & { maxRetryAfterMs: number };
  readonly #random: () => number;

  constructor(options: ImdsPollerOptions) {
    const intervalMs = options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    if (!Number.isFinite(intervalMs) || intervalMs < MIN_POLL_INTERVAL_MS) {
      throw new RangeError(
        `poll interval must be at least ${MIN_POLL_INTERVAL_MS} ms (IMDS allows about 5 requests/s per VM), got ${intervalMs}`,
      );
    }
    this.#client = options.client;
    this.#intervalMs = intervalMs;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
    this.#capture = options.captureFile === undefined ? undefined : new CaptureWriter(options.captureFile);
    this.#identity = options.identity;
    this.#backoff = {
      initialMs: intervalMs,
      maxMs: Math.max(intervalMs, options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS),
      maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    };
    this.#random = options.random ?? Math.random;
  }

  /** Poll until `signal` aborts; awaits `onOutcome` before the next poll. */
  async start(signal: AbortSignal, onOutcome: (outcome: PollOutcome) => Promise<void> | void): Promise<void> {
    const clock = this.#clock;
    const startedAt = clock.monotonic();
    const schedule = new FixedRateSchedule(startedAt, this.#intervalMs);
    const state = new PollState();
    // Tick 0 is the start itself: poll at once. (A second clock reading would be a fraction of a millisecond
    // later and round up to tick 1, delaying the first poll by a whole interval.)
    let tick = startedAt;
    try {
      while (!signal.aborted) {
        const wait = tick - clock.monotonic();
        if (wait > 0) await sleep(clock, wait, signal);
        if (signal.aborted) break;
        const polled = await this.#poll(signal, state);
        if (polled === undefined) break; // aborted during the request
        await onOutcome(polled.outcome);
        await polled.afterOutcome?.();
        tick = schedule.nextTick(this.#earliestNextPoll(tick, polled.retryAfter, state), tick);
      }
    } finally {
      await this.#capture?.close();
    }
  }

  /** One GET and its outcome; undefined when `signal` aborted it. */
  async #poll(signal: AbortSignal, state: PollState): Promise<Polled | undefined> {
    const clock = this.#clock;
    const requestStartedAt = clock.monotonic();
    try {
      const answer = await this.#client.getScheduledEvents(signal, state.previous);
      const observed = { wallMs: clock.now(), monotonicMs: clock.monotonic() };
      const requestMs = observed.monotonicMs - requestStartedAt;
      const { changed, recovered } = state.answered(answer, observed.wallMs);
      if (recovered !== undefined) {
        this.#logger.info(recovered, `IMDS polling recovered after ${recovered.failures} failed poll(s)`);
      }
      const { document, body } = answer;
      return {
        outcome: { kind: 'document', document, observed, changed, requestMs },
        // Captured once the outcome was handled: the pipeline holds the first outcome until the VM identity
        // request settled, so the first captured document carries the identity too (the first GET may be
        // answered before the identity request).
        afterOutcome: changed ? () => this.#captureDocument(observed.wallMs, body) : undefined,
        retryAfter: undefined,
      };
    } catch (error) {
      if (signal.aborted) return undefined;
      const failure = toImdsError(error);
      const observed = { wallMs: clock.now(), monotonicMs: clock.monotonic() };
      const { consecutiveFailures, newState } = state.failed(failure, observed.wallMs);
      const outcome = {
        ...failureOutcome(failure, observed, consecutiveFailures),
        requestMs: observed.monotonicMs - requestStartedAt,
      };
      if (newState) {
        this.#logFailure(failure, consecutiveFailures);
        await this.#captureFailure(observed.wallMs, failure);
      }
      return { outcome, afterOutcome: undefined, retryAfter: failure.retryable ? failure : undefined };
    }
  }

  /** The earliest time of the next poll: now, or later when a transient failure backs off. */
  #earliestNextPoll(pollStartedAt: number, retryAfter: ImdsError | undefined, state: PollState): number {
    const earliest = this.#clock.monotonic();
    if (retryAfter === undefined) return earliest;
    const delay = retryDelayAtLeastMs(
      state.consecutiveTransientFailures,
      this.#backoff,
      this.#random,
      retryAfter.retryAfterMs,
    );
    return Math.max(earliest, pollStartedAt + delay);
  }

  #logFailure(failure: ImdsError, consecutiveFailures: number): void {
    const fields = {
      reason: failure.reason,
      httpStatus: failure.httpStatus,
      excerpt: failure.excerpt,
      retryable: failure.retryable,
      consecutiveFailures,
    };
    const message = `IMDS poll failed: ${failure.message}${failure.retryable ? '' : ' (will keep polling)'}`;
    if (failure.reason === 'bad-request' || failure.reason === 'not-found')
      this.#logger.error(fields, message);
    else this.#logger.warn(fields, message);
  }

  async #captureDocument(wallMs: number, body: string): Promise<void> {
    if (!this.#capture) return;
    try {
      await this.#capture.appendDocument(wallMs, JSON.parse(body), this.#identity?.());
    } catch (error) {
      this.#logger.error({ err: error }, 'could not append to the capture file');
    }
  }

  async #captureFailure(wallMs: number, failure: ImdsError): Promise<void> {
    if (!this.#capture) return;
    try {
      await this.#capture.appendFailure(wallMs, failure.reason, failure.message);
    } catch (error) {
      this.#logger.error({ err: error }, 'could not append to the capture file');
    }
  }
}

/** One poll's result: its outcome, what runs once the outcome was handled, the failure to back off from. */
interface Polled {
  outcome: PollOutcome;
  afterOutcome: (() => Promise<void>) | undefined;
  /** A transient failure: the next poll backs off (and honours its Retry-After). */
  retryAfter: ImdsError | undefined;
}

/** What one poll carries over to the next: the previous answer, and the current run of failures. */
class PollState {
  // The previous answer (bytes and parsed document) and the fingerprint of its document: an answer with the
  // same bytes comes back as this very object (nothing decoded or parsed, see ImdsClient.getScheduledEvents);
  // only different bytes are parsed and fingerprinted.
  #previous: ScheduledEventsAnswer | undefined;
  #previousFingerprint: string | undefined;
  #consecutiveFailures = 0;
  // Only an unbroken run of transient failures grows the backoff: a 400/404 streak is polled at the normal
  // interval, and the first 410/503 after it must not inherit that streak's length as its exponent.
  #consecutiveTransientFailures = 0;
  /** The reason of the current run of failures (undefined: not failing), and when the run began (wall clock). */
  #failureState: string | undefined;
  #failureSinceWallMs = 0;

  get previous(): ScheduledEventsAnswer | undefined {
    return this.#previous;
  }

  get consecutiveTransientFailures(): number {
    return this.#consecutiveTransientFailures;
  }

  /** An answer: whether its document changed, and the run of failures it ended (if any). */
  answered(
    answer: ScheduledEventsAnswer,
    wallMs: number,
  ): { changed: boolean; recovered: { failures: number; failingForMs: number } | undefined } {
    let changed = false;
    if (answer !== this.#previous) {
      const fingerprint = documentFingerprint(answer.document);
      changed = fingerprint !== this.#previousFingerprint;
      this.#previousFingerprint = fingerprint;
    }
    const recovered =
      this.#failureState === undefined
        ? undefined
        : { failures: this.#consecutiveFailures, failingForMs: wallMs - this.#failureSinceWallMs };
    this.#consecutiveFailures = 0;
    this.#consecutiveTransientFailures = 0;
    this.#failureState = undefined;
    this.#previous = answer;
    return { changed, recovered };
  }

  /** A failure: the consecutive count, and whether its reason differs from the previous poll's (logged once). */
  failed(failure: ImdsError, wallMs: number): { consecutiveFailures: number; newState: boolean } {
    this.#consecutiveFailures += 1;
    const newState = failure.reason !== this.#failureState;
    if (newState) {
      if (this.#failureState === undefined) this.#failureSinceWallMs = wallMs;
      this.#failureState = failure.reason;
    }
    this.#consecutiveTransientFailures = failure.retryable ? this.#consecutiveTransientFailures + 1 : 0;
    return { consecutiveFailures: this.#consecutiveFailures, newState };
  }
}

function toImdsError(error: unknown): ImdsError {
  if (error instanceof ImdsError) return error;
  const message = errorMessage(error);
  return new ImdsError('network', `IMDS request failed: ${message}`, { cause: error });
}

function failureOutcome(
  failure: ImdsError,
  observed: PollFailureOutcome['observed'],
  consecutiveFailures: number,
): PollFailureOutcome {
  const outcome: PollFailureOutcome = {
    kind: 'failure',
    reason: failure.reason,
    message: failure.message,
    observed,
    consecutiveFailures,
  };
  if (failure.excerpt !== undefined && failure.excerpt !== '') outcome.excerpt = failure.excerpt;
  if (failure.httpStatus !== undefined) outcome.httpStatus = failure.httpStatus;
  return outcome;
}

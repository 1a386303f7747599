/**
 * The one backoff module: retry timing for the IMDS poller and the delivery engine — exponential backoff with
 * "full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter") and a cap, Retry-After parsing, and
 * the two ways a Retry-After combines with it (replacement for delivery, floor for IMDS). Pure functions.
 *
 * Why not p-retry: both users schedule retries themselves — the poller on its fixed-rate grid with an injected
 * clock, the delivery engine by persisting the next attempt time in each SQLite row so backoff survives
 * restarts — and p-retry neither exposes its delay calculation nor lets its loop be persisted.
 */

/** Exponential backoff with a cap (one vocabulary for every user). */
export interface BackoffOptions {
  /** Ceiling of the first retry's delay, ms. */
  initialMs: number;
  /** Cap for any single delay, ms. */
  maxMs: number;
}

/**
 * The plain exponential delay min(maxMs, initialMs · 2^(attempt−1)) for retry number `attempt` (1 = the first
 * retry): the ceiling of the jittered delays below, and the delay itself where a local resource is retried
 * (opening the state store, committing a fleet batch) and no other client competes for it.
 */
export function exponentialBackoffMs(attempt: number, options: BackoffOptions): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(options.maxMs, options.initialMs * 2 ** exponent);
}

/**
 * A uniformly random delay in [0, min(maxMs, initialMs · 2^(attempt−1))) for retry number `attempt`
 * (1 = the first retry), rounded down to whole milliseconds.
 */
export function fullJitterBackoffMs(attempt: number, options: BackoffOptions, random: () => number): number {
  const ceiling = exponentialBackoffMs(attempt, options);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
}

/**
 * A uniformly random delay in [ceiling/2, ceiling] ("equal jitter") for attempt number `attempt`, where the
 * ceiling is min(maxMs, initialMs · 2^(attempt−1)): spread like full jitter, but never much shorter than the
 * backoff says (a paused sink's probes, which must stay slow).
 */
export function equalJitterBackoffMs(attempt: number, options: BackoffOptions, random: () => number): number {
  const ceiling = exponentialBackoffMs(attempt, options);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(ceiling / 2 + (r * ceiling) / 2);
}

/**
 * Parse a Retry-After header (delta-seconds or an HTTP date) to milliseconds from `nowMs`, capped at
 * MAX_RETRY_AFTER_MS (capRetryAfterMs). Returns undefined when absent or unparseable; never negative.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return capRetryAfterMs(Math.round(Number(text) * 1000));
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return capRetryAfterMs(date - nowMs);
}

/** Delivery defaults (the config schema's `backoff` defaults come from here). */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 5 * 60 * 1000 };

/**
 * A paused sink's probes (one record each, docs/delivery.md): the first 10 s after the destination refused
 * everything, doubling up to 5 min, equal jitter.
 */
export const PAUSE_PROBE_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 5 * 60 * 1000 };

/**
 * The one ceiling for every Retry-After, wherever it is honoured (the delivery engine's next attempt, a webhook
 * sink's rate limiter, an approval POST): a server cannot hold anything back for longer. (IMDS polling caps it
 * lower still: imds.maxRetryAfterMs.) Also keeps every delay far below setTimeout's 2^31−1 ms limit, beyond
 * which a timer fires at once.
 */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/** A server-requested delay clamped to [0, MAX_RETRY_AFTER_MS] (NaN counts as 0). */
export function capRetryAfterMs(ms: number): number {
  if (Number.isNaN(ms)) return 0;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/**
 * Delay before retry number `attempt` (1 = first retry): uniform in [0, min(maxMs, initialMs·2^(attempt−1))]
 * ("full jitter"). When the destination asked for a delay (Retry-After), that delay is used instead, capped at
 * MAX_RETRY_AFTER_MS. Same parameters, in the same order, as retryDelayAtLeastMs.
 */
export function retryDelayMs(
  attempt: number,
  options: BackoffOptions,
  random: () => number,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
    return Math.round(capRetryAfterMs(retryAfterMs));
  }
  return fullJitterBackoffMs(attempt, options, random);
}

/**
 * Delay before retry number `attempt` (1 for the first retry): a uniformly random value in
 * [0, min(maxMs, initialMs * 2^(attempt-1))], raised to Retry-After (capped at `maxRetryAfterMs`) when the
 * server sent one. For IMDS, whose request budget is shared by every agent on the VM, Retry-After is a floor.
 * Same parameters, in the same order, as retryDelayMs.
 */
export function retryDelayAtLeastMs(
  attempt: number,
  options: BackoffOptions & { maxRetryAfterMs: number },
  random: () => number,
  retryAfterMs?: number,
): number {
  const jittered = fullJitterBackoffMs(attempt, options, random);
  const serverAsked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, options.maxRetryAfterMs);
  return Math.max(jittered, serverAsked);
}

/**
 * Retry delays for transient IMDS failures. p-retry 9 does not export its delay calculation (and its own
 * timers cannot run on the poller's fixed-rate schedule or an injected clock), so this is the small
 * equivalent: exponential backoff with "full jitter" (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"), capped, and never shorter than a Retry-After the server sent (itself capped so an absurd value
 * cannot blind the poller for hours). The poller additionally never polls faster than its interval.
 */

export interface BackoffOptions {
  /** Base delay for the first retry (ms). */
  baseMs: number;
  /** Upper bound of the exponential part (ms). */
  maxMs: number;
  /** Upper bound applied to Retry-After (ms). */
  maxRetryAfterMs: number;
}

/**
 * Delay before retry number `attempt` (1 for the first retry): a uniformly random value in
 * [0, min(maxMs, baseMs * 2^(attempt-1))], raised to Retry-After when the server sent one.
 */
export function retryDelayMs(
  attempt: number,
  options: BackoffOptions,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** exponent);
  const jittered = Math.floor(random() * ceiling);
  const serverAsked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, options.maxRetryAfterMs);
  return Math.max(jittered, serverAsked);
}

/**
 * Parse a Retry-After header (delta-seconds or an HTTP date) to milliseconds from `nowMs`.
 * Returns undefined when absent or unparseable; never negative.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

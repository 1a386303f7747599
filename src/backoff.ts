/**
 * Retry timing shared by the IMDS poller and the delivery engine: exponential backoff with "full jitter"
 * (AWS Architecture Blog, "Exponential Backoff And Jitter") and a cap, plus Retry-After parsing. Pure functions.
 *
 * Why not p-retry: both users schedule retries themselves — the poller on its fixed-rate grid with an injected
 * clock, the delivery engine by persisting the next attempt time in each SQLite row so backoff survives
 * restarts — and p-retry neither exposes its delay calculation nor lets its loop be persisted.
 */

/**
 * A uniformly random delay in [0, min(maxMs, initialMs · 2^(attempt−1))) for retry number `attempt`
 * (1 = the first retry), rounded down to whole milliseconds.
 */
export function fullJitterBackoffMs(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(maxMs, initialMs * 2 ** exponent);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
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

/** Delivery retry timing: the shared full-jitter backoff (src/backoff.ts) with a cap; Retry-After honoured. */
import { fullJitterBackoffMs } from '../backoff.ts';

export interface BackoffOptions {
  /** First retry ceiling in ms (default 1000). */
  initialMs: number;
  /** Cap for any single delay in ms (default 5 minutes). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 5 * 60 * 1000 };

/** A server's Retry-After is honoured up to this ceiling (or the backoff cap if that is larger). */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Delay before retry number `attempts` (1 = first retry): uniform in [0, min(maxMs, initialMs·2^(attempts−1))]
 * ("full jitter"). When the destination asked for a delay (Retry-After), that delay is used instead.
 */
export function retryDelayMs(
  attempts: number,
  options: BackoffOptions,
  random: () => number,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
    return Math.round(Math.min(retryAfterMs, Math.max(options.maxMs, MAX_RETRY_AFTER_MS)));
  }
  return fullJitterBackoffMs(attempts, options.initialMs, options.maxMs, random);
}

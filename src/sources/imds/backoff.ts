/**
 * Retry delays for transient IMDS failures: the shared full-jitter backoff (src/backoff.ts), never shorter than
 * a Retry-After the server sent (itself capped so an absurd value cannot blind the poller for hours). IMDS's
 * request budget is shared by every agent on the VM, so Retry-After is a floor here, not a replacement. The
 * poller additionally never polls faster than its interval.
 */
import { fullJitterBackoffMs } from '../../backoff.ts';

export { parseRetryAfter } from '../../backoff.ts';

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
  const jittered = fullJitterBackoffMs(attempt, options.baseMs, options.maxMs, random);
  const serverAsked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, options.maxRetryAfterMs);
  return Math.max(jittered, serverAsked);
}

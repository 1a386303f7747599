/**
 * Per-sink rate limiter: at most one request start per `minIntervalMs`, plus a pause requested by the
 * server (Retry-After, capped at MAX_RETRY_AFTER_MS like every Retry-After: src/backoff.ts). Slots are kept on
 * the monotonic clock, so a step of the wall clock (NTP, a VM resumed from a snapshot, an operator's `date -s`)
 * never holds a request back. Time comes from the injected project Clock (src/clock.ts), so tests drive it with
 * test/support/fake-clock.ts without real waiting.
 */
import { capRetryAfterMs } from '../../backoff.ts';
import { type Clock, sleep } from '../../clock.ts';

export class RateLimiter {
  readonly #minIntervalMs: number;
  readonly #clock: Clock;
  /** Earliest monotonic ms (Clock.monotonic) at which the next request may start. */
  #nextSlot = Number.NEGATIVE_INFINITY;

  constructor(minIntervalMs: number, clock: Clock) {
    if (!Number.isFinite(minIntervalMs) || minIntervalMs < 0) {
      throw new RangeError(`minIntervalMs must be a non-negative number, got ${minIntervalMs}`);
    }
    this.#minIntervalMs = minIntervalMs;
    this.#clock = clock;
  }

  /**
   * Waits for this caller's slot. Slots are reserved synchronously, so concurrent callers are spaced out
   * in call order. Rejects when the signal aborts (the slot is then simply skipped).
   */
  async acquire(signal?: AbortSignal): Promise<void> {
    const now = this.#clock.monotonic();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + this.#minIntervalMs;
    const wait = slot - now;
    if (wait <= 0) return;
    await sleep(this.#clock, wait, signal);
    if (signal?.aborted) throw signal.reason;
  }

  /**
   * Holds back every later request for `delayMs` from now (a server's Retry-After), at most MAX_RETRY_AFTER_MS:
   * the one cap every Retry-After gets, so no server can stall the sink for longer (nor overflow a timer).
   */
  deferFor(delayMs: number): void {
    const until = this.#clock.monotonic() + capRetryAfterMs(delayMs);
    if (until > this.#nextSlot) this.#nextSlot = until;
  }
}

/**
 * Per-sink rate limiter: at most one request start per `minIntervalMs`, plus a pause requested by the
 * server (Retry-After). Time comes from the injected project Clock (src/clock.ts), so tests drive it with
 * test/support/fake-clock.ts without real waiting.
 */
import { type Clock, sleep } from '../../clock.ts';

export class RateLimiter {
  readonly #minIntervalMs: number;
  readonly #clock: Clock;
  /** Earliest epoch ms at which the next request may start. */
  #nextSlot = 0;

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
    const now = this.#clock.now();
    const slot = Math.max(now, this.#nextSlot);
    this.#nextSlot = slot + this.#minIntervalMs;
    const wait = slot - now;
    if (wait <= 0) return;
    await sleep(this.#clock, wait, signal);
    if (signal?.aborted) throw signal.reason;
  }

  /** Holds back every later request until `epochMs` (used for a server's Retry-After). */
  deferUntil(epochMs: number): void {
    if (epochMs > this.#nextSlot) this.#nextSlot = epochMs;
  }
}

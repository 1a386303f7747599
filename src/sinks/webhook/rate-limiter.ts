/**
 * Per-sink rate limiter: at most one request start per `minIntervalMs`, plus a pause requested by the
 * server (Retry-After). Time comes from an injected Clock, so tests drive it without real waiting.
 */

/** Wall clock and sleeping, injectable for tests. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock (Date.now and timers). */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

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
    if (wait > 0) await this.#clock.sleep(wait, signal);
  }

  /** Holds back every later request until `epochMs` (used for a server's Retry-After). */
  deferUntil(epochMs: number): void {
    if (epochMs > this.#nextSlot) this.#nextSlot = epochMs;
  }
}

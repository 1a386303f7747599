/**
 * The one clock interface: wall time, monotonic time and timers. Injected into the IMDS poller, the replay
 * source, the identity cache and the delivery engine, so tests drive time with test/support/fake-clock.ts.
 */
export interface Clock {
  /** Wall clock, epoch milliseconds. */
  now(): number;
  /** Monotonic milliseconds (never jumps backwards). */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock: Date.now, performance.now and the global timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolve after `ms` on `clock`, or at once when `signal` aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) {
      clock.setTimeout(resolve, Math.max(0, ms));
      return;
    }
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

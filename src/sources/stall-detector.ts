/**
 * Measures how long the process could not run (a VM freeze during live migration, a long GC pause, a
 * blocked event loop): a lightweight monotonic tick whose lateness is recorded. The longest lateness since
 * the last `takeMaxStallMs()` is what the transform records as the observed impact of a Freeze.
 *
 * Uses the monotonic clock (performance.now()), so wall-clock steps (NTP) never look like stalls.
 *
 * Two rates: fine ticks (`intervalMs`, default 100 ms) while an event is tracked — its stalls are what the
 * records report — and coarse ticks (`idleIntervalMs`, default 1 s) while none is, so an idle forwarder wakes
 * up about once a second for it, not ten times. The pipeline switches with `setFine()`.
 */

import { performance } from 'node:perf_hooks';

export interface StallDetectorOptions {
  /** Fine tick interval in ms (default 100). */
  intervalMs?: number;
  /** Coarse tick interval in ms used after setFine(false) (default 1000, never finer than intervalMs). */
  idleIntervalMs?: number;
  /** Monotonic clock in ms (default performance.now); injectable for tests. */
  now?: () => number;
}

/** Longest event-loop/process stall detector. start() / stop(); the timer never keeps the process alive. */
export class StallDetector {
  /** The current tick interval (fine or coarse). */
  intervalMs: number;
  private readonly fineMs: number;
  private readonly coarseMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private lastTickMs: number | undefined;
  private maxStallMs = 0;

  constructor(options: StallDetectorOptions = {}) {
    const intervalMs = options.intervalMs ?? 100;
    if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
      throw new RangeError(`stall detector interval must be a positive number of ms, got ${intervalMs}`);
    }
    const idleIntervalMs = options.idleIntervalMs ?? 1000;
    if (!Number.isFinite(idleIntervalMs) || idleIntervalMs <= 0) {
      throw new RangeError(
        `stall detector idle interval must be a positive number of ms, got ${idleIntervalMs}`,
      );
    }
    this.intervalMs = intervalMs;
    this.fineMs = intervalMs;
    this.coarseMs = Math.max(intervalMs, idleIntervalMs);
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Fine ticks (true, the initial rate) or coarse ticks (false). The interval in progress is accounted for at
   * the old rate first, so switching never invents or hides a stall. Cheap when the rate does not change.
   */
  setFine(fine: boolean): void {
    const interval = fine ? this.fineMs : this.coarseMs;
    if (interval === this.intervalMs) return;
    if (this.lastTickMs !== undefined) this.recordTick(this.now());
    this.intervalMs = interval;
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.#arm();
    }
  }

  /** Starts ticking (idempotent). */
  start(): void {
    if (this.timer !== undefined) return;
    this.lastTickMs = this.now();
    this.#arm();
  }

  #arm(): void {
    this.timer = setInterval(() => this.recordTick(this.now()), this.intervalMs);
    this.timer.unref();
  }

  /** Stops ticking (idempotent); the measured maximum is kept until taken. */
  stop(): void {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** True while started. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /**
   * Records a tick at monotonic time `nowMs` (called by the timer; public so tests can drive it with a
   * fake clock). The stall is how much later than `intervalMs` the tick came.
   */
  recordTick(nowMs: number): void {
    if (this.lastTickMs !== undefined) this.observe(nowMs - this.lastTickMs - this.intervalMs);
    this.lastTickMs = nowMs;
  }

  /**
   * Returns the longest stall (ms, ≥ 0) since the previous call, including a stall still in progress
   * (time since the last tick), and resets the maximum.
   */
  takeMaxStallMs(): number {
    if (this.lastTickMs !== undefined) {
      const nowMs = this.now();
      this.observe(nowMs - this.lastTickMs - this.intervalMs);
      // The in-progress interval has been accounted for; start the next one from now.
      this.lastTickMs = nowMs;
    }
    const taken = this.maxStallMs;
    this.maxStallMs = 0;
    return taken;
  }

  private observe(lateMs: number): void {
    if (lateMs > this.maxStallMs) this.maxStallMs = lateMs;
  }
}

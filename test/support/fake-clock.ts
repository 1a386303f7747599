/**
 * The one deterministic Clock (src/clock.ts) for tests. Time only moves when the test calls `runNextTimer` /
 * `runUntil` (jump to the earliest timer and fire it) or `advance(ms)` (fire every timer due within `ms`), each
 * letting pending promise work settle first.
 */
import type { Clock } from '../../src/clock.ts';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

/** Let queued promise callbacks and I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class FakeClock implements Clock {
  /** Monotonic time in ms. */
  t = 0;
  readonly wallStart: number;
  #timers: Timer[] = [];
  #nextId = 1;

  constructor(wallStart = Date.parse('2022-04-11T22:00:00Z')) {
    this.wallStart = wallStart;
  }

  now(): number {
    return this.wallStart + this.t;
  }

  monotonic(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.#nextId++, at: this.t + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Settle, then fire the earliest timer (advancing time to it). Returns false when no timer is pending. */
  async runNextTimer(stop: () => boolean = () => false): Promise<boolean> {
    await settle();
    if (stop()) return false;
    if (this.#timers.length === 0) {
      // Work may still be in flight on real I/O (capture files): wait for it, bounded (5 s) so a test whose
      // system under test is genuinely idle ends instead of hanging.
      const deadline = Date.now() + 5000;
      while (this.#timers.length === 0 && !stop() && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1));
      }
      if (this.#timers.length === 0) return false;
    }
    this.#timers.sort((a, b) => a.at - b.at || a.id - b.id);
    const timer = this.#timers.shift()!;
    this.t = Math.max(this.t, timer.at);
    timer.fn();
    await settle();
    return true;
  }

  /** Fire timers until `done()` is true (checked after each timer) or no timer is pending. */
  async runUntil(done: () => boolean, maxTimers = 100_000): Promise<void> {
    for (let i = 0; i < maxTimers && !done(); i++) {
      if (!(await this.runNextTimer(done))) return;
    }
  }

  /** Fire every timer due within `ms`, in time order, letting promise continuations run between them. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await settle();
      this.#timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const timer = this.#timers[0];
      if (timer === undefined || timer.at > target) break;
      this.#timers.shift();
      this.t = Math.max(this.t, timer.at);
      timer.fn();
    }
    this.t = Math.max(this.t, target);
    await settle();
  }
}

/**
 * Virtual time for the simulator. Scheduled Events timings (15-minute notices, 10 minutes Started) play
 * faster with a time scale, or move only when told to (time scale 0) for deterministic tests.
 */
import { type Clock, systemClock } from '../clock.ts';

/**
 * The simulator's clock: a src/clock.ts Clock whose time is simulated. `now()` is simulated epoch ms,
 * `monotonic()` simulated ms since creation, and timers fire at simulated times; `advance(ms)` jumps
 * simulated time forward (firing every timer that became due).
 */
export interface SimClock extends Clock {
  /** Jump simulated time forward by `ms`. */
  advance(ms: number): void;
}

export interface VirtualClockOptions {
  /** Simulated epoch ms at creation; default the real wall time at creation. */
  startMs?: number;
  /** Simulated milliseconds per real millisecond; 0 freezes time (only advance() moves it). Default 1. */
  timeScale?: number;
  /** Real clock: its monotonic time measures elapsed time, its timers wake simulated ones. Default systemClock. */
  realClock?: Clock;
}

interface SimTimer {
  at: number;
  fn: () => void;
}

/** A clock running `timeScale` times faster than real time, plus any explicit advances. */
export class VirtualClock implements SimClock {
  readonly timeScale: number;
  readonly #startMs: number;
  readonly #realStart: number;
  readonly #real: Clock;
  #offsetMs = 0;
  readonly #timers = new Map<number, SimTimer>();
  #nextTimerId = 1;
  /** The real timer armed for the earliest simulated timer (none while time is frozen). */
  #wake: unknown;

  constructor(options: VirtualClockOptions = {}) {
    this.#real = options.realClock ?? systemClock;
    this.#realStart = this.#real.monotonic();
    this.#startMs = options.startMs ?? this.#real.now();
    this.timeScale = options.timeScale ?? 1;
    if (!Number.isFinite(this.timeScale) || this.timeScale < 0) {
      throw new RangeError(`timeScale must be a finite number >= 0, got ${String(options.timeScale)}`);
    }
  }

  now(): number {
    return this.#startMs + this.monotonic();
  }

  monotonic(): number {
    return this.#offsetMs + (this.#real.monotonic() - this.#realStart) * this.timeScale;
  }

  /** Runs `fn` once `ms` of simulated time have passed (by real time scaled, or by advance()). */
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#nextTimerId++;
    this.#timers.set(id, { at: this.monotonic() + Math.max(0, ms), fn });
    this.#arm();
    return id;
  }

  clearTimeout(handle: unknown): void {
    if (typeof handle === 'number' && this.#timers.delete(handle)) this.#arm();
  }

  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance needs ms >= 0, got ${String(ms)}`);
    this.#offsetMs += ms;
    this.#fireDue();
  }

  /** Fires due timers in time order (a callback may add or clear timers), then re-arms the real timer. */
  #fireDue(): void {
    for (;;) {
      const now = this.monotonic();
      let next: [number, SimTimer] | undefined;
      for (const entry of this.#timers) if (next === undefined || entry[1].at < next[1].at) next = entry;
      if (next === undefined || next[1].at > now) break;
      this.#timers.delete(next[0]);
      next[1].fn();
    }
    this.#arm();
  }

  #arm(): void {
    if (this.#wake !== undefined) this.#real.clearTimeout(this.#wake);
    this.#wake = undefined;
    if (this.timeScale === 0 || this.#timers.size === 0) return;
    let at = Number.POSITIVE_INFINITY;
    for (const timer of this.#timers.values()) at = Math.min(at, timer.at);
    const realMs = Math.max(0, Math.ceil((at - this.monotonic()) / this.timeScale));
    this.#wake = this.#real.setTimeout(() => {
      this.#wake = undefined;
      this.#fireDue();
    }, realMs);
  }
}

const DURATION_PART = /(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/gy;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `90`, `90s`, `15m`, `5m10s`, `2h`, `3d` or `250ms` into milliseconds (a bare
 * number is seconds). Throws a RangeError naming the bad value.
 */
export function parseDuration(value: string | number, what = 'duration'): number {
  const text = typeof value === 'number' ? String(value) : value.replace(/\s+/g, '');
  if (typeof value === 'number' || /^\d+(?:\.\d+)?$/.test(text)) {
    const seconds = Number(text);
    if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError(`${what} must be >= 0, got ${text}`);
    return seconds * 1000;
  }
  let total = 0;
  let consumed = 0;
  DURATION_PART.lastIndex = 0;
  for (let match = DURATION_PART.exec(text); match; match = DURATION_PART.exec(text)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1000);
    consumed = DURATION_PART.lastIndex;
  }
  if (text === '' || consumed !== text.length) {
    throw new RangeError(`${what} "${value}" is not a duration like 30s, 15m, 5m10s, 2h, 3d or 250ms`);
  }
  return total;
}

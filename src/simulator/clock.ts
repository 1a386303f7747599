/**
 * Virtual time for the simulator. Scheduled Events timings (15-minute notices, 10 minutes Started) play
 * faster with a time scale, or move only when told to (time scale 0) for deterministic tests.
 */

/** The simulator's notion of "now" (epoch milliseconds of simulated time). */
export interface SimClock {
  now(): number;
  /** Jump simulated time forward by `ms`. */
  advance(ms: number): void;
}

export interface VirtualClockOptions {
  /** Simulated epoch ms at creation; default the real time at creation. */
  startMs?: number;
  /** Simulated milliseconds per real millisecond; 0 freezes time (only advance() moves it). Default 1. */
  timeScale?: number;
  /** Real clock used to measure elapsed time; default Date.now. */
  realNow?: () => number;
}

/** A clock running `timeScale` times faster than real time, plus any explicit advances. */
export class VirtualClock implements SimClock {
  readonly timeScale: number;
  readonly #startMs: number;
  readonly #realStart: number;
  readonly #realNow: () => number;
  #offsetMs = 0;

  constructor(options: VirtualClockOptions = {}) {
    this.#realNow = options.realNow ?? Date.now;
    this.#realStart = this.#realNow();
    this.#startMs = options.startMs ?? this.#realStart;
    this.timeScale = options.timeScale ?? 1;
    if (!Number.isFinite(this.timeScale) || this.timeScale < 0) {
      throw new RangeError(`timeScale must be a finite number >= 0, got ${String(options.timeScale)}`);
    }
  }

  now(): number {
    return this.#startMs + this.#offsetMs + (this.#realNow() - this.#realStart) * this.timeScale;
  }

  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance needs ms >= 0, got ${String(ms)}`);
    this.#offsetMs += ms;
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

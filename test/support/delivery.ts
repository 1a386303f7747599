/**
 * Helpers for store and delivery tests (unit and integration): records, a fake clock, scriptable sinks, a capturing
 * logger, the DeliveryError a failed delivery rejects with.
 */
import { expect } from 'vitest';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import type { Logger } from '../../src/log.ts';
import { DeliveryError, type Sink } from '../../src/sinks/types.ts';
import { capturingLogger } from './logs.ts';
import { numberedRecord } from './records.ts';

/** A realistic ~1 KiB lifecycle record whose id encodes `n` (`rec-<n>`), built by the transform. */
export const makeRecord = numberedRecord;

/** Let pending promise continuations (and immediate I/O callbacks) run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** Awaits a delivery that must fail: fails the test unless `promise` rejects with a DeliveryError; returns it. */
export async function deliveryFailure(promise: Promise<void>): Promise<DeliveryError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  return error as DeliveryError;
}

/** A sink scripted by the test: `failWith` decides per call; records every delivered record id. */
export class ScriptedSink implements Sink {
  readonly name: string;
  readonly maxBatch: number;
  readonly delivered: string[] = [];
  readonly calls: Array<{ ids: string[]; at: number }> = [];
  /** How often close() was called. */
  closes = 0;
  failWith: ((batch: readonly LifecycleRecord[]) => Error | undefined) | undefined;
  /** When set, deliver() waits for this promise (in-flight simulation); honours the abort signal. */
  gate: Promise<void> | undefined;
  readonly #clock: { now(): number };
  constructor(name: string, clock: { now(): number }, maxBatch = 10) {
    this.name = name;
    this.maxBatch = maxBatch;
    this.#clock = clock;
  }
  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    this.calls.push({ ids: batch.map((r) => r.id), at: this.#clock.now() });
    if (this.gate !== undefined) {
      const gate = this.gate;
      await new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        void gate.then(resolve);
      });
    }
    const error = this.failWith?.(batch);
    if (error !== undefined) throw error;
    for (const r of batch) this.delivered.push(r.id);
  }
  async close(): Promise<void> {
    this.closes++;
  }
}

export const retryable = (code = 'http-503') =>
  new DeliveryError(`destination unavailable (${code})`, { retryable: true, code });
export const permanent = (code = 'http-400', failedIndex?: number) =>
  new DeliveryError(`destination rejected the record (${code})`, {
    retryable: false,
    code,
    ...(failedIndex === undefined ? {} : { failedIndex }),
  });

/** A refusal of the destination itself (scope 'destination'): the engine pauses the sink. */
export const destinationRefusal = (code = 'http-403', failedIndex?: number) =>
  new DeliveryError(`the destination refuses every record (${code}); fix: grant the role`, {
    retryable: false,
    scope: 'destination',
    code,
    ...(failedIndex === undefined ? {} : { failedIndex }),
  });

/** A logger built like `run`'s at debug level whose JSON lines are kept in `lines` (and audited: ./logs.ts). */
export function captureLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const { logger, lines } = capturingLogger('debug');
  return { logger, lines };
}

/** Small seeded PRNG (mulberry32) for reproducible jitter. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

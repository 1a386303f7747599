/**
 * In-process delivery harness: a real SQLite outbox (openStore) in a temporary directory, real sinks and the
 * real DeliveryEngine. Records are committed like the pipeline commits them; the engine's 'delivered' events (to
 * its observer) tell when each sink acknowledged which record (timestamps from performance.now()).
 */
import {
  type DeliveredEvent,
  DeliveryEngine,
  type DeliveryEngine as Engine,
  type EngineSink,
} from '../../src/delivery/index.ts';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { silentLogger } from '../../src/log.ts';
import type { Sink } from '../../src/sinks/types.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { makeTempDir } from '../../test/support/tmp.ts';
import { createSinks } from './targets.ts';

export interface DeliveryHarness {
  store: Store;
  engine: Engine;
  sinks: Sink[];
  stateDir: string;
  /** Commits records (one transaction) routed to `sinkNames` (default: every sink); returns the commit time in ms. */
  commit(records: readonly LifecycleRecord[], sinkNames?: readonly string[]): number;
  /** Resolves with performance.now() when `sink` acknowledged `recordId`. */
  acked(sink: string, recordId: string): Promise<number>;
  /** Records acknowledged so far per sink. */
  deliveredCount(sink: string): number;
  /** Resolves with performance.now() the next time `sink`'s queue becomes empty after having work. */
  drained(sink: string): Promise<number>;
  start(): void;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Raw sink entries (YAML shape) given the state directory; built through the config schema and the registry. */
  entries: (stateDir: string) => Array<Record<string, unknown>>;
  /** Per sink name: engine overrides (backoff...). */
  engineOverrides?: Record<string, Partial<Omit<EngineSink, 'sink'>>>;
}

export async function createDeliveryHarness(options: HarnessOptions): Promise<DeliveryHarness> {
  const tmp = makeTempDir('sef-bench-engine-');
  const store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
  const sinks = await createSinks(options.entries(tmp.dir), tmp.dir);
  const waiting = new Map<string, (at: number) => void>();
  const arrived = new Map<string, number>();
  const counts = new Map<string, number>();
  const drainWaiters = new Map<string, Array<(at: number) => void>>();
  const engine = new DeliveryEngine({
    store,
    logger: silentLogger(),
    sinks: sinks.map((sink) => ({ sink, ...options.engineOverrides?.[sink.name] })),
    observer: {
      delivery: (event) => {
        if (event.type === 'delivered') onDelivered(event);
        else if (event.type === 'drained') {
          const at = performance.now();
          const waiters = drainWaiters.get(event.sink) ?? [];
          drainWaiters.delete(event.sink);
          for (const resolve of waiters) resolve(at);
        }
      },
    },
  });
  const onDelivered = (event: DeliveredEvent): void => {
    const at = performance.now();
    counts.set(event.sink, (counts.get(event.sink) ?? 0) + event.count);
    for (const id of event.recordIds) {
      const key = `${event.sink}|${id}`;
      const resolve = waiting.get(key);
      if (resolve === undefined) {
        if (arrived.size < 100_000) arrived.set(key, at);
      } else {
        waiting.delete(key);
        resolve(at);
      }
    }
  };
  let state = 0;
  let started = false;
  return {
    store,
    engine,
    sinks,
    stateDir: tmp.dir,
    commit(records, sinkNames) {
      const names = sinkNames ?? sinks.map((s) => s.name);
      const t0 = performance.now();
      store.commit(
        { bench: ++state },
        records.map((record) => ({ record, sinks: names })),
      );
      const took = performance.now() - t0;
      if (started) engine.notify();
      return took;
    },
    acked(sink, recordId) {
      const key = `${sink}|${recordId}`;
      const at = arrived.get(key);
      if (at !== undefined) {
        arrived.delete(key);
        return Promise.resolve(at);
      }
      return new Promise((resolve) => waiting.set(key, resolve));
    },
    deliveredCount: (sink) => counts.get(sink) ?? 0,
    drained(sink) {
      return new Promise((resolve) => drainWaiters.set(sink, [...(drainWaiters.get(sink) ?? []), resolve]));
    },
    start() {
      started = true;
      engine.start();
    },
    async close() {
      await engine.stop(2000);
      store.close();
      tmp.cleanup();
    },
  };
}

/** Rejects after `ms` with a message naming `what` (so a stuck benchmark stops by itself). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

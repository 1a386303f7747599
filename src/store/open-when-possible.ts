/** openStoreWhenPossible(): opening the store, waiting with backoff while the disk is full or failing. */
import { exponentialBackoffMs } from '../backoff.ts';
import { sleep, systemClock } from '../clock.ts';
import { StoreOpenError } from './errors.ts';
import { type OpenStoreOptions, openStore } from './open.ts';
import type { Store } from './types.ts';

/** Retry delays while the store cannot be opened: 1 s doubling to 15 s. */
export function storeOpenRetryDelayMs(attempt: number): number {
  return exponentialBackoffMs(attempt, { initialMs: 1000, maxMs: 15_000 });
}

/** At most one "still cannot open the state store" error line per this interval. */
export const STORE_OPEN_LOG_INTERVAL_MS = 30_000;

export interface OpenStoreWhenPossibleOptions extends OpenStoreOptions {
  /** Stop retrying (resolves undefined). */
  signal?: AbortSignal;
  /** Each failed attempt that will be retried (readiness: the store is not available). */
  onUnavailable?: (error: StoreOpenError, attempt: number) => void;
  /** Test hook: delay before the next attempt (default storeOpenRetryDelayMs). */
  retryDelayMs?: (attempt: number) => number;
}

/**
 * openStore(), but a failure caused by the disk (full, I/O error: StoreOpenError.retryable) does not end the
 * start: the error is logged at once and then at most every 30 s, and opening is retried with backoff until it
 * works or `signal` aborts (then resolves undefined). Every other failure (configuration, permissions, another
 * forwarder, a newer schema) throws as before.
 */
export async function openStoreWhenPossible(
  options: OpenStoreWhenPossibleOptions,
): Promise<Store | undefined> {
  const delay = options.retryDelayMs ?? storeOpenRetryDelayMs;
  const firstFailureAt = Date.now();
  let lastLogAt = Number.NEGATIVE_INFINITY;
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) return undefined;
    try {
      const store = openStore(options);
      if (attempt > 1) {
        options.logger.info(
          { stateDir: store.stateDir, attempts: attempt, waitedMs: Date.now() - firstFailureAt },
          'state store opened after waiting for the disk',
        );
      }
      return store;
    } catch (error) {
      if (!(error instanceof StoreOpenError) || !error.retryable) throw error;
      const retryInMs = delay(attempt);
      options.onUnavailable?.(error, attempt);
      if (Date.now() - lastLogAt >= STORE_OPEN_LOG_INTERVAL_MS) {
        lastLogAt = Date.now();
        options.logger.error(
          { attempts: attempt, waitingMs: Date.now() - firstFailureAt, retryInMs },
          `cannot open the state store: ${error.message}`,
        );
      }
      await sleep(systemClock, retryInMs, options.signal);
      if (options.signal?.aborted) return undefined;
    }
  }
}

/** A sink's queue with nothing in it: what `stats()` starts each sink from, and what `outbox status --config` shows for a configured sink the store has no row for. Its own module (a type import only), so the CLI reads it without loading the store. */
import type { SinkQueueStats } from './types.ts';

export function emptySinkQueueStats(sink: string): SinkQueueStats {
  return {
    sink,
    pending: 0,
    pendingBytes: 0,
    oldestCreatedAt: null,
    nextAttemptAt: null,
    headAttempts: 0,
    lastError: null,
    deadLetters: 0,
    deadLettersDropped: 0,
  };
}

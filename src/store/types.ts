/**
 * The store's row types and its interfaces by role. Each consumer depends on the narrowest one:
 *
 * - `StateCommitter` — the pipeline: load the last committed state, commit state + outbox rows in one transaction;
 * - `Outbox` — the delivery engine: read pending rows, acknowledge, record failures, dead-letter, enforce caps;
 * - `StoreInspection` — read-only views for the CLI, telemetry and the fleet report (queue stats, pending rows);
 * - `DeadLetterAdmin` — the CLI's `deadletters` commands (list, replay);
 * - `MetaStore` — small key-value facts (approval progress, damage notes).
 *
 * `Store` is all of them plus lifecycle (close, compaction, integrity); only the composition root holds it.
 */
import type { LifecycleRecord } from '../domain/index.ts';

export type DeadLetterReason = 'permanent' | 'overflow' | 'expired';

/** One pending delivery of one record to one sink. */
export interface OutboxRow {
  /** Commit order; strictly increasing, never reused. */
  seq: number;
  sink: string;
  recordId: string;
  record: LifecycleRecord;
  /** Failed attempts so far (persisted, so backoff survives restarts). */
  attempts: number;
  /** Epoch ms before which this row must not be attempted (0 = now). */
  nextAttemptAt: number;
  createdAt: number;
  bytes: number;
  lastError: string | null;
}

export interface DeadLetterRow {
  /** Dead-letter id (use with `deadletters replay --id`). */
  id: number;
  sink: string;
  originalSeq: number;
  recordId: string;
  recordSource: string;
  record: LifecycleRecord;
  bytes: number;
  createdAt: number;
  attempts: number;
  reason: DeadLetterReason;
  error: string;
  deadLetteredAt: number;
}

export interface SinkQueueStats {
  sink: string;
  pending: number;
  pendingBytes: number;
  oldestCreatedAt: number | null;
  /** When the head of the queue is next attempted (null when nothing pending). */
  nextAttemptAt: number | null;
  /** Failed attempts of the head row. */
  headAttempts: number;
  lastError: string | null;
  deadLetters: number;
  /** Dead letters dropped for good by the dead-letter caps (oldest first), since the state directory was created. */
  deadLettersDropped: number;
}

export interface Caps {
  maxPendingRows?: number;
  maxPendingBytes?: number;
  maxAgeMs?: number;
}

export interface CapsResult {
  overflow: number;
  expired: number;
}

/** A sink's dead-letter caps: beyond them, the oldest dead letters are dropped for good. */
export interface DeadLetterCaps {
  maxDeadLetterRows?: number;
  maxDeadLetterBytes?: number;
}

/** What enforcing the dead-letter caps dropped (nothing: 0 rows). */
export interface DeadLetterDrop {
  rows: number;
  bytes: number;
  /** The dead-letter ids dropped, oldest and newest (undefined when none). */
  firstId?: number;
  lastId?: number;
}

export interface DiskUsage {
  dbBytes: number;
  walBytes: number;
  shmBytes: number;
  reserveBytes: number;
  /** db + wal + shm (the reserve is reported separately). */
  totalBytes: number;
}

/** The pipeline's view: the transform state and the ONE transaction that commits it with its outbox rows. */
export interface StateCommitter {
  /** The last committed transform state, or undefined on a fresh database. */
  loadState<T>(): T | undefined;
  /**
   * ONE transaction: the new state plus one outbox row per record per sink. Throws StoreWriteError (full: true
   * for SQLITE_FULL) with nothing applied, so the caller keeps its last committed state and retries next poll.
   */
  commit(
    state: unknown,
    deliveries: ReadonlyArray<{ record: LifecycleRecord; sinks: readonly string[] }>,
  ): void;
}

/** The delivery engine's view: its outbox reader and acknowledger. */
export interface Outbox {
  /** Up to `limit` pending rows of one sink, in commit order. */
  pending(sink: string, limit: number): OutboxRow[];
  /** Remove delivered rows (one transaction). */
  ack(sink: string, seqs: readonly number[]): void;
  /** Persist a failed attempt: attempt count, next attempt time and the error. */
  recordFailure(
    sink: string,
    seqs: readonly number[],
    failure: { attempts: number; nextAttemptAt: number; error: string },
  ): void;
  /** Move rows to dead letters in one transaction. */
  deadLetter(sink: string, seqs: readonly number[], why: { reason: DeadLetterReason; error: string }): void;
  /** Move the oldest rows beyond the caps to dead letters (reason overflow/expired); the count per reason. */
  enforceCapsByReason(sink: string, caps: Caps, nowMs: number): CapsResult;
  /**
   * Delete the oldest dead letters of `sink` beyond the dead-letter caps, counting them in the store (stats()'s
   * deadLettersDropped). Reads only (from an index) while within the caps.
   */
  enforceDeadLetterCaps(sink: string, caps: DeadLetterCaps): DeadLetterDrop;
  /** Checkpoint and truncate the WAL, return free pages to the filesystem (run when queues drain). */
  compact(): void;
}

/** Read-only views (CLI `outbox`/`status`, telemetry, fleet report). */
export interface StoreInspection {
  readonly stateDir: string;
  readonly databasePath: string;
  /** Up to `limit` pending rows of one sink, in commit order. */
  pending(sink: string, limit: number): OutboxRow[];
  stats(): SinkQueueStats[];
  /** PRAGMA integrity_check result ('ok' when healthy). */
  integrityCheck(): string;
  diskUsage(): DiskUsage;
}

/** The CLI's dead-letter administration. */
export interface DeadLetterAdmin {
  listDeadLetters(filter?: { sink?: string; id?: number; limit?: number }): DeadLetterRow[];
  /**
   * Move dead letters (the oldest `limit` matching ones, default all) back to the end of their sink's queue with
   * attempts reset; returns how many.
   */
  replayDeadLetters(filter?: { sink?: string; id?: number; limit?: number }): number;
}

/** Small persistent key-value facts. */
export interface MetaStore {
  setMeta(key: string, value: string): void;
  getMeta(key: string): string | undefined;
}

/** The whole store (see src/store/index.ts for openStore). All methods are synchronous. */
export interface Store extends StateCommitter, Outbox, StoreInspection, DeadLetterAdmin, MetaStore {
  close(): void;
}

/**
 * The store's public API (layout by role: docs/delivery.md). Opening: openStore() for the forwarder (locks the
 * state directory, creates it if needed), openStoreWhenPossible() (waits for a full or failing disk) and
 * openStoreForInspection() for CLI commands (never creates anything, takes no lock). Each consumer holds one
 * narrow interface of types.ts: StateCommitter, Outbox, StoreInspection, DeadLetterAdmin, MetaStore.
 */
export { type StoreDamage, storeDamage } from './damage.ts';
export { DATABASE_FILE, QUARANTINE_META, RESERVE_BYTES, RESERVE_FILE, WAL_DAMAGE_META } from './database.ts';
export { StoreOpenError, StoreWriteError } from './errors.ts';
export { openStoreForInspection } from './inspection.ts';
export { LOCK_FILE } from './lock.ts';
export { type OpenStoreOptions, openStore } from './open.ts';
export {
  type OpenStoreWhenPossibleOptions,
  openStoreWhenPossible,
  STORE_OPEN_LOG_INTERVAL_MS,
  storeOpenRetryDelayMs,
} from './open-when-possible.ts';
export { SCHEMA_VERSION } from './schema.ts';
export { stateDirStartProblems } from './state-dir.ts';
export type {
  Caps,
  CapsResult,
  DeadLetterAdmin,
  DeadLetterCaps,
  DeadLetterDrop,
  DeadLetterReason,
  DeadLetterRow,
  DiskUsage,
  MetaStore,
  Outbox,
  OutboxRow,
  SinkQueueStats,
  StateCommitter,
  Store,
  StoreInspection,
} from './types.ts';

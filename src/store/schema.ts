/**
 * Versioned schema. Migration N (1-based) brings PRAGMA user_version from N-1 to N, each in its own
 * transaction. Never edit a released migration: append a new one.
 */

export const MIGRATIONS: readonly string[] = [
  // 1: state, per-sink outbox, dead letters, key-value meta.
  `
  CREATE TABLE state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    json TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    sink TEXT NOT NULL,
    record_id TEXT NOT NULL,
    record_source TEXT NOT NULL,
    record TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
  );
  -- covering index: per-sink order, counts, bytes and age without reading record payloads
  CREATE INDEX outbox_by_sink ON outbox (sink, seq, bytes, created_at);
  CREATE TABLE dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sink TEXT NOT NULL,
    original_seq INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    record_source TEXT NOT NULL,
    record TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    reason TEXT NOT NULL CHECK (reason IN ('permanent', 'overflow', 'expired')),
    error TEXT NOT NULL,
    dead_lettered_at INTEGER NOT NULL
  );
  CREATE INDEX dead_letters_by_sink ON dead_letters (sink, id);
  CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // 2: the dead letters' sizes in their per-sink index, so the dead-letter caps (delivery.caps.maxDeadLetterRows,
  // maxDeadLetterBytes) count rows and bytes from the index alone, never reading the records.
  `
  CREATE INDEX dead_letters_by_sink_size ON dead_letters (sink, id, bytes);
  DROP INDEX dead_letters_by_sink;
  `,
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

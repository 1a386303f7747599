/**
 * The fleet history database (node:sqlite, WAL): every distinct record once (primary key = CloudEvent
 * (source, id), so re-deliveries are ignored), one folded row per event occurrence, rejected bodies kept for
 * inspection, and ingest counters. One `ingest()` call = one transaction; the consumer checkpoints only after it
 * returned. Several processes may open the same file (busy timeout). Schema: docs/fleet.md.
 */
import { dirname, resolve } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import type { LifecycleRecord } from '../domain/index.ts';
import { type FleetEvent, foldEvent, occurrenceOf, parseRecord } from './fold.ts';

const { mkdirSync } = process.getBuiltinModule('node:fs');

const BUSY_TIMEOUT_MS = 15_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  source TEXT NOT NULL,
  id TEXT NOT NULL,
  transition TEXT NOT NULL,
  event_id TEXT NOT NULL,
  occurrence INTEGER NOT NULL,
  time TEXT NOT NULL,
  vm_name TEXT NOT NULL,
  vm_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  partition_id TEXT NOT NULL,
  sequence_number INTEGER NOT NULL,
  enqueued_at TEXT NOT NULL,
  ingested_at TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (source, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_event ON records (source, event_id, occurrence);
CREATE INDEX IF NOT EXISTS records_by_time ON records (time);
CREATE TABLE IF NOT EXISTS events (
  source TEXT NOT NULL,
  event_id TEXT NOT NULL,
  occurrence INTEGER NOT NULL,
  vm_name TEXT NOT NULL,
  vm_id TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  location TEXT NOT NULL,
  zone TEXT NOT NULL,
  scale_set TEXT NOT NULL,
  event_type TEXT NOT NULL,
  affects_vm INTEGER NOT NULL,
  resources TEXT NOT NULL,
  description TEXT NOT NULL,
  event_source TEXT NOT NULL,
  status TEXT NOT NULL,
  first_seen_status TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  not_before TEXT,
  notice_seconds INTEGER,
  advertised_seconds INTEGER,
  started_at TEXT,
  ended_at TEXT,
  inferred INTEGER,
  reason TEXT,
  host_rebooted INTEGER,
  downtime_seconds REAL,
  longest_stall_ms REAL,
  observed_seconds REAL,
  approval TEXT,
  approved_at TEXT,
  approval_rule TEXT,
  updates INTEGER NOT NULL,
  missing TEXT NOT NULL,
  vm_deleted INTEGER NOT NULL,
  records INTEGER NOT NULL,
  last_record_at TEXT NOT NULL,
  PRIMARY KEY (source, event_id, occurrence)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_first_seen ON events (first_seen_at);
CREATE INDEX IF NOT EXISTS events_by_status ON events (status);
CREATE TABLE IF NOT EXISTS rejected (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  partition_id TEXT NOT NULL,
  sequence_number INTEGER NOT NULL,
  enqueued_at TEXT NOT NULL,
  received_at TEXT NOT NULL,
  reason TEXT NOT NULL,
  body TEXT NOT NULL,
  UNIQUE (partition_id, sequence_number)
);
CREATE TABLE IF NOT EXISTS ingest_stats (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** One event as read from the hub, before validation. */
export interface RawFleetEvent {
  body: unknown;
  partitionId: string;
  sequenceNumber: number;
  enqueuedAt: Date;
}

/** What one ingest() did. */
export interface IngestResult {
  accepted: number;
  duplicates: number;
  rejected: number;
  /** Event occurrences whose summary row was recomputed. */
  eventsTouched: number;
}

/** Counters over the database's lifetime. */
export interface IngestStats {
  received: number;
  accepted: number;
  duplicates: number;
  rejected: number;
}

export interface OpenFleetStoreOptions {
  /** The SQLite file (created with its directory if missing). */
  path: string;
  /** Clock for ingested_at (tests). */
  now?: () => Date;
  /** Open without creating or migrating (report / read-only tools). */
  readOnly?: boolean;
}

/** SQLite row for an event (snake_case columns). */
export type EventRow = Record<string, SQLInputValue>;

/** The fleet history database. */
export class FleetStore {
  readonly db: DatabaseSync;
  readonly path: string;
  readonly #now: () => Date;

  constructor(options: OpenFleetStoreOptions) {
    this.path = resolve(options.path);
    this.#now = options.now ?? (() => new Date());
    if (!options.readOnly) mkdirSync(dirname(this.path), { recursive: true });
    this.db = new DatabaseSync(this.path, { timeout: BUSY_TIMEOUT_MS, readOnly: options.readOnly ?? false });
    this.db.exec(`PRAGMA busy_timeout=${BUSY_TIMEOUT_MS}`);
    if (!options.readOnly) {
      this.db.exec('PRAGMA journal_mode=WAL');
      this.db.exec('PRAGMA synchronous=FULL');
      this.db.exec('BEGIN IMMEDIATE');
      try {
        this.db.exec(SCHEMA);
        this.db.exec('COMMIT');
      } catch (error) {
        this.db.exec('ROLLBACK');
        throw error;
      }
    }
  }

  /**
   * Ingests one batch in ONE transaction: validates each body, inserts new records (duplicates by (source, id)
   * are counted and ignored), keeps rejected bodies, and re-folds every touched event occurrence from all of its
   * stored records. Throws if the transaction fails (then nothing of the batch is stored).
   */
  ingest(batch: readonly RawFleetEvent[]): IngestResult {
    const result: IngestResult = { accepted: 0, duplicates: 0, rejected: 0, eventsTouched: 0 };
    if (batch.length === 0) return result;
    const ingestedAt = this.#now().toISOString();
    const insertRecord = this.db.prepare(
      `INSERT OR IGNORE INTO records (source, id, transition, event_id, occurrence, time, vm_name, vm_id,
         event_type, partition_id, sequence_number, enqueued_at, ingested_at, body)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertRejected = this.db.prepare(
      `INSERT OR IGNORE INTO rejected (partition_id, sequence_number, enqueued_at, received_at, reason, body)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    const touched = new Map<string, [string, string, number]>();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const event of batch) {
        const parsed = parseRecord(event.body);
        if ('error' in parsed) {
          result.rejected++;
          insertRejected.run(
            event.partitionId,
            event.sequenceNumber,
            event.enqueuedAt.toISOString(),
            ingestedAt,
            parsed.error,
            bodyText(event.body),
          );
          continue;
        }
        const r = parsed.record;
        const occurrence = occurrenceOf(r);
        const change = insertRecord.run(
          r.source,
          r.id,
          r.transition,
          r.subject,
          occurrence,
          r.time,
          r.data.vm.name ?? '',
          r.data.vm.vmId || r.vmid || '',
          r.data.EventType ?? r.maintenancetype ?? '',
          event.partitionId,
          event.sequenceNumber,
          event.enqueuedAt.toISOString(),
          ingestedAt,
          JSON.stringify(r),
        );
        if (Number(change.changes) === 0) {
          result.duplicates++;
          continue;
        }
        result.accepted++;
        touched.set(JSON.stringify([r.source, r.subject, occurrence]), [r.source, r.subject, occurrence]);
      }
      const selectBodies = this.db.prepare(
        'SELECT body FROM records WHERE source = ? AND event_id = ? AND occurrence = ?',
      );
      for (const [source, eventId, occurrence] of touched.values()) {
        const rows = selectBodies.all(source, eventId, occurrence) as Array<{ body: string }>;
        this.#upsertEvent(foldEvent(rows.map((row) => JSON.parse(row.body) as LifecycleRecord)));
      }
      result.eventsTouched = touched.size;
      this.#bump('received', batch.length);
      this.#bump('accepted', result.accepted);
      this.#bump('duplicates', result.duplicates);
      this.#bump('rejected', result.rejected);
      this.db.exec('COMMIT');
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
    return result;
  }

  #bump(name: string, by: number): void {
    this.db
      .prepare(
        'INSERT INTO ingest_stats (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value',
      )
      .run(name, by);
  }

  #upsertEvent(e: FleetEvent): void {
    const row: Record<string, SQLInputValue> = {
      source: e.source,
      event_id: e.eventId,
      occurrence: e.occurrence,
      vm_name: e.vmName,
      vm_id: e.vmId,
      resource_id: e.resourceId,
      location: e.location,
      zone: e.zone,
      scale_set: e.scaleSet,
      event_type: e.eventType,
      affects_vm: e.affectsVm ? 1 : 0,
      resources: JSON.stringify(e.resources),
      description: e.description,
      event_source: e.eventSource,
      status: e.status,
      first_seen_status: e.firstSeenStatus,
      first_seen_at: e.firstSeenAt,
      not_before: e.notBefore,
      notice_seconds: e.noticeSeconds,
      advertised_seconds: e.advertisedSeconds,
      started_at: e.startedAt,
      ended_at: e.endedAt,
      inferred: e.inferred === null ? null : e.inferred ? 1 : 0,
      reason: e.reason,
      host_rebooted: e.hostRebooted === null ? null : e.hostRebooted ? 1 : 0,
      downtime_seconds: e.downtimeSeconds,
      longest_stall_ms: e.longestStallMs,
      observed_seconds: e.observedSeconds,
      approval: e.approval,
      approved_at: e.approvedAt,
      approval_rule: e.approvalRule,
      updates: e.updates,
      missing: JSON.stringify(e.missing),
      vm_deleted: e.vmDeleted ? 1 : 0,
      records: e.records,
      last_record_at: e.lastRecordAt,
    };
    const columns = Object.keys(row);
    this.db
      .prepare(
        `INSERT OR REPLACE INTO events (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      )
      .run(...Object.values(row));
  }

  /** Lifetime ingest counters. */
  stats(): IngestStats {
    const rows = this.db.prepare('SELECT name, value FROM ingest_stats').all() as Array<{
      name: string;
      value: number;
    }>;
    const get = (n: string) => Number(rows.find((r) => r.name === n)?.value ?? 0);
    return {
      received: get('received'),
      accepted: get('accepted'),
      duplicates: get('duplicates'),
      rejected: get('rejected'),
    };
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  try {
    return JSON.stringify(body) ?? String(body);
  } catch {
    return String(body);
  }
}

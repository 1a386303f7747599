/**
 * Ingest of one batch into either store, in ONE transaction:
 *
 * 1. every body is validated (src/fleet/validate.ts: type and size of every field bound to SQL); a body that
 *    fails goes to `rejected` with its reason and the rest of the batch goes on;
 * 2. new records are inserted (CloudEvent (source, id) is the key: re-deliveries are counted duplicates);
 * 3. under the locks of the batch's VMs (PostgreSQL advisory locks; SQLite has one writer), taken first, the
 *    touched (event, VM) observations are re-folded from all their stored records, and the per-VM and
 *    per-partition counters are bumped; heartbeats (not history rows) update each VM's latest heartbeat and its
 *    day's coverage, and each partition's read-through mark moves to the newest enqueue time of the batch
 *    (heartbeat-ingest.ts);
 * 4. then each touched maintenance event (EventId + occurrence) is locked and its fleet-wide row re-folded from
 *    all its observations. Folding from what is stored, under the locks of what is folded, makes the result
 *    independent of arrival order and of which consumer got which record: two consumers that both hold a
 *    partition during a handover produce the history one consumer would have. A VM's records come through one
 *    partition, an event's through every partition its VMs hash to: the events' locks are where the
 *    partitions' batches wait on each other, so only the events' rows and what follows are written under them;
 * 5. the dimension counts (dimensions.ts) are bumped (commutative upserts) and the events' impact intervals
 *    replaced (rollups/impacts.ts);
 * 6. the pending VMs per scope move with the events whose pending flag or affected observations changed
 *    (rollups/pending.ts);
 * 7. last, each changed event's entry moves between the hour digests of the rollups (rollups/store.ts), whose
 *    coarser buckets are marked for rebuilding.
 *
 * Only failures of the store itself (disk full, server unreachable, lost serialization races beyond their
 * retries) throw; then nothing of the batch is stored and the consumer holds the partition.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { type FleetEvent, foldEvent, occurrenceOf } from '../fold.ts';
import { foldMaintenance, type MaintenanceEvent } from '../fold-maintenance.ts';
import { parseFleetEvent } from '../validate.ts';
import { decodeBody, encodeBody } from './body.ts';
import { CoverageDeltas } from './coverage-counts.ts';
import { DimensionDeltas } from './dimensions.ts';
import {
  advanceReadThrough,
  type IngestedHeartbeat,
  ingestHeartbeats,
  markDeletions,
  vmLocks,
} from './heartbeat-ingest.ts';
import { entryOf, eventKey } from './rollups/aggregate.ts';
import { applyIntervalChanges, type Interval, intervalsOf } from './rollups/impacts.ts';
import { PendingDeltas, type PendingObservation, pendingObservation } from './rollups/pending.ts';
import { applyEntryChanges, type EntryChange } from './rollups/store.ts';
import { observationFromRow } from './rows.ts';
import type { SqlExecutor, SqlRow, SqlValue } from './sql.ts';

/** One event as read from the hub (or a line of an import file), before validation. */
export interface RawFleetEvent {
  body: unknown;
  partitionId: string;
  sequenceNumber: number;
  enqueuedAt: Date;
}

/** What one ingest did. */
export interface IngestResult {
  /** Lifecycle records stored (new ones). */
  accepted: number;
  duplicates: number;
  rejected: number;
  /** Valid heartbeats (kept as each VM's latest and its day's coverage, not as history rows). */
  heartbeats: number;
  /** Maintenance events whose rows were recomputed. */
  eventsTouched: number;
  /** The rejected bodies: their index in the batch and why. */
  rejections: Array<{ index: number; reason: string }>;
}

/** Records inserted per statement (14 parameters each). */
const INSERT_CHUNK = 200;
/** Longest rejected body kept (the reason says it was cut). */
const MAX_REJECTED_BODY = 64 * 1024;

function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  try {
    return JSON.stringify(body) ?? String(body);
  } catch {
    return String(body);
  }
}

/** A body as it can be stored as text: NUL removed (PostgreSQL text cannot hold it), size bounded. */
function storableBody(body: unknown): string {
  const text = bodyText(body).replaceAll('\u0000', '\\u0000');
  return text.length > MAX_REJECTED_BODY ? `${text.slice(0, MAX_REJECTED_BODY)}…[cut]` : text;
}

interface Accepted {
  record: LifecycleRecord;
  raw: RawFleetEvent;
  occurrence: number;
}

/** Times are stored as Date.toISOString() text, so they sort as text in both stores. */
function iso(value: string): string;
function iso(value: string | null): string | null;
function iso(value: string | null): string | null {
  if (value === null) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? value : new Date(t).toISOString();
}

const key = (eventId: string, occurrence: number) => `${eventId}#${occurrence}`;

/** What ingest needs to know besides the batch. */
export interface IngestSettings {
  /** When this ingest runs (ISO). */
  ingestedAt: string;
  /** A heartbeat whose sink's oldest pending record is older than this says its forwarder is unhealthy. */
  backlogSeconds: number;
}

/** What ingesting nothing gives; ingestBatch counts into it. */
export function emptyIngestResult(): IngestResult {
  return { accepted: 0, duplicates: 0, rejected: 0, heartbeats: 0, eventsTouched: 0, rejections: [] };
}

/** Ingests `batch` through `tx` (inside a transaction): the steps of the module comment, in order. */
export async function ingestBatch(
  tx: SqlExecutor,
  batch: readonly RawFleetEvent[],
  settings: IngestSettings,
): Promise<IngestResult> {
  const result = emptyIngestResult();
  const { accepted, heartbeats } = await sortBatch(tx, batch, settings.ingestedAt, result);
  const inserted = await insertRecords(tx, accepted, settings.ingestedAt, result);
  result.accepted = inserted.length;
  const partition = partitionOf(batch);
  // The VMs' rows (vms, latest_heartbeats) and their (event, VM) observations are read and written under the
  // VMs' locks, taken first, at once, in one order: only the batches of one partition write a VM (a handover
  // aside), so the partitions' batches go on side by side here.
  await tx.lockKeys(vmLockKeys(inserted, heartbeats));
  const pairs = await foldTouchedPairs(tx, inserted);
  const dimensions = new DimensionDeltas();
  const counts = new CoverageDeltas();
  await bumpVms(tx, inserted, dimensions, counts);
  await markDeletions(tx, pairs.deletions, counts);
  await ingestHeartbeats(tx, heartbeats, settings.backlogSeconds, counts);
  result.heartbeats = heartbeats.length;
  await advanceReadThrough(tx, readThrough(batch));
  await bumpStats(tx, partition, result, batch.length);
  await counts.write(tx, partition);
  // Then the events' locks, held until commit: an availability set's event arrives through every partition its
  // members hash to, so this is where the partitions' batches wait on each other — only the events' rows, the
  // pending VMs, intervals and digests are written under them.
  const folded = await refoldTouchedEvents(tx, pairs, dimensions);
  result.eventsTouched = folded.changes.length;
  await dimensions.write(tx, partition);
  await folded.pending.write(tx, partition);
  await applyIntervalChanges(tx, folded.events, folded.intervals);
  // Last, so that the hour digests (which every transaction of the same hours locks) are held only until commit.
  await applyEntryChanges(tx, folded.changes);
  return result;
}

/**
 * 1. Validates every body: a failing one is stored in `rejected` with its reason, a heartbeat is set aside, a
 * record is kept once per CloudEvent (source, id) (a repeat within the batch is a duplicate).
 */
async function sortBatch(
  tx: SqlExecutor,
  batch: readonly RawFleetEvent[],
  ingestedAt: string,
  result: IngestResult,
): Promise<{ accepted: Map<string, Accepted>; heartbeats: IngestedHeartbeat[] }> {
  const accepted = new Map<string, Accepted>();
  const heartbeats: IngestedHeartbeat[] = [];
  for (const [index, raw] of batch.entries()) {
    const parsed = parseFleetEvent(raw.body);
    if ('error' in parsed) {
      result.rejected++;
      result.rejections.push({ index, reason: parsed.error });
      await tx.run(
        `INSERT INTO rejected (partition_id, sequence_number, enqueued_at, received_at, reason, body)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (partition_id, sequence_number) DO NOTHING`,
        [
          raw.partitionId,
          raw.sequenceNumber,
          raw.enqueuedAt.toISOString(),
          ingestedAt,
          parsed.error,
          storableBody(raw.body),
        ],
      );
      continue;
    }
    if ('heartbeat' in parsed) {
      heartbeats.push({
        heartbeat: parsed.heartbeat,
        partitionId: raw.partitionId,
        enqueuedAt: raw.enqueuedAt,
      });
      continue;
    }
    const record = parsed.record;
    const id = JSON.stringify([record.source, record.id]);
    if (accepted.has(id)) {
      result.duplicates++;
      continue;
    }
    accepted.set(id, { record, raw, occurrence: occurrenceOf(record) });
  }
  return { accepted, heartbeats };
}

/** 2. Inserts the new records (a record already stored is a duplicate); returns those inserted. */
async function insertRecords(
  tx: SqlExecutor,
  accepted: ReadonlyMap<string, Accepted>,
  ingestedAt: string,
  result: IngestResult,
): Promise<Accepted[]> {
  // Inserted in key order, so two transactions inserting overlapping batches never wait on each other in a cycle.
  const ordered = [...accepted.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  const inserted: Accepted[] = [];
  for (let i = 0; i < ordered.length; i += INSERT_CHUNK) {
    const chunk = ordered.slice(i, i + INSERT_CHUNK);
    const params: SqlValue[] = [];
    for (const { record: r, raw, occurrence } of chunk) {
      params.push(
        r.source,
        r.id,
        r.transition,
        r.subject,
        occurrence,
        new Date(r.time).toISOString(),
        r.data.vm.name ?? '',
        r.data.EventType ?? r.maintenancetype ?? '',
        raw.partitionId,
        raw.sequenceNumber,
        raw.enqueuedAt.toISOString(),
        ingestedAt,
        encodeBody(JSON.stringify(r)),
      );
    }
    const rows = await tx.all(
      `INSERT INTO records (source, id, transition, event_id, occurrence, time, vm_name, event_type, partition_id,
         sequence_number, enqueued_at, ingested_at, body)
       VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT (source, id) DO NOTHING RETURNING source, id`,
      params,
    );
    const fresh = new Set(rows.map((row) => JSON.stringify([String(row.source), String(row.id)])));
    for (const a of chunk) {
      if (fresh.has(JSON.stringify([a.record.source, a.record.id]))) inserted.push(a);
      else result.duplicates++;
    }
  }
  return inserted;
}

/** The (event, VM) pairs a batch's records touched, folded into their observations. */
interface FoldedPairs {
  /** Touched events by key, each with the VMs (sources) whose observation was re-folded. */
  events: Map<string, { eventId: string; occurrence: number; sources: Set<string> }>;
  /** VMs Preempt/Terminate started on (the fold's vmDeleted): when, for coverage (a deleted VM is not silent). */
  deletions: Map<string, string>;
  /**
   * The touched pairs' affected observations before this fold rewrote them (their scopes, by event key and
   * source), for the pending VMs per scope (rollups/pending.ts).
   */
  affectedBefore: Map<string, Map<string, PendingObservation>>;
  /** SQLite: the touched events' stored type, status, pending flag and first sighting, read before the fold. */
  storedEvents: StoredEvents | undefined;
}

/**
 * 3a. Under the VMs' locks: re-folds the observation of every touched (event, VM) pair from all its stored
 * records, in a few statements for the whole batch (every pair's records read at once, the observations upserted
 * 100 a statement). Exact under concurrent consumers: every transaction that stores a record of a pair folds the
 * pair after it under the VM's lock, held until commit, so the last one reads every record.
 */
async function foldTouchedPairs(tx: SqlExecutor, inserted: readonly Accepted[]): Promise<FoldedPairs> {
  const events: FoldedPairs['events'] = new Map();
  for (const { record, occurrence } of inserted) {
    const k = key(record.subject, occurrence);
    let entry = events.get(k);
    if (entry === undefined) {
      entry = { eventId: record.subject, occurrence, sources: new Set() };
      events.set(k, entry);
    }
    entry.sources.add(record.source);
  }
  const deletions = new Map<string, string>();
  const pairs = [...events.keys()].sort().flatMap((k) => {
    const { eventId, occurrence, sources } = events.get(k)!;
    return [...sources].sort().map((source) => ({ eventId, occurrence, source }));
  });
  const recordsOf = await touchedRecords(tx, pairs);
  // The pending VMs need a pair's old affected observation when its event was pending. PostgreSQL knows that only
  // under the event's lock (3b), so it reads every pair's; SQLite has one writer, so what the events held before
  // is known now, and only the pairs of pending events are read.
  const stored = tx.dialect === 'sqlite' ? await storedEvents(tx, [...events.values()]) : undefined;
  const before = await affectedBefore(
    tx,
    stored === undefined
      ? pairs
      : pairs.filter((p) => stored.get(key(p.eventId, p.occurrence))?.pending === true),
  );
  const observations: FleetEvent[] = [];
  for (const { eventId, occurrence, source } of pairs) {
    const observation = foldEvent(recordsOf.get(pairKey(eventId, occurrence, source)) ?? []);
    observations.push(observation);
    const deletedAt = iso(observation.startedAt);
    if (observation.vmDeleted && deletedAt !== null && deletedAt > (deletions.get(source) ?? ''))
      deletions.set(source, deletedAt);
  }
  // In key order (event, occurrence, source), so two transactions never wait on each other's rows in a cycle.
  await upsertRows(tx, 'observations', observations.map(observationRow), OBSERVATION_KEY);
  return { events, deletions, affectedBefore: before, storedEvents: stored };
}

/** What re-folding the touched events changed, for the rollups that follow. */
interface Refolded {
  /** One per touched event: its rollup entry before and after. */
  changes: EntryChange[];
  /** The touched events' impact intervals now (rollups/impacts.ts), replacing what they had. */
  intervals: Interval[];
  events: Array<{ eventId: string; occurrence: number }>;
  /** How the pending VMs per scope move (rollups/pending.ts). */
  pending: PendingDeltas;
}

/**
 * 3b. Locks each touched maintenance event (after the VMs' locks: every transaction takes them in that order, each
 * kind sorted, so none waits on another in a cycle), re-folds its fleet-wide row from all its observations, and
 * notes in `dimensions` how its type and status counts move and in the result how its rollup entry, pending VMs
 * and intervals do. Exact under concurrent consumers: every transaction that wrote an observation of the event
 * refolds the event after it under the event's lock, held until commit, so the last one reads every observation.
 */
async function refoldTouchedEvents(
  tx: SqlExecutor,
  pairs: FoldedPairs,
  dimensions: DimensionDeltas,
): Promise<Refolded> {
  const touched = pairs.events;
  const keys = [...touched.keys()].sort();
  const refolded: Refolded = {
    changes: [],
    intervals: [],
    events: keys.map((k) => touched.get(k)!),
    pending: new PendingDeltas(),
  };
  if (keys.length === 0) return refolded;
  await tx.lockKeys(keys);
  // What the rollups, the pending VMs and the dimension counts held of each event before this fold, and every
  // observation of each event (read under its lock, after this transaction's own observations were written).
  const before = pairs.storedEvents ?? (await storedEvents(tx, refolded.events));
  const observationsOf = await storedObservations(tx, refolded.events);
  const maintenance: MaintenanceEvent[] = [];
  for (const k of keys) {
    const { eventId, occurrence, sources } = touched.get(k)!;
    const rows = observationsOf.get(k) ?? [];
    const folded = foldMaintenance(rows.map(observationFromRow));
    maintenance.push(folded);
    const old = before.get(k);
    if (old !== undefined) {
      dimensions.add('type', old.eventType, -1);
      dimensions.add('status', old.status, -1);
    }
    dimensions.add('type', folded.eventType, 1);
    dimensions.add('status', folded.status, 1);
    refolded.pending.event(
      old?.pending === true,
      folded.pending,
      rows,
      sources,
      pairs.affectedBefore.get(k) ?? new Map(),
    );
    const affected = rows.filter((o) => Number(o.affects_vm) === 1).map((o) => String(o.source));
    refolded.intervals.push(...intervalsOf(folded.firstSeenAt, rows));
    refolded.changes.push({
      key: eventKey(eventId, occurrence),
      before: old?.firstSeenAt ?? null,
      after: entryOf(folded, affected),
    });
  }
  await upsertRows(tx, 'maintenance', maintenance.map(maintenanceRow), MAINTENANCE_KEY);
  return refolded;
}

const pairKey = (eventId: string, occurrence: number, source: string) =>
  JSON.stringify([eventId, occurrence, source]);

/** Bound parameters per statement that reads by key (both stores allow far more; a statement stays small). */
const READ_PARAMS = 600;

/** The stored records of each (event, VM) pair, by pairKey (allByPairs: the records_by_event index). */
async function touchedRecords(
  tx: SqlExecutor,
  pairs: ReadonlyArray<{ eventId: string; occurrence: number; source: string }>,
): Promise<Map<string, LifecycleRecord[]>> {
  const out = new Map<string, LifecycleRecord[]>();
  for (const row of await allByPairs(
    tx,
    pairs,
    (where) => `SELECT event_id, occurrence, source, body FROM records WHERE ${where}`,
  )) {
    const k = pairKey(String(row.event_id), Number(row.occurrence), String(row.source));
    append(out, k, JSON.parse(decodeBody(row.body)) as LifecycleRecord);
  }
  return out;
}

/**
 * What the pending VMs per scope counted of (event, VM) pairs before the fold rewrites their observations (the
 * affected ones' scopes, by event key and source): the pairs of events that were pending.
 */
async function affectedBefore(
  tx: SqlExecutor,
  pairs: ReadonlyArray<{ eventId: string; occurrence: number; source: string }>,
): Promise<Map<string, Map<string, PendingObservation>>> {
  const out = new Map<string, Map<string, PendingObservation>>();
  for (const row of await allByPairs(
    tx,
    pairs,
    (where) =>
      `SELECT event_id, occurrence, source, location, zone, scale_set FROM observations
       WHERE (${where}) AND affects_vm = 1`,
  )) {
    const k = key(String(row.event_id), Number(row.occurrence));
    let m = out.get(k);
    if (m === undefined) {
      m = new Map();
      out.set(k, m);
    }
    m.set(String(row.source), pendingObservation(row));
  }
  return out;
}

/**
 * The rows `select(where)` reads for (event, VM) pairs (given in event order): one statement per chunk of pairs,
 * each event's VMs as one `source IN (…)` under its (event_id, occurrence) (the tables' key order), OR-ed.
 */
async function allByPairs(
  tx: SqlExecutor,
  pairs: ReadonlyArray<{ eventId: string; occurrence: number; source: string }>,
  select: (where: string) => string,
): Promise<SqlRow[]> {
  const out: SqlRow[] = [];
  let i = 0;
  while (i < pairs.length) {
    const terms: string[] = [];
    const params: SqlValue[] = [];
    while (i < pairs.length && params.length < READ_PARAMS) {
      const { eventId, occurrence } = pairs[i]!;
      const sources: string[] = [];
      for (; i < pairs.length && pairs[i]!.eventId === eventId && pairs[i]!.occurrence === occurrence; i++) {
        sources.push(pairs[i]!.source);
        if (params.length + sources.length + 2 >= READ_PARAMS) {
          i++;
          break;
        }
      }
      terms.push(`(event_id = ? AND occurrence = ? AND source IN (${sources.map(() => '?').join(', ')}))`);
      params.push(eventId, occurrence, ...sources);
    }
    for (const row of await tx.all(select(terms.join(' OR ')), params)) out.push(row);
  }
  return out;
}

function append<T>(lists: Map<string, T[]>, k: string, value: T): void {
  const list = lists.get(k);
  if (list === undefined) lists.set(k, [value]);
  else list.push(value);
}

/** Every stored observation of the events, by event key, each event's in source order. */
async function storedObservations(
  tx: SqlExecutor,
  events: ReadonlyArray<{ eventId: string; occurrence: number }>,
): Promise<Map<string, SqlRow[]>> {
  const out = new Map<string, SqlRow[]>();
  for (let i = 0; i < events.length; i += READ_PARAMS / 2) {
    const chunk = events.slice(i, i + READ_PARAMS / 2);
    const rows = await tx.all(
      `SELECT * FROM observations WHERE ${chunk.map(() => '(event_id = ? AND occurrence = ?)').join(' OR ')}
       ORDER BY event_id, occurrence, source`,
      chunk.flatMap((e) => [e.eventId, e.occurrence]),
    );
    for (const row of rows) {
      append(out, key(String(row.event_id), Number(row.occurrence)), row);
    }
  }
  return out;
}

/**
 * Takes the locks ingest takes to write these events, in its order (prune, before it removes them): the VMs' of
 * their observations (which ingest writes under them), then the events', each kind sorted, so that a prune and an
 * ingest never wait on each other in a cycle. A VM whose first record of an event is not committed yet is not
 * among them: its ingest folds the event after the prune, from what the prune left.
 */
export async function lockEvents(
  tx: SqlExecutor,
  events: ReadonlyArray<{ eventId: string; occurrence: number }>,
): Promise<void> {
  const sources: string[] = [];
  for (let i = 0; i < events.length; i += READ_PARAMS / 2) {
    const chunk = events.slice(i, i + READ_PARAMS / 2);
    const rows = await tx.all(
      `SELECT DISTINCT source FROM observations
       WHERE ${chunk.map(() => '(event_id = ? AND occurrence = ?)').join(' OR ')}`,
      chunk.flatMap((e) => [e.eventId, e.occurrence]),
    );
    for (const row of rows) sources.push(String(row.source));
  }
  await tx.lockKeys(vmLocks(sources));
  await tx.lockKeys([...new Set(events.map((e) => key(e.eventId, e.occurrence)))].sort());
}

/** Per partition of the batch, the newest enqueue time in it: everything before it on that partition is read. */
function readThrough(batch: readonly RawFleetEvent[]): Map<string, number> {
  const marks = new Map<string, number>();
  for (const raw of batch) {
    const t = raw.enqueuedAt.getTime();
    if (t > (marks.get(raw.partitionId) ?? Number.NEGATIVE_INFINITY)) marks.set(raw.partitionId, t);
  }
  return marks;
}

/** Stored events' type, status, pending flag and first sighting, by key. */
type StoredEvents = Map<string, { firstSeenAt: string; eventType: string; status: string; pending: boolean }>;

/** The stored type, status and first sighting of events, by key (absent when new). */
async function storedEvents(
  tx: SqlExecutor,
  events: ReadonlyArray<{ eventId: string; occurrence: number }>,
): Promise<StoredEvents> {
  const out: StoredEvents = new Map();
  const ids = [...new Set(events.map((e) => e.eventId))];
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const rows = await tx.all(
      `SELECT event_id, occurrence, first_seen_at, event_type, status, pending FROM maintenance
       WHERE event_id IN (${chunk.map(() => '?').join(', ')})`,
      chunk,
    );
    for (const row of rows)
      out.set(key(String(row.event_id), Number(row.occurrence)), {
        firstSeenAt: String(row.first_seen_at),
        eventType: String(row.event_type),
        status: String(row.status),
        pending: Number(row.pending) === 1,
      });
  }
  return out;
}

/**
 * The partition counters and dimension counts of a batch are kept under (one consumer owns a partition at a
 * time, so writers rarely share a row); a batch is one partition's when it comes from the consumer.
 */
function partitionOf(batch: readonly RawFleetEvent[]): string {
  const partitions = [...new Set(batch.map((e) => e.partitionId))];
  return partitions.length === 1 ? partitions[0]! : '*';
}

function observationRow(e: FleetEvent): Record<string, SqlValue> {
  const flag = (v: boolean | null) => (v === null ? null : v ? 1 : 0);
  return {
    event_id: e.eventId,
    occurrence: e.occurrence,
    source: e.source,
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
    first_seen_at: iso(e.firstSeenAt),
    not_before: iso(e.notBefore),
    notice_seconds: e.noticeSeconds,
    advertised_seconds: e.advertisedSeconds,
    started_at: iso(e.startedAt),
    ended_at: iso(e.endedAt),
    inferred: flag(e.inferred),
    reason: e.reason,
    host_rebooted: flag(e.hostRebooted),
    downtime_seconds: e.downtimeSeconds,
    longest_stall_ms: e.longestStallMs,
    observed_seconds: e.observedSeconds,
    approval: e.approval,
    approved_at: iso(e.approvedAt),
    approval_rule: e.approvalRule,
    updates: e.updates,
    missing: JSON.stringify(e.missing),
    vm_deleted: e.vmDeleted ? 1 : 0,
    records: e.records,
    transitions: JSON.stringify(e.transitions),
    last_record_at: iso(e.lastRecordAt),
  };
}

function maintenanceRow(m: MaintenanceEvent): Record<string, SqlValue> {
  const flag = (v: boolean | null) => (v === null ? null : v ? 1 : 0);
  return {
    event_id: m.eventId,
    occurrence: m.occurrence,
    event_type: m.eventType,
    status: m.status,
    pending: m.pending ? 1 : 0,
    first_seen_at: iso(m.firstSeenAt),
    not_before: iso(m.notBefore),
    notice_seconds: m.noticeSeconds,
    advertised_seconds: m.advertisedSeconds,
    observed_seconds: m.observedSeconds,
    started_at: iso(m.startedAt),
    ended_at: iso(m.endedAt),
    inferred: flag(m.inferred),
    reason: m.reason,
    approval: m.approval,
    approved_at: iso(m.approvedAt),
    approval_rule: m.approvalRule,
    updates: m.updates,
    missing: JSON.stringify(m.missing),
    vm_deleted: m.vmDeleted ? 1 : 0,
    affected_vms: m.affectedVms,
    affected_names: m.affectedNames.join(' '),
    reporting_vms: m.reportingVms,
    observers: m.observers,
    location: m.location,
    zone: m.zone,
    scale_set: m.scaleSet,
    description: m.description,
    event_source: m.eventSource,
    records: m.records,
    n_scheduled: m.transitions.scheduled,
    n_started: m.transitions.started,
    n_completed: m.transitions.completed,
    n_canceled: m.transitions.canceled,
    n_updated: m.transitions.updated,
    n_approved: m.transitions.approved,
    last_record_at: iso(m.lastRecordAt),
  };
}

/** Rows per multi-row upsert (observations have 37 columns: 3,700 parameters). */
const UPSERT_CHUNK = 100;
const OBSERVATION_KEY = ['event_id', 'occurrence', 'source'] as const;
const MAINTENANCE_KEY = ['event_id', 'occurrence'] as const;

/**
 * Inserts or replaces `rows` (all with the same columns, each key at most once), UPSERT_CHUNK per statement, in
 * the order given (ingest gives them in key order, so two transactions never wait on each other's rows in a cycle).
 */
async function upsertRows(
  tx: SqlExecutor,
  table: string,
  rows: ReadonlyArray<Record<string, SqlValue>>,
  conflict: readonly string[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const updates = columns.filter((c) => !conflict.includes(c)).map((c) => `${c} = excluded.${c}`);
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += UPSERT_CHUNK) {
    const chunk = rows.slice(i, i + UPSERT_CHUNK);
    await tx.run(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')}
       ON CONFLICT (${conflict.join(', ')}) DO UPDATE SET ${updates.join(', ')}`,
      chunk.flatMap((row) => columns.map((c) => row[c] ?? null)),
    );
  }
}

/** Writes a maintenance event's fleet-wide row (also used by the copy in `fleet migrate`). */
export const upsertMaintenance = (tx: SqlExecutor, m: MaintenanceEvent) =>
  upsertRows(tx, 'maintenance', [maintenanceRow(m)], MAINTENANCE_KEY);

async function bumpVms(
  tx: SqlExecutor,
  inserted: readonly Accepted[],
  dimensions: DimensionDeltas,
  counts: CoverageDeltas,
): Promise<void> {
  const perVm = new Map<string, { record: LifecycleRecord; count: number; first: string; last: string }>();
  for (const { record } of inserted) {
    const time = new Date(record.time).toISOString();
    const entry = perVm.get(record.source);
    if (entry === undefined) perVm.set(record.source, { record, count: 1, first: time, last: time });
    else {
      entry.count++;
      if (time < entry.first) entry.first = time;
      if (time >= entry.last) {
        entry.last = time;
        entry.record = record;
      }
    }
  }
  const sources = [...perVm.keys()].sort();
  if (sources.length === 0) return;
  // Under the VMs' locks (vmLockKeys), so two transactions upserting the same VM count it once.
  const stored = new Map<string, { location: string; zone: string; scaleSet: string; vmName: string }>();
  for (let i = 0; i < sources.length; i += 500) {
    const chunk = sources.slice(i, i + 500);
    for (const row of await tx.all(
      `SELECT source, location, zone, scale_set, vm_name FROM vms
       WHERE source IN (${chunk.map(() => '?').join(', ')})`,
      chunk,
    ))
      stored.set(String(row.source), {
        location: String(row.location),
        zone: String(row.zone),
        scaleSet: String(row.scale_set),
        vmName: String(row.vm_name),
      });
  }
  const heard = await sourcesWithHeartbeat(tx, sources);
  // One statement per chunk of VMs (in source order, like their locks), not one per VM. A VM whose stored name
  // is its record's keeps it out of the update, so its vms_by_name entry is not rewritten (SQLite rewrites an index
  // entry whenever an update sets one of its columns, even to the value it holds: docs/fleet.md, Sizing).
  const now = new Map<string, { location: string; zone: string; scaleSet: string }>();
  const named: string[] = [];
  const newOrRenamed: string[] = [];
  for (const source of sources)
    (stored.get(source)?.vmName === (perVm.get(source)!.record.data.vm.name ?? '')
      ? named
      : newOrRenamed
    ).push(source);
  for (const [chunk, keepsName] of [
    ...chunksOf(named, VM_CHUNK).map((c) => [c, true] as const),
    ...chunksOf(newOrRenamed, VM_CHUNK).map((c) => [c, false] as const),
  ]) {
    const params: SqlValue[] = [];
    for (const source of chunk) {
      const { record, count, first, last } = perVm.get(source)!;
      const vm = record.data.vm;
      params.push(
        source,
        vm.name ?? '',
        vm.vmId || record.vmid || '',
        vm.location ?? '',
        vm.zone ?? '',
        vm.vmScaleSetName ?? '',
        count,
        first,
        last,
      );
    }
    const rows = await tx.all(
      `INSERT INTO vms (source, vm_name, vm_id, location, zone, scale_set, records, first_record_at, last_record_at)
       VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT (source) DO UPDATE SET
         records = vms.records + excluded.records,
         first_record_at = CASE WHEN excluded.first_record_at < vms.first_record_at
           THEN excluded.first_record_at ELSE vms.first_record_at END,
         ${keepsName ? '' : 'vm_name = CASE WHEN excluded.last_record_at >= vms.last_record_at THEN excluded.vm_name ELSE vms.vm_name END,'}
         vm_id = CASE WHEN excluded.last_record_at >= vms.last_record_at THEN excluded.vm_id ELSE vms.vm_id END,
         location = CASE WHEN excluded.last_record_at >= vms.last_record_at THEN excluded.location ELSE vms.location END,
         zone = CASE WHEN excluded.last_record_at >= vms.last_record_at THEN excluded.zone ELSE vms.zone END,
         scale_set = CASE WHEN excluded.last_record_at >= vms.last_record_at
           THEN excluded.scale_set ELSE vms.scale_set END,
         last_record_at = CASE WHEN excluded.last_record_at > vms.last_record_at
           THEN excluded.last_record_at ELSE vms.last_record_at END
       RETURNING source, location, zone, scale_set`,
      params,
    );
    for (const row of rows)
      now.set(String(row.source), {
        location: String(row.location),
        zone: String(row.zone),
        scaleSet: String(row.scale_set),
      });
  }
  for (const source of sources) {
    const old = stored.get(source);
    const row = now.get(source);
    if (old !== undefined) dimensions.vm(old, -1);
    if (row !== undefined) dimensions.vm(row, 1);
    // A VM without a heartbeat is counted by its row's region, zone and scale set (coverage-counts.ts).
    if (!heard.has(source)) {
      if (old !== undefined) counts.none(old, -1);
      if (row !== undefined) counts.none(row, 1);
    }
  }
}

/** VMs upserted per statement (9 parameters each). */
const VM_CHUNK = 200;

/** `items` in slices of `size`, in order. */
function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The lock keys of the VMs a batch writes (its records' and heartbeats'), sorted; prune takes the same. */
function vmLockKeys(inserted: readonly Accepted[], heartbeats: readonly IngestedHeartbeat[]): string[] {
  const sources = new Set<string>();
  for (const { record } of inserted) sources.add(record.source);
  for (const { heartbeat } of heartbeats) sources.add(heartbeat.source);
  return vmLocks([...sources]);
}

/** Which of `sources` have a latest heartbeat. */
async function sourcesWithHeartbeat(tx: SqlExecutor, sources: readonly string[]): Promise<Set<string>> {
  const heard = new Set<string>();
  for (let i = 0; i < sources.length; i += 500) {
    const chunk = sources.slice(i, i + 500);
    for (const row of await tx.all(
      `SELECT source FROM latest_heartbeats WHERE source IN (${chunk.map(() => '?').join(', ')})`,
      chunk,
    ))
      heard.add(String(row.source));
  }
  return heard;
}

async function bumpStats(
  tx: SqlExecutor,
  partition: string,
  result: IngestResult,
  received: number,
): Promise<void> {
  const counters = (
    [
      ['received', received],
      ['accepted', result.accepted],
      ['duplicates', result.duplicates],
      ['rejected', result.rejected],
      ['heartbeats', result.heartbeats],
    ] as const
  ).filter(([, value]) => value !== 0);
  if (counters.length === 0) return;
  // One statement, on the partition's own rows (kept per partition, so no other consumer waits on them).
  await tx.run(
    `INSERT INTO ingest_stats (partition_id, name, value) VALUES ${counters.map(() => '(?, ?, ?)').join(', ')}
     ON CONFLICT (partition_id, name) DO UPDATE SET value = ingest_stats.value + excluded.value`,
    counters.flatMap(([name, value]) => [partition, name, value]),
  );
}

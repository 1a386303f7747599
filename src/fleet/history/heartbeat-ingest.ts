/**
 * The write side of coverage (docs/fleet.md, Coverage), inside ingest's one transaction (ingest.ts):
 *
 * - heartbeats are not history rows: each VM keeps only its latest (`latest_heartbeats`, one row per VM; a
 *   heartbeat older than the stored one changes nothing), and each UTC day it sent one in `coverage_days` (the
 *   hours of the day as a 24-bit mask, the unhealthy hours as another: a re-delivered heartbeat ORs in the same
 *   bits, so ingest stays idempotent);
 * - `partition_progress`: how far each partition was read (the newest enqueue time ingested, or the time the
 *   consumer last found it caught up), so that a lagging consumer never makes a VM look silent;
 * - `vms.deleted_at`: when Preempt/Terminate started on a VM (the fold's vmDeleted), so a VM Azure deleted
 *   stops counting as silent.
 *
 * Whether a heartbeat says its forwarder is unhealthy is decided once, here (heartbeatProblems of the domain,
 * with the history's backlog threshold), and stored with it.
 */
import { type HeartbeatRecord, heartbeatProblems } from '../../domain/index.ts';
import type { SqlExecutor, SqlValue } from './sql.ts';

/** One valid heartbeat and where it came from. */
export interface IngestedHeartbeat {
  heartbeat: HeartbeatRecord;
  partitionId: string;
  enqueuedAt: Date;
}

/** Heartbeat rows per statement (26 parameters each). */
const CHUNK = 200;
const HOUR_MS = 3_600_000;

/**
 * Keeps the newest heartbeat of each VM of the batch (by enqueue time, then the heartbeat's own time and
 * sequence) and each VM's hours per day. Returns how many heartbeats the batch held.
 */
export async function ingestHeartbeats(
  tx: SqlExecutor,
  heartbeats: readonly IngestedHeartbeat[],
  backlogSeconds: number,
): Promise<void> {
  if (heartbeats.length === 0) return;
  const newest = new Map<string, IngestedHeartbeat & { problems: string }>();
  const days = new Map<string, CoverageDayRow>();
  for (const h of heartbeats) {
    const problems = heartbeatProblems(h.heartbeat.data, { backlogSeconds });
    const source = h.heartbeat.source;
    const iso = h.enqueuedAt.toISOString();
    const day = iso.slice(0, 10);
    const bit = 2 ** Math.floor((h.enqueuedAt.getTime() % (24 * HOUR_MS)) / HOUR_MS);
    const key = `${source}\u0000${day}`;
    const entry = days.get(key) ?? { source, day, hours: 0, unhealthy: 0 };
    entry.hours |= bit;
    if (problems.length > 0) entry.unhealthy |= bit;
    days.set(key, entry);
    const current = newest.get(source);
    if (current === undefined || newer(h, current))
      newest.set(source, { ...h, problems: JSON.stringify(problems) });
  }
  const rows = [...newest.values()].sort((a, b) => cmp(a.heartbeat.source, b.heartbeat.source));
  for (let i = 0; i < rows.length; i += CHUNK) await upsertLatest(tx, rows.slice(i, i + CHUNK));
  await upsertCoverageDays(
    tx,
    [...days.values()].sort((a, b) => cmp(a.source, b.source) || cmp(a.day, b.day)),
  );
}

/** A VM's day of coverage: the hours (bit h = UTC hour h) with a heartbeat, and those with an unhealthy one. */
export interface CoverageDayRow {
  source: string;
  day: string;
  hours: number;
  unhealthy: number;
}

/** ORs the rows' hours into coverage_days (idempotent; also `fleet migrate`'s copy). */
export async function upsertCoverageDays(tx: SqlExecutor, rows: readonly CoverageDayRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    await tx.run(
      `INSERT INTO coverage_days (source, day, hours, unhealthy_hours)
       VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
       ON CONFLICT (source, day) DO UPDATE SET hours = coverage_days.hours | excluded.hours,
         unhealthy_hours = coverage_days.unhealthy_hours | excluded.unhealthy_hours`,
      chunk.flatMap((d) => [d.source, d.day, d.hours, d.unhealthy]),
    );
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** `a` is newer than `b` (same VM). */
function newer(a: IngestedHeartbeat, b: IngestedHeartbeat): boolean {
  const t = a.enqueuedAt.getTime() - b.enqueuedAt.getTime();
  if (t !== 0) return t > 0;
  const sent = Date.parse(a.heartbeat.time) - Date.parse(b.heartbeat.time);
  if (sent !== 0) return sent > 0;
  return a.heartbeat.data.sequence > b.heartbeat.data.sequence;
}

const LATEST_COLUMNS = [
  'source',
  'vm_name',
  'vm_id',
  'location',
  'zone',
  'scale_set',
  'resource_group',
  'subscription_id',
  'node_name',
  'version',
  'config_digest',
  'id',
  'trigger',
  'sequence',
  'interval_seconds',
  'started_at',
  'sent_at',
  'enqueued_at',
  'enqueued_ms',
  'partition_id',
  'imds_ok',
  'last_poll_at',
  'problems',
  'unhealthy',
  'first_heartbeat_at',
  'body',
] as const;

function latestRow(h: IngestedHeartbeat & { problems: string }): SqlValue[] {
  const { heartbeat: b } = h;
  const d = b.data;
  const vm = d.vm;
  const iso = (t: string) => new Date(t).toISOString();
  return [
    b.source,
    vm.name ?? '',
    vm.vmId || b.vmid || '',
    vm.location ?? '',
    vm.zone ?? '',
    vm.vmScaleSetName ?? '',
    vm.resourceGroup ?? '',
    vm.subscriptionId ?? '',
    d.kubernetes?.nodeName ?? null,
    d.forwarder.version,
    d.forwarder.configDigest,
    b.id,
    d.trigger,
    d.sequence,
    d.intervalSeconds,
    iso(d.forwarder.startedAt),
    iso(b.time),
    h.enqueuedAt.toISOString(),
    h.enqueuedAt.getTime(),
    h.partitionId,
    d.imds.ok ? 1 : 0,
    d.imds.lastSuccessAt ? iso(d.imds.lastSuccessAt) : null,
    h.problems,
    h.problems === '[]' ? 0 : 1,
    h.enqueuedAt.toISOString(),
    JSON.stringify(b),
  ];
}

/** Upserts the newest heartbeat of each VM; an older one than the stored changes nothing. */
async function upsertLatest(
  tx: SqlExecutor,
  rows: ReadonlyArray<IngestedHeartbeat & { problems: string }>,
): Promise<void> {
  const updates = LATEST_COLUMNS.filter((c) => c !== 'source' && c !== 'first_heartbeat_at').map(
    (c) => `${c} = excluded.${c}`,
  );
  await tx.run(
    `INSERT INTO latest_heartbeats (${LATEST_COLUMNS.join(', ')})
     VALUES ${rows.map(() => `(${LATEST_COLUMNS.map(() => '?').join(', ')})`).join(', ')}
     ON CONFLICT (source) DO UPDATE SET ${updates.join(', ')}
     WHERE excluded.enqueued_ms > latest_heartbeats.enqueued_ms
       OR (excluded.enqueued_ms = latest_heartbeats.enqueued_ms AND (excluded.sent_at > latest_heartbeats.sent_at
         OR (excluded.sent_at = latest_heartbeats.sent_at AND excluded.sequence > latest_heartbeats.sequence)))`,
    rows.flatMap(latestRow),
  );
}

/** Moves each partition's read-through mark forward to `atMs` (never back). */
export async function advanceReadThrough(tx: SqlExecutor, marks: ReadonlyMap<string, number>): Promise<void> {
  for (const partitionId of [...marks.keys()].sort()) {
    await tx.run(
      `INSERT INTO partition_progress (partition_id, read_through_ms) VALUES (?, ?)
       ON CONFLICT (partition_id) DO UPDATE SET read_through_ms = excluded.read_through_ms
       WHERE excluded.read_through_ms > partition_progress.read_through_ms`,
      [partitionId, marks.get(partitionId)!],
    );
  }
}

/** Records that Preempt/Terminate started on these VMs (the latest start per VM wins). */
export async function markDeletions(tx: SqlExecutor, deletions: ReadonlyMap<string, string>): Promise<void> {
  for (const source of [...deletions.keys()].sort()) {
    const at = deletions.get(source)!;
    await tx.run(
      'UPDATE vms SET deleted_at = ? WHERE source = ? AND (deleted_at IS NULL OR deleted_at < ?)',
      [at, source, at],
    );
  }
}

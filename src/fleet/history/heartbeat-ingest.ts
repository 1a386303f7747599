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
 *   stops counting as silent (its latest heartbeat, when sent before, is marked `deleted`);
 * - the coverage counts (coverage-counts.ts), as each latest row changes its counted state or dimensions: a
 *   heartbeat replacing a VM's latest is counted by what it said (the sweep of coverage-changes.ts moves it to
 *   silent or gone when the clock does).
 *
 * Prune's step for VMs and their latest heartbeats (pruneQuietVms) lives here too: it keeps the same counts.
 *
 * Whether a heartbeat says its forwarder is unhealthy is decided once, here (heartbeatProblems of the domain,
 * with the history's backlog threshold), and stored with it.
 */
import { type HeartbeatRecord, heartbeatProblems } from '../../domain/index.ts';
import {
  type CountedState,
  type CountedVm,
  CoverageDeltas,
  countedVm,
  saidState,
} from './coverage-counts.ts';
import { markStale } from './coverage-rollups.ts';
import { DimensionDeltas } from './dimensions.ts';
import type { SqlExecutor, SqlValue } from './sql.ts';

/** One valid heartbeat and where it came from. */
export interface IngestedHeartbeat {
  heartbeat: HeartbeatRecord;
  partitionId: string;
  enqueuedAt: Date;
}

/** Heartbeat rows per statement (27 parameters each). */
const CHUNK = 200;
const HOUR_MS = 3_600_000;

/**
 * Keeps the newest heartbeat of each VM of the batch (by enqueue time, then the heartbeat's own time and
 * sequence) and each VM's hours per day, and the coverage counts (coverage-counts.ts) as the latest rows change.
 */
export async function ingestHeartbeats(
  tx: SqlExecutor,
  heartbeats: readonly IngestedHeartbeat[],
  backlogSeconds: number,
  counts: CoverageDeltas,
): Promise<void> {
  if (heartbeats.length === 0) return;
  const newest = new Map<string, LatestHeartbeat>();
  const days = new Map<string, CoverageDayRow & { at: number }>();
  for (const h of heartbeats) {
    const problems = heartbeatProblems(h.heartbeat.data, { backlogSeconds });
    const source = h.heartbeat.source;
    const iso = h.enqueuedAt.toISOString();
    const day = iso.slice(0, 10);
    const bit = 2 ** Math.floor((h.enqueuedAt.getTime() % (24 * HOUR_MS)) / HOUR_MS);
    const key = `${source}\u0000${day}`;
    const vm = h.heartbeat.data.vm;
    const dims = { location: vm.location ?? '', zone: vm.zone ?? '', scaleSet: vm.vmScaleSetName ?? '' };
    const entry = days.get(key) ?? {
      source,
      day,
      hours: 0,
      unhealthy: 0,
      ...dims,
      at: h.enqueuedAt.getTime(),
    };
    entry.hours |= bit;
    if (problems.length > 0) entry.unhealthy |= bit;
    // The day's region, zone and scale set: those of the batch's last heartbeat that day.
    if (h.enqueuedAt.getTime() >= entry.at) Object.assign(entry, dims, { at: h.enqueuedAt.getTime() });
    days.set(key, entry);
    const current = newest.get(source);
    if (current === undefined || newer(h, current))
      newest.set(source, { ...h, problems: JSON.stringify(problems), deleted: false });
  }
  const rows = await replacingLatest(
    tx,
    [...newest.values()].sort((a, b) => cmp(a.heartbeat.source, b.heartbeat.source)),
    counts,
  );
  // A VM whose name and counted state stay as stored keeps its entry of latest_heartbeats_by_state_name: SQLite
  // rewrites an index entry whenever the UPDATE sets one of its columns, even to the same value, so those rows
  // leave the two columns out (at 1,000 VMs that index took 1,069 of the 3,767 WAL frames of a slice of
  // heartbeats).
  for (const same of [true, false]) {
    const group = rows.filter((row) => row.sameNameAndState === same);
    for (let i = 0; i < group.length; i += CHUNK) await upsertLatest(tx, group.slice(i, i + CHUNK), same);
  }
  await upsertCoverageDays(
    tx,
    [...days.values()]
      .map(({ at: _at, ...day }) => day)
      .sort((a, b) => cmp(a.source, b.source) || cmp(a.day, b.day)),
  );
}

type LatestHeartbeat = IngestedHeartbeat & {
  problems: string;
  deleted: boolean;
  /** The stored row has this heartbeat's VM name and counted state already (replacingLatest). */
  sameNameAndState?: boolean;
};

/** The advisory lock keys of these VMs (CloudEvent sources), sorted: ingest and prune lock a VM's rows by them. */
export function vmLocks(sources: readonly string[]): string[] {
  return [...new Set(sources)].sort().map((source) => `vm:${source}`);
}

/**
 * The batch's newest heartbeats that replace their VM's stored one (all, for a VM's first), each with whether
 * Azure deleted the VM after it; their changes to the coverage counts go to `counts`. Under the VMs' locks
 * (vmLocks, taken by ingestBatch), so two transactions never count the same change.
 */
async function replacingLatest(
  tx: SqlExecutor,
  rows: readonly LatestHeartbeat[],
  counts: CoverageDeltas,
): Promise<LatestHeartbeat[]> {
  const sources = rows.map((r) => r.heartbeat.source);
  const stored = new Map<string, Record<string, unknown>>();
  const vms = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < sources.length; i += 500) {
    const chunk = sources.slice(i, i + 500);
    const marks = chunk.map(() => '?').join(', ');
    for (const row of await tx.all(
      `SELECT source, vm_name, location, zone, scale_set, version, interval_seconds, counted_state, enqueued_ms,
         sent_at, sequence FROM latest_heartbeats WHERE source IN (${marks})`,
      chunk,
    ))
      stored.set(String(row.source), row);
    for (const row of await tx.all(
      `SELECT source, location, zone, scale_set, deleted_at FROM vms WHERE source IN (${marks})`,
      chunk,
    ))
      vms.set(String(row.source), row);
  }
  const out: LatestHeartbeat[] = [];
  for (const row of rows) {
    const source = row.heartbeat.source;
    const old = stored.get(source);
    if (old !== undefined && !replaces(row, old)) continue;
    const vm = vms.get(source);
    const deletedAt = vm?.deleted_at;
    const sentAt = new Date(row.heartbeat.time).toISOString();
    const deleted = deletedAt !== null && deletedAt !== undefined && String(deletedAt) > sentAt;
    const state = saidState({ deleted, unhealthy: row.problems !== '[]' });
    const replacing = {
      ...row,
      deleted,
      sameNameAndState:
        old !== undefined &&
        String(old.vm_name) === (row.heartbeat.data.vm.name ?? '') &&
        String(old.counted_state) === state,
    };
    if (old !== undefined) counts.add(String(old.counted_state) as CountedState, countedVm(old), -1);
    else if (vm !== undefined)
      counts.none(
        { location: String(vm.location), zone: String(vm.zone), scaleSet: String(vm.scale_set) },
        -1,
      );
    counts.add(state, countedOf(row), 1);
    out.push(replacing);
  }
  return out;
}

/** `h` replaces the stored latest row `old` (the upsert's WHERE, in the same order). */
function replaces(h: LatestHeartbeat, old: Record<string, unknown>): boolean {
  const t = h.enqueuedAt.getTime() - Number(old.enqueued_ms);
  if (t !== 0) return t > 0;
  const sentAt = new Date(h.heartbeat.time).toISOString();
  const stored = String(old.sent_at);
  if (sentAt !== stored) return sentAt > stored;
  return h.heartbeat.data.sequence > Number(old.sequence);
}

function countedOf(h: IngestedHeartbeat): CountedVm {
  const vm = h.heartbeat.data.vm;
  return {
    location: vm.location ?? '',
    zone: vm.zone ?? '',
    scaleSet: vm.vmScaleSetName ?? '',
    version: h.heartbeat.data.forwarder.version,
    intervalSeconds: h.heartbeat.data.intervalSeconds,
  };
}

/**
 * A VM's day of coverage: the hours (bit h = UTC hour h) with a heartbeat, and those with an unhealthy one; the
 * region, zone and scale set its heartbeats stated that day (the last ingested).
 */
export interface CoverageDayRow {
  source: string;
  day: string;
  hours: number;
  unhealthy: number;
  location: string;
  zone: string;
  scaleSet: string;
}

/**
 * ORs the rows' hours into coverage_days (idempotent; also `fleet migrate`'s copy), and marks stale the covered
 * VMs' rollups of each day that gains a VM or whose VM moved (coverage-rollups.ts).
 */
export async function upsertCoverageDays(tx: SqlExecutor, rows: readonly CoverageDayRow[]): Promise<void> {
  const changed = new Set<number>();
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const stored = new Map<string, string>();
    const sources = [...new Set(chunk.map((d) => d.source))];
    const dayList = [...new Set(chunk.map((d) => d.day))];
    for (const row of await tx.all(
      `SELECT source, day, location, zone, scale_set FROM coverage_days
       WHERE source IN (${sources.map(() => '?').join(', ')}) AND day IN (${dayList.map(() => '?').join(', ')})`,
      [...sources, ...dayList],
    ))
      stored.set(`${row.source}\u0000${row.day}`, `${row.location}\u0000${row.zone}\u0000${row.scale_set}`);
    for (const d of chunk)
      if (stored.get(`${d.source}\u0000${d.day}`) !== `${d.location}\u0000${d.zone}\u0000${d.scaleSet}`)
        changed.add(Date.parse(`${d.day}T00:00:00Z`) / (24 * HOUR_MS));
    await tx.run(
      `INSERT INTO coverage_days (source, day, hours, unhealthy_hours, location, zone, scale_set)
       VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT (source, day) DO UPDATE SET hours = coverage_days.hours | excluded.hours,
         unhealthy_hours = coverage_days.unhealthy_hours | excluded.unhealthy_hours,
         location = excluded.location, zone = excluded.zone, scale_set = excluded.scale_set`,
      chunk.flatMap((d) => [d.source, d.day, d.hours, d.unhealthy, d.location, d.zone, d.scaleSet]),
    );
  }
  await markStale(
    tx,
    [...changed].sort((a, b) => a - b),
  );
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
  'deleted',
  'counted_state',
] as const;

function latestRow(h: LatestHeartbeat): SqlValue[] {
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
    h.deleted ? 1 : 0,
    saidState({ deleted: h.deleted, unhealthy: h.problems !== '[]' }),
  ];
}

/**
 * Upserts the newest heartbeat of each VM; an older one than the stored changes nothing. With `sameNameAndState`
 * the update leaves vm_name and counted_state as stored (the rows' values are the same).
 */
async function upsertLatest(
  tx: SqlExecutor,
  rows: readonly LatestHeartbeat[],
  sameNameAndState: boolean,
): Promise<void> {
  const kept = new Set<string>(['source', 'first_heartbeat_at']);
  if (sameNameAndState) for (const c of ['vm_name', 'counted_state']) kept.add(c);
  const updates = LATEST_COLUMNS.filter((c) => !kept.has(c)).map((c) => `${c} = excluded.${c}`);
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

/**
 * Records that Preempt/Terminate started on these VMs (the latest start per VM wins); a VM's latest heartbeat
 * sent before that counts as gone from then on (`counts`).
 */
export async function markDeletions(
  tx: SqlExecutor,
  deletions: ReadonlyMap<string, string>,
  counts: CoverageDeltas,
): Promise<void> {
  const sources = [...deletions.keys()].sort();
  // A chunk of VMs per statement (in source order, like their locks): each VM's start as `CASE source WHEN …`.
  for (let i = 0; i < sources.length; i += DELETIONS_CHUNK) {
    const chunk = sources.slice(i, i + DELETIONS_CHUNK);
    const at = `CASE source ${chunk.map(() => 'WHEN ? THEN ?').join(' ')} END`;
    const atParams = chunk.flatMap((source) => [source, deletions.get(source)!]);
    const inList = chunk.map(() => '?').join(', ');
    await tx.run(
      `UPDATE vms SET deleted_at = ${at} WHERE source IN (${inList}) AND (deleted_at IS NULL OR deleted_at < ${at})`,
      [...atParams, ...chunk, ...atParams],
    );
    // Read, then marked (under the VMs' locks): the count leaves the state the row was counted in.
    const rows = await tx.all(
      `SELECT source, location, zone, scale_set, version, interval_seconds, counted_state FROM latest_heartbeats
       WHERE source IN (${inList}) AND deleted = 0 AND sent_at < ${at}`,
      [...chunk, ...atParams],
    );
    if (rows.length === 0) continue;
    await tx.run(
      `UPDATE latest_heartbeats SET deleted = 1, counted_state = 'gone' WHERE source IN (${rows.map(() => '?').join(', ')})`,
      rows.map((row) => String(row.source)),
    );
    for (const row of rows) {
      const vm = countedVm(row);
      counts.add(String(row.counted_state) as CountedState, vm, -1);
      counts.add('gone', vm, 1);
    }
  }
}

/** VMs marked deleted per statement (5 parameters each). */
const DELETIONS_CHUNK = 200;

/** What one pruneQuietVms step removed; `done` once nothing older than the cutoff is left. */
export interface PrunedVms {
  vms: number;
  heartbeats: number;
  done: boolean;
}

/**
 * One step of prune (in its own transaction): up to `limit` VMs whose newest record is older than `before`
 * (their vms rows) and up to `limit` latest heartbeats enqueued before it, under the VMs' locks (vmLocks, as
 * ingest takes them), so a VM ingest touches meanwhile is counted once. A heartbeat of a VM Azure deleted
 * (`deleted`) goes with its vms row: that VM is forgotten, not left counted as gone by a deletion nothing
 * records any more. Keeps the dimension counts (the vms rows' region, zone and scale set) and the coverage
 * counts: deleted heartbeats leave their counted state; a VM whose heartbeat went while its vms row stays counts
 * as without a heartbeat; a vms row deleted without a heartbeat leaves that count.
 */
export async function pruneQuietVms(tx: SqlExecutor, before: Date, limit: number): Promise<PrunedVms> {
  const [oldVms, oldBeats] = await Promise.all([
    tx.all('SELECT source FROM vms WHERE last_record_at < ? LIMIT ?', [before.toISOString(), limit]),
    tx.all('SELECT source FROM latest_heartbeats WHERE enqueued_ms < ? ORDER BY enqueued_ms LIMIT ?', [
      before.getTime(),
      limit,
    ]),
  ]);
  const done = oldVms.length < limit && oldBeats.length < limit;
  const sources = [...new Set([...oldVms, ...oldBeats].map((row) => String(row.source)))].sort();
  if (sources.length === 0) return { vms: 0, heartbeats: 0, done };
  await tx.lockKeys(vmLocks(sources));
  const dimensions = new DimensionDeltas();
  const counts = new CoverageDeltas();
  const dims = (row: Record<string, unknown>) => ({
    location: String(row.location),
    zone: String(row.zone),
    scaleSet: String(row.scale_set),
  });
  const marks = sources.map(() => '?').join(', ');
  // Read again under the locks: what ingest changed meanwhile decides.
  const vms = await tx.all(
    `DELETE FROM vms WHERE source IN (${marks}) AND last_record_at < ? RETURNING source, location, zone, scale_set`,
    [...sources, before.toISOString()],
  );
  const prunedVms = [...new Set(vms.map((row) => String(row.source)))];
  const gone =
    prunedVms.length === 0 ? '' : `OR (deleted = 1 AND source IN (${prunedVms.map(() => '?').join(', ')}))`;
  const beats = await tx.all(
    `DELETE FROM latest_heartbeats WHERE source IN (${marks}) AND (enqueued_ms < ? ${gone})
     RETURNING source, location, zone, scale_set, version, interval_seconds, counted_state`,
    [...sources, before.getTime(), ...prunedVms],
  );
  const prunedBeats = new Set(beats.map((row) => String(row.source)));
  for (const row of beats) counts.add(String(row.counted_state) as CountedState, countedVm(row), -1);
  for (const vm of vms) dimensions.vm(dims(vm), -1);
  const remaining = new Map<string, Record<string, unknown>>();
  const heard = new Set<string>();
  for (const row of await tx.all(
    `SELECT source, location, zone, scale_set FROM vms WHERE source IN (${marks})`,
    sources,
  ))
    remaining.set(String(row.source), row);
  for (const row of await tx.all(`SELECT source FROM latest_heartbeats WHERE source IN (${marks})`, sources))
    heard.add(String(row.source));
  for (const source of prunedBeats) {
    const vm = remaining.get(source);
    if (vm !== undefined) counts.none(dims(vm), 1);
  }
  // A vms row that went while its VM had no heartbeat (before this step either) leaves the "none" count.
  for (const vm of vms) {
    const source = String(vm.source);
    if (!heard.has(source) && !prunedBeats.has(source)) counts.none(dims(vm), -1);
  }
  await dimensions.write(tx, '*');
  await counts.write(tx, '*');
  return { vms: vms.length, heartbeats: beats.length, done };
}

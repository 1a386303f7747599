/**
 * The VMs whose coverage state differs from the state the counts hold them in (coverage-counts.ts), and the
 * sweep that moves them into the counts.
 *
 * A VM's state depends on the clock: quiet for longer than its interval plus the margin it is silent, longer
 * than `goneAfterSeconds` gone, "quiet" measured up to how far its partition was read, never beyond now
 * (coverage.ts). Ingest counts each heartbeat by what it said; the sweep (sweepCoverage, with the rollup
 * refresh) moves the VMs whose state changed since into their state now. What changed after the last sweep is
 * found by index ranges (latest_heartbeats_changes: counted state, partition, interval, enqueue time): per
 * partition and interval in use,
 *
 * - counted reporting or unhealthy, enqueued before the partition's read-through minus min(interval + margin,
 *   gone): now silent or gone;
 * - counted silent, enqueued before read-through − gone (now gone) or since read-through − (interval + margin)
 *   (quiet again: a clock or read-through behind the sweep's, or a larger margin);
 * - counted gone but not deleted, enqueued since read-through − gone (a clock behind, or a longer goneAfter).
 *
 * So a reader moves only the VMs whose state changed since the last sweep (bounded by the sweep's cadence, not by
 * the fleet), and is exact at any clock and setting, swept or not. A VM Azure deleted is counted gone by ingest
 * and never changes.
 */
import {
  type CountedState,
  CoverageDeltas,
  countedVm,
  DimensionCountDeltas,
  STATE_COLUMNS,
} from './coverage-counts.ts';
import { vmLocks } from './heartbeat-ingest.ts';
import { unfoldedRows } from './partition-counts.ts';
import { type SqlExecutor, type SqlValue, toNumber } from './sql.ts';

/** The thresholds a state depends on (coverage.ts CoverageSettings). */
export interface QuietThresholds {
  silentMarginSeconds: number;
  goneAfterSeconds: number;
}

/** A SQL fragment and its parameters, in order. */
export interface Fragment {
  sql: string;
  params: SqlValue[];
}

/** How far each partition was read (ms), and now: a VM's quiet time runs up to the lesser. */
export interface CoverageClock {
  nowMs: number;
  readThrough: ReadonlyArray<{ partitionId: string; readThroughMs: number }>;
}

export async function coverageClock(db: SqlExecutor, now: Date): Promise<CoverageClock> {
  const rows = await db.all(
    'SELECT partition_id, read_through_ms FROM partition_progress ORDER BY partition_id',
  );
  return {
    nowMs: now.getTime(),
    readThrough: rows.map((r) => ({
      partitionId: String(r.partition_id),
      readThroughMs: toNumber(r.read_through_ms),
    })),
  };
}

/** Where a partition's VMs are measured up to: its read-through, never beyond now. */
const effectiveMs = (clock: CoverageClock, readThroughMs: number) => Math.min(clock.nowMs, readThroughMs);

/** What a read needs to find the VMs whose state changed: the clock and the intervals counted. */
export interface ChangeReading {
  clock: CoverageClock;
  intervals: readonly number[];
}

export async function changeReading(db: SqlExecutor, now: Date): Promise<ChangeReading> {
  const [clock, intervals] = await Promise.all([coverageClock(db, now), countedIntervals(db)]);
  return { clock, intervals };
}

/** A latest heartbeat's (`h.`) quiet time in ms, from the clock (a partition never read: up to now). */
export function quietSql(clock: CoverageClock): Fragment {
  if (clock.readThrough.length === 0)
    return { sql: `(CAST(? AS BIGINT) - h.enqueued_ms)`, params: [clock.nowMs] };
  return {
    sql: `(CASE h.partition_id ${clock.readThrough.map(() => 'WHEN ? THEN CAST(? AS BIGINT)').join(' ')}
      ELSE CAST(? AS BIGINT) END - h.enqueued_ms)`,
    params: [
      ...clock.readThrough.flatMap((p) => [p.partitionId, effectiveMs(clock, p.readThroughMs)]),
      clock.nowMs,
    ],
  };
}

/** A latest heartbeat's (`h.`) state, given its quiet time in ms (`quiet`). */
export function stateSql(quiet: Fragment, settings: QuietThresholds): Fragment {
  return {
    sql: `CASE WHEN h.deleted = 1 OR ${quiet.sql} > ? THEN 'gone'
      WHEN ${quiet.sql} > h.interval_seconds * 1000 + ? THEN 'silent'
      WHEN h.unhealthy = 1 THEN 'unhealthy' ELSE 'reporting' END`,
    params: [
      ...quiet.params,
      settings.goneAfterSeconds * 1000,
      ...quiet.params,
      settings.silentMarginSeconds * 1000,
    ],
  };
}

/**
 * The heartbeat intervals counted (the ranges to look in, for every counted state: a range of an interval not
 * counted in that state is empty, and a VM swept into it meanwhile is still looked for), from the counts per
 * interval (a row each, not one per combination of the other dimensions).
 */
export async function countedIntervals(db: SqlExecutor): Promise<number[]> {
  const heard = (['reporting', 'silent', 'unhealthy', 'gone'] as const)
    .map((s) => STATE_COLUMNS[s])
    .join(' + ');
  const rows = await db.all(
    `SELECT value FROM coverage_dimension_counts WHERE dimension = 'interval_seconds'
     GROUP BY value HAVING sum(${heard}) > 0`,
  );
  return rows.map((row) => Number(row.value)).sort((a, b) => a - b);
}

/**
 * The latest heartbeats (`h.`) counted in another state than theirs now, with `columns`, `quiet_ms` and `state`
 * (now): one index range of latest_heartbeats_changes per partition, interval and counted state (see the module
 * comment), listed as a VALUES table the heartbeats are joined to (one statement to plan, however many ranges),
 * narrowed by `where` (the report's scope, each condition preceded by AND). Undefined: no range to read.
 */
export function changedSelect(
  clock: CoverageClock,
  intervals: readonly number[],
  settings: QuietThresholds,
  columns: Fragment,
  where: Fragment = { sql: '', params: [] },
): Fragment | undefined {
  const goneMs = settings.goneAfterSeconds * 1000;
  const marginMs = settings.silentMarginSeconds * 1000;
  const unbounded = { from: Number.MIN_SAFE_INTEGER, before: Number.MAX_SAFE_INTEGER };
  // (counted state, partition, interval, from, before, the partition's effective now)
  const ranges: SqlValue[][] = [];
  for (const p of clock.readThrough) {
    const e = effectiveMs(clock, p.readThroughMs);
    for (const i of intervals) {
      const quietSaid = e - Math.min(i * 1000 + marginMs, goneMs);
      ranges.push(
        ['reporting', p.partitionId, i, unbounded.from, quietSaid, e],
        ['unhealthy', p.partitionId, i, unbounded.from, quietSaid, e],
        ['silent', p.partitionId, i, unbounded.from, e - goneMs, e],
        ['silent', p.partitionId, i, Math.max(e - i * 1000 - marginMs, e - goneMs), unbounded.before, e],
        ['gone', p.partitionId, i, e - goneMs, unbounded.before, e],
      );
    }
  }
  if (ranges.length === 0) return undefined;
  // The first row types the columns (PostgreSQL).
  const values = ranges
    .map((_, k) =>
      k === 0
        ? '(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))'
        : '(?, ?, ?, ?, ?, ?)',
    )
    .join(', ');
  const quiet: Fragment = { sql: '(r.column6 - h.enqueued_ms)', params: [] };
  const state = stateSql(quiet, settings);
  // CROSS JOIN: SQLite reads the ranges first (PostgreSQL plans it as any inner join).
  return {
    sql: `SELECT ${columns.sql}, ${quiet.sql} AS quiet_ms, ${state.sql} AS state
      FROM (VALUES ${values}) r CROSS JOIN latest_heartbeats h
      WHERE h.deleted = 0 AND h.counted_state = r.column1 AND h.partition_id = r.column2
        AND h.interval_seconds = r.column3 AND h.enqueued_ms >= r.column4 AND h.enqueued_ms < r.column5${where.sql}`,
    params: [...columns.params, ...state.params, ...ranges.flat(), ...where.params],
  };
}

/** The advisory lock of a sweep (PostgreSQL): one consumer sweeps at a time, the others skip. */
const SWEEP_LOCK = 'sef-coverage-sweep';

/** Takes the sweep's lock for this transaction; false when another consumer holds it (SQLite: one writer). */
async function sweepLock(tx: SqlExecutor): Promise<boolean> {
  if (tx.dialect === 'sqlite') return true;
  const [got] = await tx.all('SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0)) AS ok', [SWEEP_LOCK]);
  return got?.ok === true;
}

/**
 * Folds the counts' rows of the writing partitions into the shared ones ('*') and drops the rows that count
 * nothing, so a read scans about one row per region, zone, scale set, version, interval and state (and, per
 * dimension, one per version, region and scale set), not one per partition as well (with the deltas since the
 * last fold). The sum of every key stays what it was: a row is moved whole, in one transaction. PostgreSQL skips
 * the rows a consumer's transaction holds (they wait for the next fold), so ingest never waits for it. Returns
 * the rows folded.
 */
export async function foldCoverageCounts(tx: SqlExecutor): Promise<number> {
  if (!(await sweepLock(tx))) return 0;
  const key = 'state, location, zone, scale_set, version, interval_seconds';
  const folded = await tx.all(unfoldedRows(tx, 'coverage_counts', key, 'vms'));
  const counts = new CoverageDeltas();
  for (const row of folded) counts.add(String(row.state) as CountedState, countedVm(row), Number(row.vms));
  await counts.write(tx, '*', false);
  await tx.run("DELETE FROM coverage_counts WHERE partition_id = '*' AND vms = 0");
  const columns = Object.values(STATE_COLUMNS);
  const foldedByDimension = await tx.all(
    unfoldedRows(tx, 'coverage_dimension_counts', 'dimension, value', columns.join(', ')),
  );
  const byDimension = new DimensionCountDeltas();
  for (const row of foldedByDimension)
    for (const [state, column] of Object.entries(STATE_COLUMNS))
      byDimension.add(String(row.dimension), String(row.value), state as CountedState, Number(row[column]));
  await byDimension.write(tx, '*');
  await tx.run(
    `DELETE FROM coverage_dimension_counts WHERE partition_id = '*' AND ${columns.map((c) => `${c} = 0`).join(' AND ')}`,
  );
  return folded.length + foldedByDimension.length;
}

/**
 * One step of the sweep (in its own transaction): up to `limit` VMs whose state differs from the state they are
 * counted in are counted in their state now, under their locks (read again under them: what ingest changed
 * meanwhile decides). Returns how many VMs it found (fewer than `limit`: none left), 0 when another consumer
 * of the same PostgreSQL database is sweeping.
 */
export async function sweepCoverage(
  tx: SqlExecutor,
  now: Date,
  settings: QuietThresholds,
  limit: number,
): Promise<number> {
  if (!(await sweepLock(tx))) return 0;
  const clock = await coverageClock(tx, now);
  const changed = changedSelect(clock, await countedIntervals(tx), settings, { sql: 'h.source', params: [] });
  if (changed === undefined) return 0;
  const found = await tx.all(`SELECT source FROM (${changed.sql}) c LIMIT ?`, [...changed.params, limit]);
  if (found.length === 0) return 0;
  const sources = found.map((row) => String(row.source)).sort();
  await tx.lockKeys(vmLocks(sources));
  const state = stateSql(quietSql(clock), settings);
  const marks = sources.map(() => '?').join(', ');
  const rows = await tx.all(
    `SELECT h.source, h.location, h.zone, h.scale_set, h.version, h.interval_seconds, h.counted_state,
       ${state.sql} AS state FROM latest_heartbeats h WHERE h.source IN (${marks})`,
    [...state.params, ...sources],
  );
  const counts = new CoverageDeltas();
  const moved = new Map<CountedState, string[]>();
  for (const row of rows) {
    const from = String(row.counted_state) as CountedState;
    const to = String(row.state) as CountedState;
    if (from === to) continue;
    counts.add(from, countedVm(row), -1);
    counts.add(to, countedVm(row), 1);
    const list = moved.get(to) ?? [];
    list.push(String(row.source));
    moved.set(to, list);
  }
  for (const [to, list] of moved)
    for (let i = 0; i < list.length; i += 500) {
      const chunk = list.slice(i, i + 500);
      await tx.run(
        `UPDATE latest_heartbeats SET counted_state = ? WHERE source IN (${chunk.map(() => '?').join(', ')})`,
        [to, ...chunk],
      );
    }
  await counts.write(tx, '*');
  return found.length;
}

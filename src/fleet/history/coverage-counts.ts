/**
 * The coverage counts: how many VMs each region, zone, scale set, forwarder version and heartbeat interval has
 * in each state, so /api/coverage (coverage.ts) reads a table of a few hundred rows and only the VMs whose state
 * changed since they were counted, instead of every VM's latest heartbeat (issue 33: flat from N/10 to N).
 *
 * Each latest heartbeat row says which state the counts hold it in (`counted_state`):
 *
 * - ingest counts a heartbeat by what it said — `reporting` or `unhealthy` — or `gone` once Azure deleted the VM
 *   after it (latest_heartbeats.deleted, from vms.deleted_at); a VM with records but no heartbeat counts as
 *   `none` (with its vms row's region, zone and scale set; version '' and interval 0);
 * - what the clock adds — silent, or gone after a long quiet — is moved into the counts by the sweep
 *   (coverage-changes.ts, with the rollup refresh), which moves the VMs whose state differs from their counted
 *   one; a reader moves the few the last sweep left at read time, found by index ranges, so it is exact at any
 *   clock, read-through and setting whether the sweep ran or not.
 *
 * The same counts are also kept per dimension (`coverage_dimension_counts`: one row per forwarder version, region,
 * scale set and heartbeat interval, with a column per state), so a read of the whole fleet sums a row per value it lists instead of
 * a row per combination of region, zone, scale set, version and interval (which grows with the fleet: 678 rows at
 * 10,000 VMs of simulate fleet's shape, 75 at 1,000); a read narrowed by region, zone or scale set reads the
 * combinations within it (coverage.ts).
 *
 * Like the dimension counts (dimensions.ts), the counts are kept by the transactions that change what they count
 * (ingest: a heartbeat replacing the latest, a VM's first records, a deletion; the sweep; prune: what it
 * deletes), as signed deltas on rows of their own partition, so two consumers never wait on each other's counter
 * and the sum over partitions is exact; each changes a VM's row and its count under the VM's lock (vmLocks).
 */
import type { SqlExecutor, SqlValue } from './sql.ts';

/** The states a VM is counted in ('none': records but no heartbeat). */
export type CountedState = 'reporting' | 'unhealthy' | 'silent' | 'gone' | 'none';

/** The dimensions a count is kept by. */
export interface CountedVm {
  location: string;
  zone: string;
  scaleSet: string;
  version: string;
  intervalSeconds: number;
}

export const coverageCountTables = (): string[] => [
  `CREATE TABLE coverage_counts (
    state TEXT NOT NULL,
    location TEXT NOT NULL,
    zone TEXT NOT NULL,
    scale_set TEXT NOT NULL,
    version TEXT NOT NULL,
    interval_seconds INTEGER NOT NULL,
    partition_id TEXT NOT NULL,
    vms BIGINT NOT NULL,
    PRIMARY KEY (state, location, zone, scale_set, version, interval_seconds, partition_id)
  )`,
  'ALTER TABLE latest_heartbeats ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0',
  // The VMs that went quiet (per interval, oldest first) and the unhealthy ones by name.
  'CREATE INDEX latest_heartbeats_quiet ON latest_heartbeats (deleted, interval_seconds, partition_id, enqueued_ms)',
  'CREATE INDEX latest_heartbeats_unhealthy ON latest_heartbeats (unhealthy, deleted, vm_name, source)',
];

/**
 * The dimensions the whole fleet's counts are kept by (coverage_dimension_counts.dimension, the column of
 * coverage_counts): those /api/coverage reports, and the heartbeat intervals (the ranges a read looks in).
 */
export const REPORTED_DIMENSIONS = ['version', 'location', 'scale_set'] as const;
export const COUNTED_DIMENSIONS = [...REPORTED_DIMENSIONS, 'interval_seconds'] as const;
export type CountedDimension = (typeof COUNTED_DIMENSIONS)[number];
const DIMENSION_OF: Record<CountedDimension, keyof CountedVm> = {
  version: 'version',
  location: 'location',
  scale_set: 'scaleSet',
  interval_seconds: 'intervalSeconds',
};

/** coverage_dimension_counts' column of each counted state. */
export const STATE_COLUMNS: Record<CountedState, string> = {
  reporting: 'reporting',
  silent: 'silent',
  unhealthy: 'unhealthy',
  gone: 'gone',
  none: 'without_heartbeat',
};
const COUNTED_STATES = Object.keys(STATE_COLUMNS) as CountedState[];
const STATE_COLUMN_LIST = COUNTED_STATES.map((state) => STATE_COLUMNS[state]).join(', ');

/**
 * Schema step 9: the counts per dimension (the sums of coverage_counts over every other dimension), from the
 * counts already kept.
 */
export const coverageDimensionCountTables = (): string[] => [
  `CREATE TABLE coverage_dimension_counts (
    dimension TEXT NOT NULL,
    value TEXT NOT NULL,
    partition_id TEXT NOT NULL,
    ${COUNTED_STATES.map((state) => `${STATE_COLUMNS[state]} BIGINT NOT NULL`).join(',\n    ')},
    PRIMARY KEY (dimension, value, partition_id)
  )`,
  `INSERT INTO coverage_dimension_counts (dimension, value, partition_id, ${STATE_COLUMN_LIST})
   ${DIMENSION_SELECTS.join(' UNION ALL ')}`,
];

/**
 * The counts per dimension as coverage_counts holds them (partition '*'; the step-9 backfill, the tests'
 * oracle): one SELECT per dimension.
 */
export const DIMENSION_SELECTS: readonly string[] = COUNTED_DIMENSIONS.map(
  (dimension) =>
    `SELECT '${dimension}' AS dimension, CAST(${dimension} AS TEXT) AS value, '*' AS partition_id,
       ${COUNTED_STATES.map((state) => `sum(CASE WHEN state = '${state}' THEN vms ELSE 0 END) AS ${STATE_COLUMNS[state]}`).join(', ')}
     FROM coverage_counts GROUP BY ${dimension}
     HAVING ${COUNTED_STATES.map((state) => `sum(CASE WHEN state = '${state}' THEN vms ELSE 0 END) <> 0`).join(' OR ')}`,
);

/** The state ingest counts a latest heartbeat row in (columns deleted, unhealthy): what it said. */
const SAID_STATE_SQL = `CASE WHEN deleted = 1 THEN 'gone' WHEN unhealthy = 1 THEN 'unhealthy' ELSE 'reporting' END`;

/**
 * Schema step 8: each latest heartbeat says which state it is counted in (step 6 counted each by what it said),
 * with indexes for the sweep and the reader (the VMs counted in a state by partition, interval and age: the
 * ranges whose state may have changed) and for the lists (a state by age, by name), replacing step 6's two.
 */
export const countedStateColumn = (): string[] => [
  "ALTER TABLE latest_heartbeats ADD COLUMN counted_state TEXT NOT NULL DEFAULT 'reporting'",
  `UPDATE latest_heartbeats SET counted_state = ${SAID_STATE_SQL}`,
  'DROP INDEX latest_heartbeats_quiet',
  'DROP INDEX latest_heartbeats_unhealthy',
  `CREATE INDEX latest_heartbeats_changes
     ON latest_heartbeats (deleted, counted_state, partition_id, interval_seconds, enqueued_ms)`,
  'CREATE INDEX latest_heartbeats_by_state_age ON latest_heartbeats (counted_state, enqueued_ms, source)',
  'CREATE INDEX latest_heartbeats_by_state_name ON latest_heartbeats (counted_state, vm_name, source)',
];

/** The counts of an existing history (schema step 6, before the rows said their counted state). */
export const coverageCountBackfill = (): string[] => [
  `UPDATE latest_heartbeats SET deleted = 1 WHERE EXISTS (SELECT 1 FROM vms v WHERE v.source = latest_heartbeats.source
     AND v.deleted_at IS NOT NULL AND v.deleted_at > latest_heartbeats.sent_at)`,
  ...countedSelects(SAID_STATE_SQL).map(
    (select) =>
      `INSERT INTO coverage_counts (state, location, zone, scale_set, version, interval_seconds, partition_id, vms)
       ${select}`,
  ),
];

function countedSelects(state: string): string[] {
  return [
    `SELECT ${state} AS state, location, zone, scale_set, version, interval_seconds,
       '*' AS partition_id, count(*) AS vms
     FROM latest_heartbeats GROUP BY 1, location, zone, scale_set, version, interval_seconds`,
    `SELECT 'none' AS state, location, zone, scale_set, '' AS version, 0 AS interval_seconds,
       '*' AS partition_id, count(*) AS vms FROM vms v
     WHERE NOT EXISTS (SELECT 1 FROM latest_heartbeats h WHERE h.source = v.source)
     GROUP BY location, zone, scale_set`,
  ];
}

/** What the counts are, from the rows' counted states (the tests' oracle). */
export const COUNTED_SELECTS: readonly string[] = countedSelects('counted_state');

/** The state ingest counts a latest heartbeat in: what it said (the sweep adds silent and gone by the clock). */
export function saidState(row: { deleted: boolean; unhealthy: boolean }): CountedState {
  return row.deleted ? 'gone' : row.unhealthy ? 'unhealthy' : 'reporting';
}

/** Count changes of one transaction, written at once (sorted, so two writers lock rows in the same order). */
export class CoverageDeltas {
  readonly #deltas = new Map<string, { state: CountedState; vm: CountedVm; n: number }>();

  add(state: CountedState, vm: CountedVm, n: number): void {
    const key = [state, vm.location, vm.zone, vm.scaleSet, vm.version, vm.intervalSeconds].join('\u0000');
    const d = this.#deltas.get(key);
    if (d === undefined) this.#deltas.set(key, { state, vm, n });
    else d.n += n;
  }

  /** A VM with records and no heartbeat (its vms row's region, zone and scale set). */
  none(vm: { location: string; zone: string; scaleSet: string }, n: number): void {
    this.add('none', { ...vm, version: '', intervalSeconds: 0 }, n);
  }

  /**
   * Writes the changes to the counts (and, unless `byDimension` is false, to the counts per dimension, derived
   * from them) on `partition`'s rows, each table's rows in key order.
   */
  async write(tx: SqlExecutor, partition: string, byDimension = true): Promise<void> {
    const rows = inKeyOrder(this.#deltas, (d) => d.n !== 0);
    await addToCounts(
      tx,
      'coverage_counts',
      ['state', 'location', 'zone', 'scale_set', 'version', 'interval_seconds', 'partition_id'],
      ['vms'],
      rows.map((d) => [
        d.state,
        d.vm.location,
        d.vm.zone,
        d.vm.scaleSet,
        d.vm.version,
        d.vm.intervalSeconds,
        partition,
        d.n,
      ]),
    );
    if (!byDimension) return;
    const dimensions = new DimensionCountDeltas();
    for (const d of rows)
      for (const dimension of COUNTED_DIMENSIONS)
        dimensions.add(dimension, String(d.vm[DIMENSION_OF[dimension]]), d.state, d.n);
    await dimensions.write(tx, partition);
  }
}

/** Changes to the counts per dimension (coverage_dimension_counts), written at once in key order. */
export class DimensionCountDeltas {
  readonly #deltas = new Map<string, { dimension: string; value: string; n: Record<CountedState, number> }>();

  add(dimension: string, value: string, state: CountedState, n: number): void {
    const key = `${dimension}\u0000${value}`;
    let d = this.#deltas.get(key);
    if (d === undefined) {
      d = { dimension, value, n: { reporting: 0, silent: 0, unhealthy: 0, gone: 0, none: 0 } };
      this.#deltas.set(key, d);
    }
    d.n[state] += n;
  }

  async write(tx: SqlExecutor, partition: string): Promise<void> {
    const rows = inKeyOrder(this.#deltas, (d) => COUNTED_STATES.some((state) => d.n[state] !== 0));
    await addToCounts(
      tx,
      'coverage_dimension_counts',
      ['dimension', 'value', 'partition_id'],
      COUNTED_STATES.map((state) => STATE_COLUMNS[state]),
      rows.map((d) => [d.dimension, d.value, partition, ...COUNTED_STATES.map((state) => d.n[state])]),
    );
  }
}

/** The changes that change something, sorted by key (so two writers lock rows in the same order). */
function inKeyOrder<T>(deltas: ReadonlyMap<string, T>, changes: (d: T) => boolean): T[] {
  return [...deltas.entries()]
    .filter(([, d]) => changes(d))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, d]) => d);
}

/** Adds each row's `counts` to the row of its `key` in `table` (created at these counts), 100 rows a statement. */
async function addToCounts(
  tx: SqlExecutor,
  table: string,
  key: readonly string[],
  counts: readonly string[],
  rows: readonly SqlValue[][],
): Promise<void> {
  const marks = `(${[...key, ...counts].map(() => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows.slice(i, i + 100);
    await tx.run(
      `INSERT INTO ${table} (${[...key, ...counts].join(', ')})
       VALUES ${chunk.map(() => marks).join(', ')}
       ON CONFLICT (${key.join(', ')})
       DO UPDATE SET ${counts.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(', ')}`,
      chunk.flat(),
    );
  }
}

/** A row's counted dimensions (columns location, zone, scale_set, version, interval_seconds). */
export function countedVm(row: Record<string, unknown>): CountedVm {
  return {
    location: String(row.location ?? ''),
    zone: String(row.zone ?? ''),
    scaleSet: String(row.scale_set ?? ''),
    version: String(row.version ?? ''),
    intervalSeconds: Number(row.interval_seconds ?? 0),
  };
}

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

  async write(tx: SqlExecutor, partition: string): Promise<void> {
    const rows = [...this.#deltas.entries()]
      .filter(([, d]) => d.n !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, d]) => d);
    for (let i = 0; i < rows.length; i += 100) {
      const chunk = rows.slice(i, i + 100);
      const params: SqlValue[] = chunk.flatMap((d) => [
        d.state,
        d.vm.location,
        d.vm.zone,
        d.vm.scaleSet,
        d.vm.version,
        d.vm.intervalSeconds,
        partition,
        d.n,
      ]);
      await tx.run(
        `INSERT INTO coverage_counts (state, location, zone, scale_set, version, interval_seconds, partition_id, vms)
         VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
         ON CONFLICT (state, location, zone, scale_set, version, interval_seconds, partition_id)
         DO UPDATE SET vms = coverage_counts.vms + excluded.vms`,
        params,
      );
    }
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

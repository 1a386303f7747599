/**
 * The coverage counts: how many VMs each region, zone, scale set, forwarder version and heartbeat interval has
 * in each state that does not depend on the clock, so /api/coverage (coverage.ts) reads a table of a few hundred
 * rows and only the VMs that went quiet, instead of every VM's latest heartbeat (issue 33: flat from N/10 to N).
 *
 * A VM's latest heartbeat counts as `reporting` or `unhealthy` (what it said), or `gone` once Azure deleted the
 * VM after it (latest_heartbeats.deleted, from vms.deleted_at); a VM with records but no heartbeat counts as
 * `none` (with its vms row's region, zone and scale set; version '' and interval 0). What the clock adds —
 * silent, or gone after a long quiet — is read from the few VMs whose latest heartbeat is older than their
 * interval (index latest_heartbeats_quiet) and moved between the counted states at read time.
 *
 * Like the dimension counts (dimensions.ts), the counts are kept by the transactions that change what they count
 * (ingest: a heartbeat replacing the latest, a VM's first records, a deletion; prune: what it deletes), as
 * signed deltas on rows of their own partition, so two consumers never wait on each other's counter and the sum
 * over partitions is exact.
 */
import type { SqlExecutor, SqlValue } from './sql.ts';

/** The states counted without the clock. */
export type CountedState = 'reporting' | 'unhealthy' | 'gone' | 'none';

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

/** The counted state of a latest heartbeat row (columns deleted, unhealthy). */
export const COUNTED_STATE_SQL = `CASE WHEN deleted = 1 THEN 'gone' WHEN unhealthy = 1 THEN 'unhealthy' ELSE 'reporting' END`;

/** The counts of an existing history (the migration that adds them; tests compare the kept counts with it). */
export const coverageCountBackfill = (): string[] => [
  `UPDATE latest_heartbeats SET deleted = 1 WHERE EXISTS (SELECT 1 FROM vms v WHERE v.source = latest_heartbeats.source
     AND v.deleted_at IS NOT NULL AND v.deleted_at > latest_heartbeats.sent_at)`,
  ...COUNTED_SELECTS.map(
    (select) =>
      `INSERT INTO coverage_counts (state, location, zone, scale_set, version, interval_seconds, partition_id, vms)
       ${select}`,
  ),
];

/** What the counts are, from the rows themselves (the backfill, and the tests' oracle). */
export const COUNTED_SELECTS: readonly string[] = [
  `SELECT ${COUNTED_STATE_SQL} AS state, location, zone, scale_set, version, interval_seconds,
     '*' AS partition_id, count(*) AS vms
   FROM latest_heartbeats GROUP BY 1, location, zone, scale_set, version, interval_seconds`,
  `SELECT 'none' AS state, location, zone, scale_set, '' AS version, 0 AS interval_seconds,
     '*' AS partition_id, count(*) AS vms FROM vms v
   WHERE NOT EXISTS (SELECT 1 FROM latest_heartbeats h WHERE h.source = v.source)
   GROUP BY location, zone, scale_set`,
];

/** The counted state of a latest heartbeat. */
export function countedState(row: { deleted: boolean; unhealthy: boolean }): CountedState {
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

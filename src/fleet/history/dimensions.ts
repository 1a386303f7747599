/**
 * The dimension table: how many maintenance events have each type and status, and how many VMs each region,
 * zone and scale set (and how many VMs in all), so the dashboard's drop-downs and the summary's reporting VMs
 * come from a table of a few hundred rows instead of a scan of the events or the VMs.
 *
 * The counts are kept by the transactions that change what they count (ingest: a re-fold moves its event from
 * its old type and status to its new ones, a VM's upsert from its old region, zone and scale set; prune: what it
 * deletes), as signed deltas on rows of their own partition (like ingest_stats), so two consumers never wait
 * on each other's counter and the sum over partitions is exact; the refresh folds them into one row per value
 * (partition-counts.ts). A value is listed while its count is above 0.
 */
import type { SqlExecutor, SqlValue } from './sql.ts';

/** The counted fields: 'vm' (value '') counts the VMs themselves. */
export type DimensionField = 'type' | 'status' | 'location' | 'zone' | 'scaleSet' | 'vm';

export const dimensionTables = (): string[] => [
  `CREATE TABLE dimension_refs (
    field TEXT NOT NULL,
    value TEXT NOT NULL,
    partition_id TEXT NOT NULL,
    refs BIGINT NOT NULL,
    PRIMARY KEY (field, value, partition_id)
  )`,
];

/** The counts of an existing history (the migration that adds the table). */
export const dimensionBackfill = (): string[] => [
  `INSERT INTO dimension_refs (field, value, partition_id, refs)
   SELECT 'type', event_type, '*', count(*) FROM maintenance GROUP BY event_type`,
  `INSERT INTO dimension_refs (field, value, partition_id, refs)
   SELECT 'status', status, '*', count(*) FROM maintenance GROUP BY status`,
  `INSERT INTO dimension_refs (field, value, partition_id, refs)
   SELECT 'location', location, '*', count(*) FROM vms GROUP BY location`,
  `INSERT INTO dimension_refs (field, value, partition_id, refs)
   SELECT 'zone', zone, '*', count(*) FROM vms GROUP BY zone`,
  `INSERT INTO dimension_refs (field, value, partition_id, refs)
   SELECT 'scaleSet', scale_set, '*', count(*) FROM vms GROUP BY scale_set`,
  `INSERT INTO dimension_refs (field, value, partition_id, refs) SELECT 'vm', '', '*', count(*) FROM vms`,
];

/** Count changes of one transaction, written at once. */
export class DimensionDeltas {
  readonly #deltas = new Map<string, { field: DimensionField; value: string; n: number }>();

  add(field: DimensionField, value: string, n: number): void {
    const key = `${field}\u0000${value}`;
    const d = this.#deltas.get(key);
    if (d === undefined) this.#deltas.set(key, { field, value, n });
    else d.n += n;
  }

  /** A row's values leave (n = −1) or join (n = +1) the counts. */
  vm(row: { location: string; zone: string; scaleSet: string }, n: number): void {
    this.add('location', row.location, n);
    this.add('zone', row.zone, n);
    this.add('scaleSet', row.scaleSet, n);
    this.add('vm', '', n);
  }

  async write(tx: SqlExecutor, partition: string): Promise<void> {
    const rows = [...this.#deltas.entries()]
      .filter(([, d]) => d.n !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, d]) => d);
    for (let i = 0; i < rows.length; i += 200) {
      const chunk = rows.slice(i, i + 200);
      const params: SqlValue[] = chunk.flatMap((d) => [d.field, d.value, partition, d.n]);
      await tx.run(
        `INSERT INTO dimension_refs (field, value, partition_id, refs)
         VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
         ON CONFLICT (field, value, partition_id) DO UPDATE SET refs = dimension_refs.refs + excluded.refs`,
        params,
      );
    }
  }
}

/**
 * Counts kept as signed deltas on rows of the writing partition (dimension_refs, pending_scope_counts,
 * coverage_counts, coverage_dimension_counts: two consumers never wait on each other's counter, and the sum over
 * partitions is exact), and their fold: a partition's rows moved whole into the shared ones (partition '*') in one
 * transaction, so that a read scans about one row per key instead of one per key and partition (plus the deltas
 * since the last fold). The sum of every key stays what it was. PostgreSQL skips the rows a consumer's
 * transaction holds (they wait for the next fold), so ingest never waits for it.
 */
import type { SqlExecutor, SqlValue } from './sql.ts';

/** Deletes a counts table's rows of the writing partitions (PostgreSQL: those no transaction holds), returning them. */
export function unfoldedRows(tx: SqlExecutor, table: string, key: string, values: string): string {
  return tx.dialect === 'postgres'
    ? `DELETE FROM ${table} WHERE (${key}, partition_id) IN (
         SELECT ${key}, partition_id FROM ${table} WHERE partition_id <> '*' FOR UPDATE SKIP LOCKED)
       RETURNING ${key}, ${values}`
    : `DELETE FROM ${table} WHERE partition_id <> '*' RETURNING ${key}, ${values}`;
}

/**
 * Folds `table`'s one count column `count`, keyed by the text columns `key`, into partition '*', and drops the
 * shared rows that count nothing. Returns the rows folded.
 */
export async function foldCounts(
  tx: SqlExecutor,
  table: string,
  key: readonly [string, string],
  count: string,
): Promise<number> {
  const rows = await tx.all(unfoldedRows(tx, table, key.join(', '), count));
  const sums = new Map<string, { k: [string, string]; n: number }>();
  for (const row of rows) {
    const k: [string, string] = [String(row[key[0]]), String(row[key[1]])];
    const id = `${k[0]}\u0000${k[1]}`;
    const s = sums.get(id);
    if (s === undefined) sums.set(id, { k, n: Number(row[count]) });
    else s.n += Number(row[count]);
  }
  // In key order, as every writer of the shared rows: two folds never wait on each other in a cycle.
  const moved = [...sums.entries()]
    .filter(([, s]) => s.n !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, s]) => s);
  for (let i = 0; i < moved.length; i += 200) {
    const chunk = moved.slice(i, i + 200);
    const params: SqlValue[] = chunk.flatMap((s) => [s.k[0], s.k[1], '*', s.n]);
    await tx.run(
      `INSERT INTO ${table} (${key.join(', ')}, partition_id, ${count})
       VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
       ON CONFLICT (${key.join(', ')}, partition_id) DO UPDATE SET ${count} = ${table}.${count} + excluded.${count}`,
      params,
    );
  }
  if (rows.length > 0) await tx.run(`DELETE FROM ${table} WHERE partition_id = '*' AND ${count} = 0`);
  return rows.length;
}

/**
 * Folds the counts the views read on every request: dimension_refs (the filter values, dimensions.ts) and
 * pending_scope_counts (the blast radius's VMs pending per scope, rollups/pending.ts). The coverage counts fold
 * with the coverage sweep (coverage-changes.ts). Returns the rows folded.
 */
export async function foldViewCounts(tx: SqlExecutor): Promise<number> {
  return (
    (await foldCounts(tx, 'dimension_refs', ['field', 'value'], 'refs')) +
    (await foldCounts(tx, 'pending_scope_counts', ['scope', 'name'], 'vms'))
  );
}

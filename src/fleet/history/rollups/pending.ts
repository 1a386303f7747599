/**
 * The blast radius's "VMs pending now" per scope, kept by ingest (docs/fleet.md, "Rollups"): the view's
 * pendingVms of a scale set, zone or region is the number of distinct VMs (sources) with an affected observation
 * (affects_vm = 1) of that scope in a maintenance event pending now (maintenance.pending = 1). Instead of
 * collecting those VMs from every affected observation of every pending event on each request:
 *
 * - `pending_vm_refs`: per scope and VM, how many pending events' affected observations of that scope the VM
 *   has (a reference count, rows above 0 only);
 * - `pending_scope_counts`: per scope, how many VMs have a count above 0, as signed deltas on rows of the writing
 *   partition (like dimension_refs: two consumers never wait on each other's counter; the sum is exact), folded
 *   into one row per scope by the refresh (partition-counts.ts).
 *
 * An event's contribution is a function of its own rows (its pending flag and its observations), so they change
 * only when ingest re-folds it or prune deletes it: the re-fold moves the event's old contribution out and its
 * new one in, in the same transaction (PendingDeltas). A VM whose count crosses 0 moves its scope's count.
 *
 * The view's window (since/until on first_seen_at) selects the pending events it counts; the kept counts hold
 * every pending event, so pendingPerScope subtracts the VMs that only pending events outside the window hold
 * (those events' observations and those VMs' counts), or, when most pending events are outside it, counts the
 * window's pending observations directly.
 */
import type { SqlExecutor, SqlRow, SqlValue } from '../sql.ts';
import { SCOPE_KINDS, type ScopeKind, scopeName, scopeNameSql } from './impacts.ts';

export function pendingTables(): string[] {
  return [
    `CREATE TABLE pending_vm_refs (
      scope TEXT NOT NULL,
      name TEXT NOT NULL,
      source TEXT NOT NULL,
      refs BIGINT NOT NULL,
      PRIMARY KEY (scope, name, source)
    )`,
    `CREATE TABLE pending_scope_counts (
      scope TEXT NOT NULL,
      name TEXT NOT NULL,
      partition_id TEXT NOT NULL,
      vms BIGINT NOT NULL,
      PRIMARY KEY (scope, name, partition_id)
    )`,
  ];
}

/** The counts of an existing history (schema step 11), from the pending events' affected observations. */
export async function backfillPending(tx: SqlExecutor): Promise<void> {
  for (const kind of SCOPE_KINDS)
    await tx.run(
      `INSERT INTO pending_vm_refs (scope, name, source, refs)
       SELECT '${kind}', ${scopeNameSql(kind, 'o')}, o.source, count(*)
       FROM maintenance m JOIN observations o ON o.event_id = m.event_id AND o.occurrence = m.occurrence
       WHERE m.pending = 1 AND o.affects_vm = 1
       GROUP BY ${scopeNameSql(kind, 'o')}, o.source`,
    );
  await tx.run(
    `INSERT INTO pending_scope_counts (scope, name, partition_id, vms)
     SELECT scope, name, '*', count(*) FROM pending_vm_refs GROUP BY scope, name`,
  );
}

/** What of an observation row the counts use. */
export interface PendingObservation {
  source: string;
  location: string;
  zone: string;
  scaleSet: string;
}

export const pendingObservation = (row: SqlRow): PendingObservation => ({
  source: String(row.source),
  location: String(row.location ?? ''),
  zone: String(row.zone ?? ''),
  scaleSet: String(row.scale_set ?? ''),
});

const affects = (row: SqlRow) => Number(row.affects_vm) === 1;

/** How one transaction's re-folds and deletions move the reference counts, written at once. */
export class PendingDeltas {
  readonly #deltas = new Map<string, { scope: ScopeKind; name: string; source: string; n: number }>();

  /** One observation's scopes gain (n = +1) or lose (n = −1) a reference of its VM. */
  add(o: PendingObservation, n: number): void {
    for (const scope of SCOPE_KINDS) {
      const name = scopeName(scope, o);
      const key = `${scope}\u0000${name}\u0000${o.source}`;
      const d = this.#deltas.get(key);
      if (d === undefined) this.#deltas.set(key, { scope, name, source: o.source, n });
      else d.n += n;
    }
  }

  /** The references counted, by scope, name and VM. */
  entries(): Array<{ scope: ScopeKind; name: string; source: string; n: number }> {
    return [...this.#deltas.values()];
  }

  /**
   * One re-folded event: `rows` are its observations now (after the fold), `touched` the VMs whose observations
   * the fold rewrote, with what each was before (absent: it had none, or it did not affect its VM). Untouched
   * observations are the same before and after, so only a change of the pending flag moves them.
   */
  event(
    wasPending: boolean,
    isPending: boolean,
    rows: readonly SqlRow[],
    touched: ReadonlySet<string>,
    before: ReadonlyMap<string, PendingObservation>,
  ): void {
    if (!wasPending && !isPending) return;
    for (const row of rows) {
      const source = String(row.source);
      if (!touched.has(source)) {
        if (wasPending !== isPending && affects(row)) this.add(pendingObservation(row), isPending ? 1 : -1);
        continue;
      }
      const old = before.get(source);
      if (wasPending && old !== undefined) this.add(old, -1);
      if (isPending && affects(row)) this.add(pendingObservation(row), 1);
    }
  }

  /**
   * Writes the counts (inside the ingest or prune transaction), in key order so that two transactions never
   * wait on each other's rows in a cycle: each VM's count by a signed upsert that returns the new count (a row
   * lock serialises writers of one row, so new − delta is what it was), the VMs that crossed 0 as their scope's
   * count on the partition's row, rows back at 0 deleted.
   */
  async write(tx: SqlExecutor, partition: string): Promise<void> {
    const rows = [...this.#deltas.entries()]
      .filter(([, d]) => d.n !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, d]) => d);
    if (rows.length === 0) return;
    const scopes = new Map<string, { scope: string; name: string; n: number }>();
    const zero: SqlValue[][] = [];
    for (let i = 0; i < rows.length; i += 200) {
      const chunk = rows.slice(i, i + 200);
      const delta = new Map(chunk.map((d) => [`${d.scope}\u0000${d.name}\u0000${d.source}`, d.n]));
      const now = await tx.all(
        `INSERT INTO pending_vm_refs (scope, name, source, refs) VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
         ON CONFLICT (scope, name, source) DO UPDATE SET refs = pending_vm_refs.refs + excluded.refs
         RETURNING scope, name, source, refs`,
        chunk.flatMap((d) => [d.scope, d.name, d.source, d.n]),
      );
      for (const r of now) {
        const [scope, name, source] = [String(r.scope), String(r.name), String(r.source)];
        const refs = Number(r.refs);
        const was = refs - (delta.get(`${scope}\u0000${name}\u0000${source}`) ?? 0);
        const moved = was <= 0 && refs > 0 ? 1 : was > 0 && refs <= 0 ? -1 : 0;
        if (refs === 0) zero.push([scope, name, source]);
        if (moved === 0) continue;
        const key = `${scope}\u0000${name}`;
        const s = scopes.get(key);
        if (s === undefined) scopes.set(key, { scope, name, n: moved });
        else s.n += moved;
      }
    }
    for (let i = 0; i < zero.length; i += 300) {
      const chunk = zero.slice(i, i + 300);
      await tx.run(
        `DELETE FROM pending_vm_refs WHERE refs = 0 AND (scope, name, source) IN
           (VALUES ${chunk.map(() => '(?, ?, ?)').join(', ')})`,
        chunk.flat(),
      );
    }
    const counts = [...scopes.entries()]
      .filter(([, s]) => s.n !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, s]) => s);
    for (let i = 0; i < counts.length; i += 200) {
      const chunk = counts.slice(i, i + 200);
      await tx.run(
        `INSERT INTO pending_scope_counts (scope, name, partition_id, vms)
         VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
         ON CONFLICT (scope, name, partition_id) DO UPDATE SET vms = pending_scope_counts.vms + excluded.vms`,
        chunk.flatMap((s) => [s.scope, s.name, partition, s.n]),
      );
    }
  }
}

/** The affected observations of the pending events `where` selects. */
const pendingSelect = (where: string) =>
  `SELECT o.source, o.location, o.zone, o.scale_set FROM maintenance m CROSS JOIN observations o
   WHERE m.pending = 1 AND ${where} AND o.event_id = m.event_id AND o.occurrence = m.occurrence AND o.affects_vm = 1`;

/**
 * The VMs pending now per scope (kind → name → VMs, only names above 0) over the pending events first seen in
 * [sinceMs, untilMs) (null: open): the kept counts, less the VMs that only pending events outside the window
 * hold. When more pending events lie outside the window than inside, the window's own pending observations are
 * counted instead (what the view read before the counts; exact either way).
 */
export async function pendingPerScope(
  db: SqlExecutor,
  sinceMs: number | null,
  untilMs: number | null,
): Promise<Map<ScopeKind, Map<string, number>>> {
  const window: string[] = [];
  const params: SqlValue[] = [];
  if (sinceMs !== null) {
    window.push('m.first_seen_at >= ?');
    params.push(new Date(sinceMs).toISOString());
  }
  if (untilMs !== null) {
    window.push('m.first_seen_at < ?');
    params.push(new Date(untilMs).toISOString());
  }
  const inside = window.length === 0 ? '1 = 1' : window.join(' AND ');
  const out = new Map<ScopeKind, Map<string, number>>(SCOPE_KINDS.map((k) => [k, new Map()]));
  const [[split], counts] = await Promise.all([
    window.length === 0
      ? Promise.resolve([{ inside: 1, outside: 0 }])
      : db.all(
          `SELECT sum(CASE WHEN ${inside} THEN 1 ELSE 0 END) AS inside,
             sum(CASE WHEN ${inside} THEN 0 ELSE 1 END) AS outside
           FROM maintenance m WHERE m.pending = 1`,
          [...params, ...params],
        ),
    db.all('SELECT scope, name, sum(vms) AS n FROM pending_scope_counts GROUP BY scope, name'),
  ]);
  const outside = Number(split?.outside ?? 0);
  if (outside > Number(split?.inside ?? 0)) {
    // Most pending events are outside the window: its own pending observations, each VM once per scope.
    const sets = new Map<string, Set<string>>();
    for (const r of await db.all(pendingSelect(inside), params)) {
      const o = pendingObservation(r);
      for (const kind of SCOPE_KINDS) {
        const key = `${kind}\u0000${scopeName(kind, o)}`;
        let s = sets.get(key);
        if (s === undefined) {
          s = new Set();
          sets.set(key, s);
        }
        s.add(o.source);
      }
    }
    for (const [key, s] of sets) {
      const [kind, name] = key.split('\u0000') as [ScopeKind, string];
      out.get(kind)!.set(name, s.size);
    }
    return out;
  }
  for (const r of counts) {
    const n = Number(r.n);
    if (n > 0) out.get(String(r.scope) as ScopeKind)?.set(String(r.name), n);
  }
  if (outside === 0) return out;
  // References held by pending events outside the window, per scope and VM: a VM none of whose references is
  // inside the window leaves its scope's count.
  const held = new PendingDeltas();
  for (const r of await db.all(pendingSelect(`NOT (${inside})`), params)) held.add(pendingObservation(r), 1);
  const keys = held.entries();
  for (let i = 0; i < keys.length; i += 300) {
    const chunk = keys.slice(i, i + 300);
    const rows = await db.all(
      `SELECT scope, name, source, refs FROM pending_vm_refs WHERE (scope, name, source) IN
         (VALUES ${chunk.map(() => '(?, ?, ?)').join(', ')})`,
      chunk.flatMap((d) => [d.scope, d.name, d.source]),
    );
    const refs = new Map(
      rows.map((r) => [`${String(r.scope)}\u0000${String(r.name)}\u0000${String(r.source)}`, Number(r.refs)]),
    );
    for (const d of chunk) {
      const total = refs.get(`${d.scope}\u0000${d.name}\u0000${d.source}`);
      if (total === undefined || total > d.n) continue;
      const names = out.get(d.scope)!;
      const n = (names.get(d.name) ?? 0) - 1;
      if (n > 0) names.set(d.name, n);
      else names.delete(d.name);
    }
  }
  return out;
}

/**
 * The coverage counts (src/fleet/history/coverage-counts.ts) that ingest and prune keep as signed deltas are
 * what the migration's backfill computes from scratch, on random histories, in both stores (a real SQLite file
 * and a real PostgreSQL server). Each history is built to hit every path that moves a count: a VM's first
 * records (counted without a heartbeat) and its first heartbeat (moved out of that count), records moving a VM
 * to another region, zone or scale set, heartbeats out of order, re-delivered and from new versions, intervals
 * and scale sets (also none: no region, no scale set), unhealthy and healthy again, Preempt/Terminate starting
 * before and after a VM's latest heartbeat (gone), and prunes at random cutoffs — while one VM's records and
 * heartbeats arrive on several partitions, ingested at once (PostgreSQL: concurrent transactions under the VMs'
 * locks) and beside a prune. After every round the kept counts, summed over the writing partitions, must equal
 * the backfill run over the same rows (inside a transaction that is rolled back), the counts per dimension the
 * sums of the counts, and the report read from them must equal a scan of every VM.
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import type { ForwarderEvent } from '../../../src/domain/index.ts';
import {
  COVERAGE_STATES,
  type CoverageSettings,
  coverageReportScan,
  listCoverageVms,
  listCoverageVmsScan,
  readCoverageSettings,
} from '../../../src/fleet/history/coverage.ts';
import {
  changedSelect,
  countedIntervals,
  coverageClock,
} from '../../../src/fleet/history/coverage-changes.ts';
import {
  COUNTED_SELECTS,
  DIMENSION_SELECTS,
  STATE_COLUMNS,
} from '../../../src/fleet/history/coverage-counts.ts';
import { coveredVms, coveredVmsExact } from '../../../src/fleet/history/coverage-rollups.ts';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import type { SqlExecutor } from '../../../src/fleet/history/sql.ts';
import { seededRandom } from '../../support/delivery.ts';
import { heartbeatOf, record } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-coverage-counts-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

const T0 = Date.UTC(2025, 0, 1);
const DAY = 86_400;
const PARTITIONS = ['0', '1', '2', '3'];

type Kind = 'sqlite' | 'postgres';

/** A new history's database: a SQLite file named `name`, or a PostgreSQL database (dropped after the test). */
async function databaseFor(kind: Kind, name: string): Promise<string> {
  if (kind === 'sqlite') return `${tmp.dir}/${name}/fleet.db`;
  const db = await createTestDatabase(inject('pgAdminUrl'));
  cleanups.push(() => db.drop());
  return db.url;
}

/** `first` taken back to an earlier schema by `revert`, closed, and opened again (migrated). */
async function reopenedAfter(
  first: FleetHistory,
  database: string,
  now: { ms: number },
  revert: (tx: SqlExecutor) => Promise<void>,
): Promise<FleetHistory> {
  await first.db.transaction(revert);
  await first.close();
  const history = await openHistory({ database, now: () => new Date(now.ms) });
  cleanups.push(() => history.close());
  return history;
}

async function open(kind: Kind, name: string, now: { ms: number }): Promise<FleetHistory> {
  const history = await openHistory({ database: await databaseFor(kind, name), now: () => new Date(now.ms) });
  cleanups.push(() => history.close());
  return history;
}

interface Timed {
  body: ForwarderEvent;
  /** Seconds after T0 when the hub got it. */
  enqueuedAt: number;
}

/**
 * A random history of `vms` VMs over `days` days: each VM's forwarder sends heartbeats at its interval (some
 * VMs none, some stop early), changing version, interval, scale set and health now and then; maintenance
 * records at random times, some moving the VM's region, zone or scale set; some VMs deleted by Azure
 * (Preempt/Terminate started) with heartbeats before and, for a few, after; re-deliveries.
 */
function randomHistory(random: () => number, vms: number, days: number): Timed[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const out: Timed[] = [];
  const push = (body: ForwarderEvent, at: number) => {
    // Enqueued a little after it was made (the hub), sometimes a copy later (a re-delivery).
    out.push({ body, enqueuedAt: at + Math.floor(random() * 120) });
    if (random() < 0.05) out.push({ body, enqueuedAt: at + 60 + Math.floor(random() * 3600) });
  };
  for (let v = 0; v < vms; v++) {
    const vm = `vm_${v}`;
    let where = {
      location: pick(['westeurope', 'eastus', '']),
      zone: pick(['', '1', '2']),
      scaleSet: pick(['', 'ss-a', 'ss-b']),
    };
    const sendsHeartbeats = random() < 0.8;
    // Azure deletes some VMs (Preempt/Terminate started): most stop sending then, a few send on (a heartbeat
    // after the deletion: not gone).
    const deletedAt = random() < 0.25 ? Math.floor((0.3 + random() * 0.7) * days * DAY) : undefined;
    const stopsAt = Math.min(
      random() < 0.3 ? random() * days * DAY : days * DAY,
      deletedAt !== undefined && random() < 0.8 ? deletedAt : days * DAY,
    );
    let interval = pick([600, 3600, 7200]);
    let version = pick(['0.1.0', '0.2.0']);
    let sequence = 0;
    if (sendsHeartbeats)
      for (let at = Math.floor(random() * interval); at < stopsAt; at += interval) {
        if (random() < 0.01) interval = pick([600, 3600, 7200]);
        if (random() < 0.01) version = pick(['0.1.0', '0.2.0', '0.3.0']);
        if (random() < 0.005) where = { ...where, scaleSet: pick(['', 'ss-a', 'ss-b', 'ss-c']) };
        const sick = random() < 0.15;
        push(
          heartbeatOf({
            vm,
            at,
            sequence: ++sequence,
            intervalSeconds: interval,
            version,
            ...where,
            trigger: at + interval >= stopsAt ? 'stop' : 'interval',
            ...(sick ? { sink: { deadLetters: 2 } } : {}),
            ...(random() < 0.03 ? { imdsOk: false } : {}),
          }),
          at,
        );
      }
    const events = random() < 0.1 ? 0 : 1 + Math.floor(random() * 4);
    for (let e = 0; e < events; e++) {
      const at = Math.floor(random() * days * DAY);
      if (random() < 0.15)
        where = { ...where, zone: pick(['', '1', '2', '3']), scaleSet: pick(['', 'ss-a']) };
      const o = { vm, eventId: `${vm}-E${e}`, firstSeenAt: at, notBeforeAt: at + 900, ...where };
      push(record('scheduled', { ...o, at }), at);
      if (random() < 0.7) push(record('completed', { ...o, at: at + 960, startedAt: at + 950 }), at + 960);
    }
    if (deletedAt !== undefined) {
      const at = deletedAt;
      const o = {
        vm,
        eventId: `${vm}-D`,
        eventType: pick(['Preempt', 'Terminate']),
        firstSeenAt: at - 30,
        notBeforeAt: at,
        ...where,
      };
      push(record('scheduled', { ...o, at: at - 30 }), at - 30);
      push(record('started', { ...o, at, startedAt: at }), at);
    }
  }
  // Roughly in arrival order, with neighbours swapped (a re-delivery or a slow partition).
  out.sort((a, b) => a.enqueuedAt - b.enqueuedAt);
  for (let i = 1; i < out.length; i++) if (random() < 0.2) [out[i - 1], out[i]] = [out[i]!, out[i - 1]!];
  return out;
}

/** Events as one partition's batch, as the hub hands them over, numbered on from `sequence.next`. */
function batchOf(timed: readonly Timed[], partitionId: string, sequence: { next: number }): RawFleetEvent[] {
  return timed.map((t) => ({
    body: t.body,
    partitionId,
    sequenceNumber: sequence.next++,
    enqueuedAt: new Date(T0 + t.enqueuedAt * 1000),
  }));
}

type CountRow = {
  state: string;
  location: string;
  zone: string;
  scaleSet: string;
  version: string;
  interval: number;
  n: number;
};

async function countsOf(db: SqlExecutor): Promise<CountRow[]> {
  const rows = await db.all(
    `SELECT state, location, zone, scale_set, version, interval_seconds, sum(vms) AS n FROM coverage_counts
     GROUP BY state, location, zone, scale_set, version, interval_seconds HAVING sum(vms) <> 0`,
  );
  return countRows(rows, 'n');
}

/** Count rows (their count in column `n`) in one order. */
function countRows(rows: ReadonlyArray<Record<string, unknown>>, n: string): CountRow[] {
  return rows
    .map((r) => ({
      state: String(r.state),
      location: String(r.location),
      zone: String(r.zone),
      scaleSet: String(r.scale_set),
      version: String(r.version),
      interval: Number(r.interval_seconds),
      n: Number(r[n]),
    }))
    .sort((a, b) => {
      const ka = JSON.stringify(Object.values(a).slice(0, 6));
      const kb = JSON.stringify(Object.values(b).slice(0, 6));
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
}

/**
 * The VMs covered in random windows and filters, read from the coverage rollups (fresh, stale or half
 * refreshed), equal a count over coverage_days; the history's own coveredVms is that count.
 */
async function expectCoveredExact(h: FleetHistory, random: () => number, label: string): Promise<void> {
  // Half the time refresh first: the reader must be exact with the buckets fresh and with days left stale.
  if (random() < 0.5) await h.refreshRollups();
  const day = (n: number) => new Date(T0 + n * DAY * 1000 + Math.floor(random() * DAY) * 1000).toISOString();
  const filters = [
    {},
    { since: day(-1) },
    { until: day(7) },
    { since: day(Math.floor(random() * 12)), until: day(Math.floor(random() * 14)) },
    { since: day(0), until: day(12), location: 'eastus' },
    { zone: '1' },
    { zone: '(none)', location: 'westeurope', since: day(3) },
    { scaleSet: 'ss-a', until: day(9) },
    { scaleSet: '(none)', zone: '2', since: day(1), until: day(10) },
  ];
  for (const filter of filters)
    expect(await coveredVms(h.db, filter), `${label}: covered ${JSON.stringify(filter)}`).toBe(
      await coveredVmsExact(h.db, filter),
    );
  expect(await h.coveredVms({})).toBe(await coveredVmsExact(h.db, {}));
}

/** Reads in one snapshot (the history's own refresh timer may sweep the counts meanwhile). */
function inOneSnapshot<T>(h: FleetHistory, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  return h.db.transaction(async (tx) => {
    if (tx.dialect === 'postgres') await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    return fn(tx);
  });
}

/** The kept counts, and what the rows say they are (backfilled), in one snapshot; the counts per dimension agree. */
const keptAndBackfilled = (h: FleetHistory) =>
  inOneSnapshot(h, async (tx) => {
    const kept = await countsOf(tx);
    expect(await dimensionCountsOf(tx), 'the counts per dimension').toEqual(await dimensionCountsDerived(tx));
    return { kept, scratch: await backfilled(tx) };
  });

const STATE_COLUMN_LIST = Object.values(STATE_COLUMNS);

/** coverage_dimension_counts summed over the partitions (the values that count something), in one order. */
async function dimensionCountsOf(db: SqlExecutor): Promise<string[]> {
  const rows = await db.all(
    `SELECT dimension, value, ${STATE_COLUMN_LIST.map((c) => `sum(${c}) AS ${c}`).join(', ')}
     FROM coverage_dimension_counts GROUP BY dimension, value`,
  );
  return dimensionRows(rows);
}

/** The counts per dimension as the counts of every combination (coverage_counts) sum to. */
async function dimensionCountsDerived(db: SqlExecutor): Promise<string[]> {
  const rows: Array<Record<string, unknown>> = [];
  for (const select of DIMENSION_SELECTS) rows.push(...(await db.all(select)));
  return dimensionRows(rows);
}

function dimensionRows(rows: ReadonlyArray<Record<string, unknown>>): string[] {
  return rows
    .map((r) => [r.dimension, r.value, ...STATE_COLUMN_LIST.map((c) => Number(r[c]))])
    .filter((r) => r.slice(2).some((n) => n !== 0))
    .map((r) => JSON.stringify(r))
    .sort();
}

/**
 * The counts from the rows as they are: each latest heartbeat in the state it says it is counted in, each VM
 * without one as `none`; and how many latest heartbeats were sent before Azure deleted their VM.
 */
async function backfilled(db: SqlExecutor): Promise<{ counts: CountRow[]; deleted: number }> {
  const rows: Array<Record<string, unknown>> = [];
  for (const select of COUNTED_SELECTS) rows.push(...(await db.all(select)));
  const [d] = await db.all(
    `SELECT count(*) AS n FROM latest_heartbeats h WHERE EXISTS (SELECT 1 FROM vms v WHERE v.source = h.source
       AND v.deleted_at IS NOT NULL AND v.deleted_at > h.sent_at)`,
  );
  // A row is counted as gone once deleted, else as what it said, or silent or gone (by the clock, swept).
  const [bad] = await db.all(
    `SELECT count(*) AS n FROM latest_heartbeats WHERE (deleted = 1 AND counted_state <> 'gone')
       OR (deleted = 0 AND counted_state NOT IN ('silent', 'gone',
         CASE WHEN unhealthy = 1 THEN 'unhealthy' ELSE 'reporting' END))`,
  );
  expect(Number(bad?.n), 'latest heartbeats counted in a state they cannot be in').toBe(0);
  return {
    counts: countRows(rows, 'vms'),
    deleted: Number(d?.n ?? 0),
  };
}

describe.each(['sqlite', 'postgres'] as const)('coverage counts on %s', (kind) => {
  it('a prune that forgets a VM Azure deleted takes its heartbeat too (the deletion is no longer recorded)', async () => {
    const now = { ms: T0 + 10 * DAY * 1000 };
    const h = await open(kind, 'deleted-prune', now);
    const o = { vm: 'gone_1', eventId: 'D1', eventType: 'Terminate', firstSeenAt: 3000, notBeforeAt: 3600 };
    const raw = (body: ForwarderEvent, enqueuedAt: number, sequenceNumber: number): RawFleetEvent => ({
      body,
      partitionId: '0',
      sequenceNumber,
      enqueuedAt: new Date(T0 + enqueuedAt * 1000),
    });
    await h.ingest([
      raw(record('scheduled', { ...o, at: 3000 }), 3000, 1),
      raw(record('started', { ...o, at: 3600, startedAt: 3600 }), 3600, 2),
      // Sent before the deletion, handed over by the hub only after the prune's cutoff.
      raw(heartbeatOf({ vm: 'gone_1', at: 2000 }), 5 * DAY, 3),
      raw(heartbeatOf({ vm: 'kept_1', at: 5 * DAY }), 5 * DAY, 4),
    ]);
    expect((await h.coverage()).byState).toMatchObject({ gone: 1 });
    const removed = await h.prune(new Date(T0 + DAY * 1000));
    expect(removed).toMatchObject({ vms: 1, heartbeats: 1 });
    expect((await h.db.all('SELECT source FROM latest_heartbeats')).map((r) => String(r.source))).toEqual([
      expect.stringMatching(/kept_1$/),
    ]);
    const { kept, scratch } = await keptAndBackfilled(h);
    expect(kept).toEqual(scratch.counts);
    expect((await h.coverage()).byState).toMatchObject({ gone: 0 });
  });

  it('one batch of deletions marks gone exactly the VMs whose latest heartbeat was sent before their deletion', async () => {
    const now = { ms: T0 + 2 * DAY * 1000 };
    const h = await open(kind, 'deletions-batch', now);
    const raw = (body: ForwarderEvent, enqueuedAt: number, sequenceNumber: number): RawFleetEvent => ({
      body,
      partitionId: '0',
      sequenceNumber,
      enqueuedAt: new Date(T0 + enqueuedAt * 1000),
    });
    // Ingest marks a batch's deletions a chunk of VMs per statement (heartbeat-ingest.ts markDeletions).
    const vms = [
      { vm: 'gone_a', beat: 2000, deleted: 3600 },
      { vm: 'kept_b', beat: 5000, deleted: 3600 },
      { vm: 'gone_c', beat: 1000, deleted: 4000 },
      { vm: 'kept_d', beat: 4500, deleted: 4000 },
    ];
    await h.ingest(vms.map((v, i) => raw(heartbeatOf({ vm: v.vm, at: v.beat }), v.beat, i)));
    await h.ingest(
      vms.flatMap((v, i) => {
        const o = {
          vm: v.vm,
          eventId: `D${i}`,
          eventType: 'Terminate',
          firstSeenAt: 3000,
          notBeforeAt: 3600,
        };
        return [
          raw(record('scheduled', { ...o, at: 3000 }), 6000, 10 + 2 * i),
          raw(record('started', { ...o, at: v.deleted, startedAt: v.deleted }), 6000, 11 + 2 * i),
        ];
      }),
    );
    const marked = await h.db.all('SELECT source, deleted FROM latest_heartbeats ORDER BY source');
    expect(marked.map((r) => [String(r.source).split('/').at(-1), Number(r.deleted)])).toEqual([
      ['gone_a', 1],
      ['gone_c', 1],
      ['kept_b', 0],
      ['kept_d', 0],
    ]);
    expect((await h.coverage()).byState).toMatchObject({ gone: 2 });
    const { kept, scratch } = await keptAndBackfilled(h);
    expect(kept).toEqual(scratch.counts);
  });

  it('a history from before the counts (schema step 5) is migrated to the counts ingest keeps', async () => {
    const random = seededRandom(42);
    const history = randomHistory(random, 30, 6);
    const now = { ms: T0 + 6 * DAY * 1000 };
    const database = await databaseFor(kind, 'migrated');
    const first = await openHistory({ database, now: () => new Date(now.ms) });
    for (let i = 0; i < history.length; i += 50)
      await first.ingest(
        history.slice(i, i + 50).map((t, j) => ({
          body: t.body,
          partitionId: String(j % 4),
          sequenceNumber: i + j,
          enqueuedAt: new Date(T0 + t.enqueuedAt * 1000),
        })),
      );
    // Swept (the first refresh after the migration sweeps at the same clock).
    await first.refreshRollups();
    const kept = await countsOf(first.db);
    const report = await first.coverage();
    expect(report.byState.gone).toBeGreaterThan(0);
    // Back to what schema step 5 had: no counts (nor, step 9, per dimension), no deleted flag nor counted state
    // (nor the indexes on them), and (step 7) no coverage rollups nor the days' region, zone and scale set.
    const h = await reopenedAfter(first, database, now, async (tx) => {
      for (const index of [
        'latest_heartbeats_changes',
        'latest_heartbeats_by_state_age',
        'latest_heartbeats_by_state_name',
      ])
        await tx.run(`DROP INDEX ${index}`);
      await tx.run('ALTER TABLE latest_heartbeats DROP COLUMN counted_state');
      for (const table of [
        'coverage_counts',
        'coverage_dimension_counts',
        'coverage_rollups',
        'coverage_stale',
      ])
        await tx.run(`DROP TABLE ${table}`);
      await tx.run('ALTER TABLE latest_heartbeats DROP COLUMN deleted');
      for (const column of ['location', 'zone', 'scale_set'])
        await tx.run(`ALTER TABLE coverage_days DROP COLUMN ${column}`);
      for (const table of ['pending_vm_refs', 'pending_scope_counts']) await tx.run(`DROP TABLE ${table}`);
      await tx.run('DELETE FROM schema_migrations WHERE version > 5');
    });
    expect(await countsOf(h.db)).toEqual(kept);
    expect(await h.coverage()).toEqual(report);
    // Each day took its VM's latest heartbeat's region, zone and scale set; the rollups (built when the history
    // was opened for writing) answer as the days do.
    const [moved] = await h.db.all(
      `SELECT count(*) AS n FROM coverage_days d JOIN latest_heartbeats l ON l.source = d.source
       WHERE d.location <> l.location OR d.zone <> l.zone OR d.scale_set <> l.scale_set`,
    );
    expect(Number(moved?.n)).toBe(0);
    const [built] = await h.db.all('SELECT count(*) AS n FROM coverage_rollups WHERE level = 4');
    expect(Number(built?.n)).toBeGreaterThan(0);
    await expectCoveredExact(h, () => 0.9, 'migrated');
    expect(await h.coveredVms({})).toBeGreaterThan(0);
  });

  it('a history of schema step 8 gets its counts per dimension from its counts, and answers the same', async () => {
    const random = seededRandom(8);
    const history = randomHistory(random, 30, 6);
    const now = { ms: T0 };
    const database = await databaseFor(kind, 'step8');
    const first = await openHistory({ database, now: () => new Date(now.ms) });
    const sequence = { next: 0 };
    const half = Math.floor(history.length / 2);
    let batches = 0;
    const ingest = async (h: FleetHistory, from: number, to: number) => {
      for (let i = from; i < to; i += 40) {
        const batch = batchOf(history.slice(i, Math.min(i + 40, to)), PARTITIONS[batches++ % 4]!, sequence);
        now.ms = Math.max(now.ms, T0 + history[Math.min(i + 40, to) - 1]!.enqueuedAt * 1000);
        await h.ingest(batch);
      }
    };
    // Swept once midway, so the counts hold folded rows, rows of the writing partitions and VMs counted in a
    // state they have left by the clock.
    await ingest(first, 0, Math.floor(half / 2));
    await first.refreshRollups();
    await ingest(first, Math.floor(half / 2), half);
    now.ms += 2 * DAY * 1000;
    const report = await first.coverage();
    const kept = await countsOf(first.db);
    const [unfolded] = await first.db.all(
      "SELECT count(*) AS n FROM coverage_counts WHERE partition_id <> '*'",
    );
    expect(Number(unfolded?.n)).toBeGreaterThan(0);
    expect(report.byState.silent + report.byState.gone).toBeGreaterThan(0);
    // Back to what schema step 8 had: no counts per dimension.
    const h = await reopenedAfter(first, database, now, async (tx) => {
      await tx.run('DROP TABLE coverage_dimension_counts');
      for (const table of ['pending_vm_refs', 'pending_scope_counts']) await tx.run(`DROP TABLE ${table}`);
      await tx.run('DELETE FROM schema_migrations WHERE version > 8');
    });
    expect(await countsOf(h.db)).toEqual(kept);
    expect(await h.coverage()).toEqual(report);
    expect(await h.coverage()).toEqual(await coverageReportScan(h.db, {}, new Date(now.ms)));
    const { kept: keptNow, scratch } = await keptAndBackfilled(h);
    expect(keptNow).toEqual(scratch.counts);
    // Ingest, the sweep and prune keep both from there.
    await ingest(h, half, history.length);
    await h.refreshRollups();
    now.ms += DAY * 1000;
    await h.prune(new Date(now.ms - 4 * DAY * 1000));
    for (const filter of [{}, { scaleSet: 'ss-a' }])
      expect(await h.coverage(filter, 5), JSON.stringify(filter)).toEqual(
        await coverageReportScan(h.db, filter, new Date(now.ms), undefined, 5),
      );
    const after = await keptAndBackfilled(h);
    expect(after.kept).toEqual(after.scratch.counts);
  });

  it.each([1, 2, 3])(
    'equal the backfill from scratch on random history %i: ingest on four partitions at once, deletions, prunes',
    async (seed) => {
      const random = seededRandom(seed * 7919);
      const days = 12;
      const history = randomHistory(random, 40, days);
      const now = { ms: T0 };
      const h = await open(kind, `seed-${seed}`, now);
      const seen = {
        states: new Set<string>(),
        labels: new Set<string>(),
        prunedHeartbeats: 0,
        prunedVms: 0,
        rounds: 0,
      };
      const check = async (label: string) => {
        await expectCoveredExact(h, random, label);
        const { kept, scratch } = await keptAndBackfilled(h);
        expect(kept, label).toEqual(scratch.counts);
        const [d] = await h.db.all('SELECT count(*) AS n FROM latest_heartbeats WHERE deleted = 1');
        expect(Number(d?.n ?? 0), `${label}: deleted flags`).toBe(scratch.deleted);
        for (const row of kept) seen.states.add(row.state);
        // The report read from the counts and the VMs whose state changed since equals a scan of every VM.
        const at = new Date(now.ms);
        for (const filter of [{}, { scaleSet: 'ss-a' }, { location: 'eastus', zone: '1' }])
          expect(await h.coverage(filter, 5), `${label} ${JSON.stringify(filter)}`).toEqual(
            await coverageReportScan(h.db, filter, at, undefined, 5),
          );
        // The whole fleet's report (from the counts per dimension) labels VMs without a region or scale set.
        const fleet = await h.coverage({}, 5);
        for (const label of [...Object.keys(fleet.byLocation), ...Object.keys(fleet.byScaleSet)])
          seen.labels.add(label);
      };
      const sequence = { next: 0 };
      let pruneTo = -DAY;
      for (let i = 0; i < history.length; ) {
        // A round: up to four batches at once, each on its own partition (a VM's events spread over partitions).
        const batches = PARTITIONS.slice(0, 1 + Math.floor(random() * 4)).map((partitionId) => {
          const batch = batchOf(history.slice(i, i + 1 + Math.floor(random() * 40)), partitionId, sequence);
          i += batch.length;
          return batch;
        });
        const last = history[Math.min(i, history.length) - 1]!;
        now.ms = T0 + last.enqueuedAt * 1000;
        const work: Array<Promise<unknown>> = batches.filter((b) => b.length > 0).map((b) => h.ingest(b));
        // Now and then a prune beside the ingest, to a cutoff a few days back.
        if (random() < 0.08) {
          pruneTo = Math.max(pruneTo, last.enqueuedAt - Math.floor((1 + random() * 4) * DAY));
          work.push(
            h.prune(new Date(T0 + pruneTo * 1000)).then((r) => {
              seen.prunedHeartbeats += r.heartbeats;
              seen.prunedVms += r.vms;
            }),
          );
        }
        await Promise.all(work);
        if (++seen.rounds % 10 === 0) await check(`round ${seen.rounds}`);
      }
      await check('after the load');
      // Later: VMs go quiet (their partitions read through; swept), then a prune that leaves two days.
      now.ms += 3 * DAY * 1000;
      for (const p of PARTITIONS) await h.recordReadThrough(p, now.ms);
      await h.refreshRollups();
      await check('three days later');
      const removed = await h.prune(new Date(now.ms - 5 * DAY * 1000));
      seen.prunedHeartbeats += removed.heartbeats;
      seen.prunedVms += removed.vms;
      await check('after the last prune');
      // The history hit every counted state and both kinds of prune.
      expect([...seen.states].sort()).toEqual(['gone', 'none', 'reporting', 'silent', 'unhealthy']);
      expect([...seen.labels]).toEqual(expect.arrayContaining(['(unknown)', '(none)']));
      expect(seen.prunedHeartbeats).toBeGreaterThan(0);
      expect(seen.prunedVms).toBeGreaterThan(0);
    },
  );
  it.each([1, 2])(
    'the report and every list equal a scan at random clocks, read-throughs and settings, swept at random (%i)',
    async (seed) => {
      const random = seededRandom(seed * 104_729);
      const history = randomHistory(random, 25, 8);
      const now = { ms: T0 };
      const h = await open(kind, `sweep-${seed}`, now);
      const seen = { sweptStates: new Set<string>(), changedAfterSweep: 0, backwards: 0, compared: 0 };
      // The VMs counted in another state than theirs at `at` (by a scan), and those a read moves (changedSelect).
      const notInCountedState = (at: Date, settings: CoverageSettings) =>
        inOneSnapshot(h, async (tx) => {
          const expected: string[] = [];
          const counted = new Map(
            (await tx.all('SELECT source, counted_state FROM latest_heartbeats')).map((r) => [
              String(r.source),
              String(r.counted_state),
            ]),
          );
          for (const state of COVERAGE_STATES)
            for (const vm of (await listCoverageVmsScan(tx, state, {}, { limit: 1000 }, at, settings)).items)
              if (counted.get(vm.source) !== state) expected.push(vm.source);
          const changed = changedSelect(await coverageClock(tx, at), await countedIntervals(tx), settings, {
            sql: 'h.source',
            params: [],
          });
          const read =
            changed === undefined
              ? []
              : (await tx.all(changed.sql, changed.params)).map((r) => String(r.source));
          return { expected: expected.sort(), read: read.sort() };
        });
      const compare = async (label: string) => {
        const at = new Date(now.ms);
        const settings = await readCoverageSettings(h.db);
        for (const filter of [{}, { location: 'eastus', zone: '1' }]) {
          expect(await h.coverage(filter, 3), `${label} ${JSON.stringify(filter)}`).toEqual(
            await coverageReportScan(h.db, filter, at, undefined, 3),
          );
          for (const state of COVERAGE_STATES) {
            const pages = async (list: typeof listCoverageVmsScan) => {
              const seenVms: string[] = [];
              const totals = new Set<number>();
              let cursor: string | undefined;
              do {
                const page = await list(h.db, state, filter, { limit: 5, cursor }, at, settings);
                seenVms.push(...page.items.map((v) => `${v.source} ${v.state} ${v.quietSeconds}`));
                totals.add(page.total);
                cursor = page.nextCursor ?? undefined;
              } while (cursor !== undefined);
              return { seenVms, totals: [...totals] };
            };
            expect(await pages(listCoverageVms), `${label} ${state} ${JSON.stringify(filter)}`).toEqual(
              await pages(listCoverageVmsScan),
            );
          }
        }
        seen.compared++;
      };
      const sequence = { next: 0 };
      let newest = 0;
      for (let i = 0; i < history.length; ) {
        const partitionId = PARTITIONS[Math.floor(random() * PARTITIONS.length)]!;
        const batch = batchOf(history.slice(i, i + 1 + Math.floor(random() * 60)), partitionId, sequence);
        i += batch.length;
        newest = Math.max(newest, ...history.slice(i - batch.length, i).map((t) => t.enqueuedAt));
        // The clock: mostly a little after the newest enqueue, sometimes days later, sometimes behind the last
        // sweep's (another process's clock, a test's).
        const r = random();
        now.ms =
          T0 +
          (newest +
            (r < 0.15
              ? -Math.floor(random() * 2 * DAY)
              : Math.floor(random() * (r < 0.85 ? 3600 : 9 * DAY)))) *
            1000;
        await h.ingest(batch);
        if (random() < 0.3) {
          // A caught-up partition read through now.
          await h.recordReadThrough(PARTITIONS[Math.floor(random() * PARTITIONS.length)]!, now.ms);
        }
        if (random() < 0.05)
          await h.setCoverageSettings({
            silentMarginSeconds: [600, 1800, 7200][Math.floor(random() * 3)]!,
            goneAfterSeconds: [DAY, 3 * DAY, 7 * DAY][Math.floor(random() * 3)]!,
            backlogSeconds: 1800,
          });
        if (random() < 0.12) {
          // A sweep at this clock leaves nothing for a read at the same clock to move; later reads move only
          // the VMs whose state changed since.
          await h.refreshRollups();
          const at = new Date(now.ms);
          const settings = await readCoverageSettings(h.db);
          expect((await notInCountedState(at, settings)).expected, 'after a sweep').toEqual([]);
          // The writing partitions' rows were folded into one per key, and none counts nothing.
          const [unfolded] = await h.db.all(
            "SELECT count(*) AS n FROM coverage_counts WHERE partition_id <> '*' OR vms = 0",
          );
          expect(Number(unfolded?.n), 'counts rows left unfolded').toBe(0);
          const [unfoldedByDimension] = await h.db.all(
            `SELECT count(*) AS n FROM coverage_dimension_counts WHERE partition_id <> '*'
               OR (${STATE_COLUMN_LIST.map((c) => `${c} = 0`).join(' AND ')})`,
          );
          expect(Number(unfoldedByDimension?.n), 'counts per dimension left unfolded').toBe(0);
          for (const row of await countsOf(h.db)) seen.sweptStates.add(row.state);
          now.ms += (random() < 0.5 ? -1 : 1) * Math.floor(random() * 3 * DAY) * 1000;
          if (now.ms < at.getTime()) seen.backwards++;
          const later = await notInCountedState(new Date(now.ms), settings);
          expect(later.read, 'a read after a sweep moves the VMs whose state changed since').toEqual(
            later.expected,
          );
          seen.changedAfterSweep += later.expected.length;
        }
        if (random() < 0.06) await compare(`batch ${sequence.next}`);
        // The kept counts are what the rows' counted states say.
        if (random() < 0.1) {
          const { kept, scratch } = await keptAndBackfilled(h);
          expect(kept).toEqual(scratch.counts);
        }
      }
      now.ms = T0 + (newest + 5 * DAY) * 1000;
      for (const p of PARTITIONS) await h.recordReadThrough(p, now.ms);
      await compare('five days after the last');
      await h.refreshRollups();
      await compare('swept, five days after the last');
      const { kept, scratch } = await keptAndBackfilled(h);
      expect(kept).toEqual(scratch.counts);
      // The sweeps counted VMs silent and gone by the clock; reads after them moved VMs, also with the clock behind.
      expect([...seen.sweptStates]).toEqual(
        expect.arrayContaining(['silent', 'gone', 'reporting', 'unhealthy']),
      );
      expect(seen.changedAfterSweep).toBeGreaterThan(0);
      expect(seen.backwards).toBeGreaterThan(0);
      expect(seen.compared).toBeGreaterThan(3);
    },
    300_000,
  );
});

/**
 * The rollups (src/fleet/history/rollups, issue 35) answer the summary, the report, the time series, the lead
 * time, the blast radius and the filter values with the numbers the exact queries give (test/support/exact-fleet-views.ts, what
 * the views ran before), on both stores, for random histories: a synthetic fleet's records in a shuffled order
 * (late records, re-folds), in batches of random size over random partitions, some delivered twice, with the
 * rollup buckets refreshed never, midway or at the end, and part of the history pruned. Only the documented
 * approximations differ: p50 and p90 over more than 256 values (a sketch, within 1% of the exact value); the
 * means are compared to 3 decimals as the views round them (float sums in another order).
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import {
  type Distribution,
  type EventFilter,
  type FleetHistory,
  type FleetSummary,
  type LeadTimeAndImpact,
  openHistory,
  type RawFleetEvent,
  type Spread,
  type TimeSeries,
  VALUE_FIELDS,
  type ValueField,
} from '../../../src/fleet/history/index.ts';
import { Writer } from '../../../src/fleet/history/rollups/codec.ts';
import { EXACT_LIMIT, RELATIVE_ACCURACY } from '../../../src/fleet/history/rollups/distribution.ts';
import {
  activeIntervals,
  SCOPE_KINDS,
  type ScopeKind,
  type Scopes,
  scopeName,
} from '../../../src/fleet/history/rollups/impacts.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { seededRandom } from '../../support/delivery.ts';
import {
  exactBlastRadius,
  exactLeadTimeAndImpact,
  exactSummary,
  exactTimeSeries,
  exactValues,
} from '../../support/exact-fleet-views.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-rollups-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

type Kind = 'sqlite' | 'postgres';
let seq = 0;

async function open(kind: Kind, now: Date, database?: string): Promise<FleetHistory> {
  let url = database;
  if (url === undefined) {
    if (kind === 'sqlite') url = join(tmp.dir, `h-${seq++}`, 'fleet.db');
    else {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      cleanups.push(() => db.drop());
      url = db.url;
    }
  }
  const history = await openHistory({ database: url, now: () => now });
  cleanups.push(() => history.close());
  return history;
}

/** A new history's database (a file, or a PostgreSQL database dropped after the test) to open more than once. */
async function newDatabase(kind: Kind, name: string): Promise<string> {
  if (kind === 'sqlite') return join(tmp.dir, `${name}-${seq++}`, 'fleet.db');
  const db = await createTestDatabase(inject('pgAdminUrl'));
  cleanups.push(() => db.drop());
  return db.url;
}

/** p50/p90 are exact over at most EXACT_LIMIT values, otherwise within RELATIVE_ACCURACY of the exact value. */
function expectPercentile(got: number | null, exact: number | null, count: number, what: string): void {
  if (exact === null || got === null || count <= EXACT_LIMIT) {
    expect(got, what).toBe(exact);
    return;
  }
  expect(Math.abs(got - exact), `${what}: ${got} vs ${exact}`).toBeLessThanOrEqual(
    RELATIVE_ACCURACY * Math.abs(exact) + 1e-9,
  );
}

function expectDistribution(got: Distribution, exact: Distribution, what: string): void {
  const { p50, p90, mean, ...rest } = got;
  const { p50: ep50, p90: ep90, mean: emean, ...erest } = exact;
  expect(rest, what).toEqual(erest);
  expectPercentile(p50, ep50, exact.count, `${what} p50`);
  expectPercentile(p90, ep90, exact.count, `${what} p90`);
  if (emean === null) expect(mean).toBeNull();
  else expect(Math.abs((mean ?? Number.NaN) - emean), `${what} mean`).toBeLessThanOrEqual(0.0011);
}

function expectSameSummary(
  got: Omit<FleetSummary, 'coveredVms'>,
  exact: Omit<FleetSummary, 'coveredVms'>,
  what: string,
): void {
  // coveredVms comes from the coverage tables, not from the rollups (the exact queries leave it out).
  const strip = (s: Omit<FleetSummary, 'coveredVms'> & { coveredVms?: number }) => {
    const { noticeSeconds, advertisedSeconds, observedSeconds, coveredVms: _covered, ...rest } = s;
    return rest;
  };
  expect(strip(got), what).toEqual(strip(exact));
  expectDistribution(got.noticeSeconds, exact.noticeSeconds, `${what} notice`);
  expectDistribution(got.advertisedSeconds, exact.advertisedSeconds, `${what} advertised`);
  expectDistribution(got.observedSeconds, exact.observedSeconds, `${what} observed`);
}

function expectSameSeries(
  got: Omit<TimeSeries, 'coveredVms'>,
  exact: Omit<TimeSeries, 'coveredVms'>,
  what: string,
): void {
  expect(got.types, what).toEqual(exact.types);
  expect(
    got.days.map((d) => d.day),
    what,
  ).toEqual(exact.days.map((d) => d.day));
  got.days.forEach((d, i) => {
    const e = exact.days[i]!;
    const { observedSecondsSum, ...rest } = d;
    const { observedSecondsSum: esum, ...erest } = e;
    expect(rest, `${what} ${d.day}`).toEqual(erest);
    expect(Math.abs(observedSecondsSum - esum), `${what} ${d.day} sum`).toBeLessThanOrEqual(0.002);
  });
}

function expectSameLeadTime(
  got: Omit<LeadTimeAndImpact, 'coveredVms'>,
  exact: Omit<LeadTimeAndImpact, 'coveredVms'>,
  what: string,
): void {
  const key = (r: { eventType: string; location: string }) => `${r.eventType}/${r.location}`;
  expect(got.rows.map(key), what).toEqual(exact.rows.map(key));
  const spread = (g: Spread, e: Spread, w: string) => {
    expect({ count: g.count, max: g.max }, w).toEqual({ count: e.count, max: e.max });
    expectPercentile(g.p50, e.p50, e.count, `${w} p50`);
    expectPercentile(g.p90, e.p90, e.count, `${w} p90`);
  };
  got.rows.forEach((r, i) => {
    const e = exact.rows[i]!;
    expect(r.events, `${what} ${key(r)} events`).toBe(e.events);
    spread(r.notice, e.notice, `${what} ${key(r)} notice`);
    spread(r.observed, e.observed, `${what} ${key(r)} observed`);
  });
}

/** A view without the VMs covered in its window: coverage (heartbeats, issue 33) adds it beside the rollups. */
function withoutCovered<T extends { coveredVms: number }>(view: T): Omit<T, 'coveredVms'> {
  const { coveredVms: _covered, ...rest } = view;
  return rest;
}

/**
 * The pending VMs per scope kept by ingest and prune (rollups/pending.ts) are what the pending events' affected
 * observations give now: each VM's references per scope, and per scope the VMs above 0 (summed over partitions).
 */
async function expectPendingKept(h: FleetHistory, what: string): Promise<void> {
  const refs = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) => `${String(r.scope)}/${String(r.name)}/${String(r.source)}=${Number(r.refs)}`).sort();
  const scratch: Array<Record<string, unknown>> = [];
  for (const kind of SCOPE_KINDS)
    for (const r of await h.db.all(
      `SELECT o.source, o.location, o.zone, o.scale_set FROM maintenance m
       JOIN observations o ON o.event_id = m.event_id AND o.occurrence = m.occurrence
       WHERE m.pending = 1 AND o.affects_vm = 1`,
    )) {
      const name = scopeName(kind, {
        location: String(r.location),
        zone: String(r.zone),
        scaleSet: String(r.scale_set),
      });
      const found = scratch.find((x) => x.scope === kind && x.name === name && x.source === r.source);
      if (found === undefined) scratch.push({ scope: kind, name, source: r.source, refs: 1 });
      else found.refs = Number(found.refs) + 1;
    }
  expect(
    refs(await h.db.all('SELECT scope, name, source, refs FROM pending_vm_refs')),
    `${what} refs`,
  ).toEqual(refs(scratch));
  const perScope = new Map<string, number>();
  for (const r of scratch)
    perScope.set(
      `${String(r.scope)}/${String(r.name)}`,
      (perScope.get(`${String(r.scope)}/${String(r.name)}`) ?? 0) + 1,
    );
  const kept = await h.db.all(
    'SELECT scope, name, sum(vms) AS n FROM pending_scope_counts GROUP BY scope, name HAVING sum(vms) <> 0',
  );
  expect(
    new Map(kept.map((r) => [`${String(r.scope)}/${String(r.name)}`, Number(r.n)])),
    `${what} VMs per scope`,
  ).toEqual(perScope);
}

/** Every value of a filter field, through pages of 2 (so every cursor is exercised against the exact list). */
async function allValues(h: FleetHistory, field: ValueField): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await h.values(field, { limit: 2, cursor });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

/** Every view the rollups answer, against the exact queries, for a set of filters drawn from the history. */
async function expectViewsExact(
  h: FleetHistory,
  end: Date,
  random: () => number,
  what: string,
): Promise<void> {
  const at = (daysBefore: number) => new Date(end.getTime() - daysBefore * 86_400_000).toISOString();
  const pick = <T>(values: readonly T[]): T | undefined => values[Math.floor(random() * values.length)];
  const values = Object.fromEntries(
    await Promise.all(VALUE_FIELDS.map(async (f) => [f, await exactValues(h.db, f)] as const)),
  ) as Record<ValueField, string[]>;
  for (const f of VALUE_FIELDS) expect(await allValues(h, f), `${what} values ${f}`).toEqual(values[f]);
  await expectPendingKept(h, what);
  const [vm] = await h.db.all('SELECT vm_name FROM vms ORDER BY vm_name LIMIT 1');
  const filters: EventFilter[] = [
    {},
    { since: at(random() * 3) },
    { since: at(2 + random() * 3), until: at(random() * 2) },
    { until: at(random() * 4) },
    { since: at(random() * 0.1), until: at(random() * 0.05) },
    { eventType: pick(values.type) },
    {
      location: pick(values.location),
      status: pick([...values.status, 'vm-deleted']),
      since: at(random() * 5),
    },
    { zone: pick(values.zone) },
    { status: 'vm-deleted' },
    { scaleSet: pick(values.scaleSet), since: at(random() * 4) },
    { vm: String(vm?.vm_name ?? '').slice(0, 6) },
  ];
  for (const filter of filters) {
    const w = `${what} ${JSON.stringify(filter)}`;
    expectSameSummary(withoutCovered(await h.summary(filter)), await exactSummary(h.db, filter, end), w);
    expectSameSeries(withoutCovered(await h.timeSeries(filter)), await exactTimeSeries(h.db, filter), w);
    expectSameLeadTime(
      withoutCovered(await h.leadTimeAndImpact(filter)),
      await exactLeadTimeAndImpact(h.db, filter),
      w,
    );
    const threshold = Math.floor(random() * 4);
    expect(
      withoutCovered(await h.blastRadius(filter, threshold, { limit: 1000 })),
      `${w} blast radius`,
    ).toEqual(await exactBlastRadius(h.db, filter, threshold, { limit: 1000 }));
  }
  // Paged, and one kind of scope.
  const filter = { since: at(random() * 4) };
  let cursor: string | undefined;
  for (let page = 0; page < 3; page++) {
    const got = await h.blastRadius(filter, 1, { limit: 2, cursor }, 'zone');
    expect(withoutCovered(got), `${what} blast radius page ${page}`).toEqual(
      await exactBlastRadius(h.db, filter, 1, { limit: 2, cursor }, 'zone'),
    );
    cursor = got.nextCursor ?? undefined;
    if (cursor === undefined) break;
  }
}

/** One random history: how it is made and delivered. */
const historyCase = fc.record({
  seed: fc.integer({ min: 1, max: 1_000_000 }),
  vms: fc.integer({ min: 15, max: 120 }),
  days: fc.integer({ min: 1, max: 5 }),
  rate: fc.constantFrom(0.2, 1, 3),
  duplicates: fc.constantFrom(0, 0.1),
  refresh: fc.constantFrom('never', 'midway', 'end'),
  prune: fc.boolean(),
  /** Share of started impacts whose VM went silent (no terminal record: open for ever) or lasted hours. */
  silent: fc.constantFrom(0, 0.15),
  long: fc.constantFrom(0, 0.15),
});

/**
 * The records of a fleet with some impacts changed as a real fleet has them (rollups/impacts.ts counts the long
 * ones apart): for a `silent` share of the VMs' started events the terminal records are dropped (the VM went
 * silent: its impact is open for ever), for a `long` share the impact ends 1.5 to 4 hours after it started.
 */
function withLongImpacts(
  records: readonly LifecycleRecord[],
  random: () => number,
  silent: number,
  long: number,
): LifecycleRecord[] {
  const started = new Map<string, string>();
  for (const r of records)
    if (r.transition === 'started' && r.data.timing.startedAt !== null)
      started.set(`${r.source} ${r.subject}`, r.data.timing.startedAt);
  const fate = new Map<string, 'silent' | 'long' | 'as is'>();
  for (const k of [...started.keys()].sort()) {
    const x = random();
    fate.set(k, x < silent ? 'silent' : x < silent + long ? 'long' : 'as is');
  }
  const out: LifecycleRecord[] = [];
  for (const r of records) {
    const k = `${r.source} ${r.subject}`;
    const terminal = r.transition === 'completed' || r.transition === 'canceled';
    if (terminal && fate.get(k) === 'silent') continue;
    if (terminal && fate.get(k) === 'long') {
      const endedAt = new Date(Date.parse(started.get(k)!) + (90 + random() * 150) * 60_000).toISOString();
      out.push({ ...r, data: { ...r.data, timing: { ...r.data.timing, endedAt } } });
      continue;
    }
    out.push(r);
  }
  return out;
}

describe.each(['sqlite', 'postgres'] as const)('fleet rollups on %s', (kind) => {
  it('answer every view as the exact queries do, on random histories', async () => {
    await fc.assert(
      fc.asyncProperty(historyCase, async (c) => {
        const fleet = generateFleet({ vms: c.vms, days: c.days, seed: c.seed, ownEventsPerVmPerDay: c.rate });
        const end = new Date(fleet.window.end);
        const random = seededRandom(c.seed);
        const records = withLongImpacts([...fleet.records()], random, c.silent, c.long);
        // Shuffled: an event's later records may come first (late records, re-folds, earlier first sightings).
        for (let i = records.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1));
          [records[i], records[j]] = [records[j]!, records[i]!];
        }
        for (const r of [...records]) if (random() < c.duplicates) records.push(r);
        const h = await open(kind, end);
        let sequence = 0;
        let i = 0;
        while (i < records.length) {
          const size = 1 + Math.floor(random() * 100);
          const partitionId = String(Math.floor(random() * 4));
          const batch: RawFleetEvent[] = records.slice(i, i + size).map((body) => ({
            body,
            partitionId,
            sequenceNumber: sequence++,
            enqueuedAt: new Date(body.time),
          }));
          await h.ingest(batch);
          i += size;
          if (c.refresh === 'midway' && i >= records.length / 2 && i - size < records.length / 2)
            await h.refreshRollups();
        }
        if (c.refresh === 'end') await h.refreshRollups();
        await expectViewsExact(h, end, random, `case ${JSON.stringify(c)}`);
        if (c.prune) {
          await h.prune(new Date(end.getTime() - (c.days / 2) * 86_400_000));
          await expectViewsExact(h, end, random, `case ${JSON.stringify(c)} after prune`);
        }
      }),
      { numRuns: 6, seed: 35, endOnFailure: true },
    );
  }, 600_000);
});

describe.each(['sqlite', 'postgres'] as const)('the counts the views read on %s', (kind) => {
  it('are folded by the refresh into one row per key, and stay exact with the deltas written after', async () => {
    const fleet = generateFleet({ vms: 60, days: 3, seed: 41, ownEventsPerVmPerDay: 2 });
    const end = new Date(fleet.window.end);
    const records = [...fleet.records()];
    const h = await open(kind, end);
    const tables = [
      { table: 'dimension_refs', key: 'field, value' },
      { table: 'pending_scope_counts', key: 'scope, name' },
    ];
    const expectExact = async (what: string) => {
      for (const f of VALUE_FIELDS)
        expect(await allValues(h, f), `${what} values ${f}`).toEqual(await exactValues(h.db, f));
      await expectPendingKept(h, what);
    };
    const partitionRows = async () => {
      let n = 0;
      for (const { table } of tables)
        n += Number((await h.db.all(`SELECT count(*) AS n FROM ${table} WHERE partition_id <> '*'`))[0]?.n);
      return n;
    };
    const half = Math.floor(records.length / 2);
    await feed(h, records.slice(0, half), { partitions: 4 });
    expect(await partitionRows(), 'rows left in the partitions after the refresh').toBe(0);
    for (const { table, key } of tables) {
      const [row] = await h.db.all(
        `SELECT count(*) AS n, (SELECT count(*) FROM (SELECT DISTINCT ${key} FROM ${table}) k) AS keys FROM ${table}`,
      );
      expect(Number(row?.n), `${table}: one row per key`).toBe(Number(row?.keys));
      expect(Number(row?.n), `${table} holds counts`).toBeGreaterThan(0);
    }
    await expectExact('folded');
    // Deltas beside the folded rows, then folded again.
    for (let i = half; i < records.length; i += 50)
      await h.ingest(
        records.slice(i, i + 50).map((body, j) => ({
          body,
          partitionId: String((i / 50) % 4),
          sequenceNumber: i + j,
          enqueuedAt: new Date(body.time),
        })),
      );
    expect(await partitionRows(), 'deltas written after the fold').toBeGreaterThan(0);
    await expectExact('folded and deltas');
    await h.refreshRollups();
    expect(await partitionRows(), 'rows left in the partitions after the second refresh').toBe(0);
    await expectExact('folded twice');
    await h.prune(new Date(end.getTime() - 1.5 * 86_400_000));
    await h.refreshRollups();
    await expectExact('pruned and folded');
  }, 120_000);
});

/** Ingests `records` in batches of `size` (100) over `partitions` (1) in turn, then refreshes the rollups. */
async function feed(
  h: FleetHistory,
  records: readonly LifecycleRecord[],
  { size = 100, partitions = 1, sequence = 0 } = {},
): Promise<void> {
  for (let i = 0; i < records.length; i += size)
    await h.ingest(
      records.slice(i, i + size).map((body, j) => ({
        body,
        partitionId: String((i / size) % partitions),
        sequenceNumber: sequence + i + j,
        enqueuedAt: new Date(body.time),
      })),
    );
  await h.refreshRollups();
}

/**
 * The scenario of the per-process caches' tests: a history fed half, then whole (its rollups rebuilt between
 * requests), then another history beside it, and the first again, with `expectExact` after each step; `read`
 * must answer differently once the whole history is in (so the rebuilt rollups were read).
 */
async function exactAcrossRebuildsAndHistories(
  kind: 'sqlite' | 'postgres',
  seed: number,
  expectExact: (h: FleetHistory, what: string, end: Date) => Promise<void>,
  read: (h: FleetHistory) => Promise<unknown>,
): Promise<void> {
  const fleet = generateFleet({ vms: 80, days: 3, seed, ownEventsPerVmPerDay: 2 });
  const other = generateFleet({ vms: 40, days: 3, seed: seed + 1, ownEventsPerVmPerDay: 2 });
  const end = new Date(fleet.window.end);
  const records = [...fleet.records()];
  const h = await open(kind, end);
  await feed(h, records.slice(0, Math.floor(records.length / 2)));
  await expectExact(h, 'half', end);
  const before = await read(h);
  await feed(h, records.slice(Math.floor(records.length / 2)));
  await expectExact(h, 'whole', end);
  expect(await read(h), 'the rebuilt rollups').not.toEqual(before);
  const second = await open(kind, end);
  await feed(second, [...other.records()]);
  await expectExact(second, 'another history', end);
  await expectExact(h, 'the first again', end);
}

describe.each(['sqlite', 'postgres'] as const)('the summary, time series and lead time on %s', (kind) => {
  it('stay exact when their buckets are rebuilt between requests, and beside another history', async () => {
    // The process keeps decoded bucket aggregates by their stored bytes and the merge of a window's buckets by
    // the aggregates merged (rollups/cache.ts): a bucket rebuilt by a refresh, or another history's bucket of
    // the same level and dimensions, must be decoded and merged again; a repeated request reads the cache.
    await exactAcrossRebuildsAndHistories(
      kind,
      21,
      async (h, what, end) => {
        const filters: EventFilter[] = [
          {},
          { since: new Date(end.getTime() - 36 * 3_600_000).toISOString() },
        ];
        for (const filter of filters)
          for (const request of ['first', 'again']) {
            const w = `${what} ${JSON.stringify(filter)} ${request}`;
            expectSameSummary(
              withoutCovered(await h.summary(filter)),
              await exactSummary(h.db, filter, end),
              w,
            );
            expectSameSeries(
              withoutCovered(await h.timeSeries(filter)),
              await exactTimeSeries(h.db, filter),
              w,
            );
            expectSameLeadTime(
              withoutCovered(await h.leadTimeAndImpact(filter)),
              await exactLeadTimeAndImpact(h.db, filter),
              w,
            );
          }
      },
      async (h) => (await h.summary({})).events,
    );
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)('the blast radius on %s', (kind) => {
  it('stays exact when its impact slots are rebuilt between requests, and beside another history', async () => {
    // The process keeps decoded impact slots by their digests (rollups/impacts.ts selectSlots): a slot rebuilt
    // by a refresh, or another history's slot of the same level, bucket and kind, must be read and decoded again.
    await exactAcrossRebuildsAndHistories(
      kind,
      11,
      async (h, what, end) => {
        for (const since of [undefined, new Date(end.getTime() - 36 * 3_600_000).toISOString()]) {
          const filter = since === undefined ? {} : { since };
          for (const threshold of [0, 3]) {
            const got = withoutCovered(await h.blastRadius(filter, threshold, { limit: 1000 }));
            expect(got, `${what} ${JSON.stringify(filter)} threshold ${threshold}`).toEqual(
              await exactBlastRadius(h.db, filter, threshold, { limit: 1000 }),
            );
            if (since === undefined) expect(got.total, what).toBeGreaterThan(0);
          }
        }
      },
      async (h) => withoutCovered(await h.blastRadius({}, 0, { limit: 1000 })),
    );
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)('the impact slots a blast radius reads on %s', (kind) => {
  it('come without their bodies when this process holds them, and with them once rebuilt', async () => {
    const fleet = generateFleet({ vms: 60, days: 3, seed: 31, ownEventsPerVmPerDay: 2 });
    const end = new Date(fleet.window.end);
    const records = [...fleet.records()];
    const h = await open(kind, end);
    await feed(h, records.slice(0, Math.floor(records.length / 2)));
    // What each request reads of impact_slots: its rows, and how many came with a body.
    const reads: Array<{ rows: number; bodies: number }> = [];
    const all = h.db.all.bind(h.db);
    (h.db as { all: typeof h.db.all }).all = async (sql, params) => {
      const rows = await all(sql, params);
      if (/FROM impact_slots/.test(sql) && /digest/.test(sql))
        reads.push({ rows: rows.length, bodies: rows.filter((r) => r.body !== null).length });
      return rows;
    };
    const since = new Date(end.getTime() - 36 * 3_600_000).toISOString();
    const request = async (what: string) => {
      reads.length = 0;
      for (const filter of [{}, { since }])
        expect(withoutCovered(await h.blastRadius(filter, 1, { limit: 1000 })), what).toEqual(
          await exactBlastRadius(h.db, filter, 1, { limit: 1000 }),
        );
      return {
        rows: reads.reduce((n, r) => n + r.rows, 0),
        bodies: reads.reduce((n, r) => n + r.bodies, 0),
      };
    };
    const first = await request('first');
    expect(first.rows).toBeGreaterThan(0);
    expect(first.bodies).toBeGreaterThan(0);
    // The same windows again: every slot is held, none is sent.
    expect(await request('again')).toEqual({ rows: first.rows, bodies: 0 });
    // The rest of the history rebuilds slots (other digests): those are sent again, and the answers stay exact.
    await feed(h, records.slice(Math.floor(records.length / 2)));
    const rebuilt = await request('rebuilt');
    expect(rebuilt.bodies).toBeGreaterThan(0);
    expect((await request('rebuilt, again')).bodies).toBe(0);
    const digests = await h.db.all("SELECT count(*) AS n FROM impact_slots WHERE digest = ''");
    expect(Number(digests[0]!.n)).toBe(0);
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)("the blast radius at a window's start on %s", (kind) => {
  it('is exact for windows starting on hour, 4-hour, day and 8-day boundaries and inside events, with events announced days before the window', async () => {
    // A slot holding impacts of events first seen before the window's start (long notices, 1 to 7 days ahead)
    // answers from its profile of the window's start (rollups/impacts.ts ScopeSlot.short and steps): windows
    // starting exactly on a slot's start, inside a slot, and inside impacts, with silent VMs and hours-long
    // impacts, over the whole history or a few days.
    const fleet = generateFleet({ vms: 60, days: 12, seed: 7, ownEventsPerVmPerDay: 1 });
    const end = new Date(fleet.window.end);
    const random = seededRandom(7);
    const h = await open(kind, end);
    await feed(h, withLongImpacts([...fleet.records()], random, 0.05, 0.05));
    const [notice] = await h.db.all(
      'SELECT count(*) AS n FROM impact_intervals WHERE long = 0 AND start_ms - first_seen_ms > ?',
      [86_400_000],
    );
    expect(
      Number(notice?.n),
      'short impacts of events announced more than a day before',
    ).toBeGreaterThanOrEqual(5);
    const intervals = await h.db.all('SELECT start_ms, end_ms FROM impact_intervals WHERE long = 0');
    const hour = 3_600_000;
    const starts: number[] = [];
    for (const step of [hour, 4 * hour, 24 * hour, 192 * hour])
      for (
        let t = Math.ceil((end.getTime() - 12 * 24 * hour) / step) * step;
        t < end.getTime();
        t += step * 7
      )
        starts.push(t);
    for (let i = 0; i < 12; i++) {
      const v = intervals[Math.floor(random() * intervals.length)]!;
      // Inside an impact, and on the hour of its start.
      starts.push(
        Math.floor((Number(v.start_ms) + Number(v.end_ms)) / 2),
        Math.floor(Number(v.start_ms) / hour) * hour,
      );
    }
    for (const t of starts) {
      const since = new Date(t).toISOString();
      const until = new Date(t + (1 + Math.floor(random() * 5)) * 24 * hour).toISOString();
      for (const filter of [{ since }, { since, until }]) {
        expect(
          withoutCovered(await h.blastRadius(filter, 2, { limit: 1000 })),
          JSON.stringify(filter),
        ).toEqual(await exactBlastRadius(h.db, filter, 2, { limit: 1000 }));
      }
    }
  }, 600_000);
});

describe.each(['sqlite', 'postgres'] as const)('a history from before the rollups on %s', (kind) => {
  it('is migrated: the backfilled rollups answer as the exact queries do', async () => {
    const fleet = generateFleet({ vms: 60, days: 3, seed: 7, ownEventsPerVmPerDay: 1 });
    const end = new Date(fleet.window.end);
    const database = await newDatabase(kind, 'old');
    const before = await openHistory({ database, now: () => end });
    let sequence = 0;
    const records = [...fleet.records()];
    for (let i = 0; i < records.length; i += 100)
      await before.ingest(
        records.slice(i, i + 100).map((body) => ({
          body,
          partitionId: '0',
          sequenceNumber: sequence++,
          enqueuedAt: new Date(body.time),
        })),
      );
    // What schema version 2 had: no rollup, dimension, impact or coverage tables.
    await before.db.transaction(async (tx) => {
      for (const table of [
        'latest_heartbeats',
        'coverage_days',
        'coverage_counts',
        'coverage_dimension_counts',
        'coverage_rollups',
        'coverage_stale',
        'partition_progress',
        'rollup_digests',
        'rollup_buckets',
        'rollup_stale',
        'dimension_refs',
        'impact_intervals',
        'impact_slots',
        'impact_stale',
        'pending_vm_refs',
        'pending_scope_counts',
      ])
        await tx.run(`DROP TABLE ${table}`);
      await tx.run('ALTER TABLE vms DROP COLUMN deleted_at');
      await tx.run('DELETE FROM schema_migrations WHERE version > 2');
    });
    await before.close();
    const h = await open(kind, end, database);
    await expectViewsExact(h, end, seededRandom(7), 'migrated');
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)('a history of schema step 9 on %s', (kind) => {
  it('has every impact slot rebuilt in the form of step 10, and answers as the exact queries do', async () => {
    const fleet = generateFleet({ vms: 60, days: 3, seed: 9, ownEventsPerVmPerDay: 1 });
    const end = new Date(fleet.window.end);
    const database = await newDatabase(kind, 'step9');
    const random = seededRandom(9);
    const records = withLongImpacts([...fleet.records()], random, 0.15, 0.15);
    const first = await openHistory({ database, now: () => end });
    await feed(first, records);
    const slots = async (h: FleetHistory) =>
      (await h.db.all('SELECT level, bucket, kind FROM impact_slots ORDER BY level, bucket, kind')).map(
        (r) => `${Number(r.level)}:${Number(r.bucket)}:${String(r.kind)}`,
      );
    const built = await slots(first);
    expect(built.length).toBeGreaterThan(0);
    // Step 9's slots were of format 1 (this build refuses to read them): what it left, as far as this build can
    // tell, with every slot in that form.
    const v1 = new Writer().uint(1).uint(0).finish();
    await first.db.transaction(async (tx) => {
      await tx.run('UPDATE impact_slots SET body = ?', [v1]);
      for (const table of ['pending_vm_refs', 'pending_scope_counts']) await tx.run(`DROP TABLE ${table}`);
      await tx.run('DELETE FROM schema_migrations WHERE version > 9');
    });
    await first.close();
    const h = await open(kind, end, database);
    expect(await slots(h)).toEqual(built);
    expect(await h.db.all('SELECT level FROM impact_stale')).toEqual([]);
    await expectViewsExact(h, end, random, 'step 9 migrated');
    // Between the step and the refresh that follows it (every slot stale, none stored) readers are exact too.
    await h.db.transaction(async (tx) => {
      await tx.run(
        'INSERT INTO impact_stale (level, bucket) SELECT DISTINCT level, bucket FROM impact_slots',
      );
      await tx.run('DELETE FROM impact_slots');
    });
    for (const since of [undefined, new Date(end.getTime() - 30 * 3_600_000).toISOString()]) {
      const filter = since === undefined ? {} : { since };
      expect(withoutCovered(await h.blastRadius(filter, 1, { limit: 1000 })), JSON.stringify(filter)).toEqual(
        await exactBlastRadius(h.db, filter, 1, { limit: 1000 }),
      );
    }
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)('a history of schema step 10 on %s', (kind) => {
  it('gets its pending VMs per scope counted by step 11, kept by ingest and prune from there', async () => {
    const fleet = generateFleet({ vms: 80, days: 3, seed: 10, ownEventsPerVmPerDay: 2 });
    const end = new Date(fleet.window.end);
    const database = await newDatabase(kind, 'step10');
    const random = seededRandom(10);
    // VMs gone silent in their events' impact: those events stay pending (started) for ever, from any day.
    const records = withLongImpacts([...fleet.records()], random, 0.2, 0);
    const half = Math.floor(records.length * 0.7);
    const first = await openHistory({ database, now: () => end });
    await feed(first, records.slice(0, half));
    await first.db.transaction(async (tx) => {
      for (const table of ['pending_vm_refs', 'pending_scope_counts']) await tx.run(`DROP TABLE ${table}`);
      await tx.run('DELETE FROM schema_migrations WHERE version > 10');
    });
    await first.close();
    const h = await open(kind, end, database);
    await expectPendingKept(h, 'step 10 migrated');
    // Windows that leave out some of the pending events (fewer than they keep: the counts less what only those
    // hold), most of them (the window's own pending observations), and none.
    const expectBlastExact = async (w: string) => {
      const seen = (
        await h.db.all('SELECT first_seen_at FROM maintenance WHERE pending = 1 ORDER BY first_seen_at')
      ).map((r) => String(r.first_seen_at));
      expect(seen.length, w).toBeGreaterThan(6);
      const filters: EventFilter[] = [
        {},
        { since: seen[Math.floor(seen.length / 4)] },
        { until: seen[Math.floor((seen.length * 3) / 4)] },
        { since: seen[Math.floor(seen.length / 3)], until: seen.at(-2) },
        { since: seen[Math.floor((seen.length * 3) / 4)] },
      ];
      let pendingVms = 0;
      for (const filter of filters) {
        const got = withoutCovered(await h.blastRadius(filter, 2, { limit: 1000 }));
        expect(got, `${w} ${JSON.stringify(filter)}`).toEqual(
          await exactBlastRadius(h.db, filter, 2, { limit: 1000 }),
        );
        pendingVms += got.items.reduce((n, r) => n + r.pendingVms, 0);
      }
      expect(pendingVms, w).toBeGreaterThan(0);
    };
    await expectBlastExact('migrated');
    // Ingest goes on from the backfilled counts (later records of pending events, late records, new events).
    await feed(h, records.slice(half), { size: 37, partitions: 3, sequence: half });
    await expectPendingKept(h, 'ingested on');
    await expectBlastExact('ingested on');
    // Pruning takes events pending since before the cutoff (their VMs silent) out of the counts.
    await h.prune(new Date(end.getTime() - 1.5 * 86_400_000));
    await expectPendingKept(h, 'pruned');
    await expectViewsExact(h, end, random, 'step 10 migrated, ingested on, pruned');
  }, 300_000);
});

describe.each(['sqlite', 'postgres'] as const)('the impact intervals of the hours opened on %s', (kind) => {
  it('are every interval active in each hour of the scopes waiting on it, read per run of hours', async () => {
    // rollups/impacts.ts activeIntervals: runs of consecutive hours, each with its own scopes, and the long
    // intervals of every scope of any hour; an hour may get more (another run's that overlap it), never less.
    const fleet = generateFleet({ vms: 80, days: 2, seed: 13, ownEventsPerVmPerDay: 3 });
    const end = new Date(fleet.window.end);
    const random = seededRandom(13);
    const records = withLongImpacts([...fleet.records()], random, 0.15, 0.15);
    const h = await open(kind, end);
    for (let i = 0; i < records.length; i += 100)
      await h.ingest(
        records.slice(i, i + 100).map((body, j) => ({
          body,
          partitionId: '0',
          sequenceNumber: i + j,
          enqueuedAt: new Date(body.time),
        })),
      );
    const all = (await h.db.all('SELECT * FROM impact_intervals')).map((r) => ({
      key: `${String(r.event_id)}#${Number(r.occurrence)}#${String(r.source)}`,
      startMs: Number(r.start_ms),
      endMs: Number(r.end_ms),
      location: String(r.location),
      zone: String(r.zone),
      scaleSet: String(r.scale_set),
    }));
    expect(all.some((v) => v.endMs - v.startMs > 3_600_000)).toBe(true);
    const names = new Map(
      SCOPE_KINDS.map((k) => [k, [...new Set(all.map((v) => scopeName(k, v)))].sort()] as const),
    );
    const first = Math.floor(Math.min(...all.map((v) => v.startMs)) / 3_600_000);
    for (let round = 0; round < 8; round++) {
      // Random hours (some consecutive), each for a few random scopes or (stale) every scope.
      const scopesByHour = new Map<number, Scopes>();
      const hours: number[] = [];
      for (
        let hour = first + Math.floor(random() * 6);
        hour < first + 48;
        hour += 1 + Math.floor(random() * 3)
      ) {
        hours.push(hour);
        if (random() < 0.15) continue;
        const scopes = new Map<ScopeKind, Set<string>>();
        for (const k of SCOPE_KINDS)
          if (random() < 0.5) {
            const list = names.get(k)!;
            scopes.set(k, new Set([list[Math.floor(random() * list.length)]!]));
          }
        scopesByHour.set(hour, scopes);
      }
      const got = await activeIntervals(h.db, hours, scopesByHour);
      for (const hour of hours) {
        const active = all.filter((v) => v.startMs < (hour + 1) * 3_600_000 && v.endMs >= hour * 3_600_000);
        const scopes = scopesByHour.get(hour);
        const wanted = active.filter(
          (v) => scopes === undefined || SCOPE_KINDS.some((k) => scopes.get(k)?.has(scopeName(k, v))),
        );
        const keys = new Set(got.get(hour)!.map((v) => `${v.eventId}#${v.occurrence}#${v.source}`));
        const activeKeys = new Set(active.map((v) => v.key));
        for (const v of wanted) expect(keys.has(v.key), `round ${round} hour ${hour}: ${v.key}`).toBe(true);
        for (const k of keys)
          expect(activeKeys.has(k), `round ${round} hour ${hour}: ${k} not active`).toBe(true);
      }
    }
  }, 300_000);
});

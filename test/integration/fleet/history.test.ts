/**
 * FleetHistory against both stores — a real SQLite file (reads on the worker thread) and a real PostgreSQL
 * server (test/support/postgres.ts) — with the same expectations: idempotent ingest, order independence,
 * poison-proof batches, broadcast-aware counts, paging, retention, concurrent writers.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { SUMMARY_PENDING_LIMIT } from '../../../src/fleet/history/queries.ts';
import { formatReport } from '../../../src/fleet/report.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { broadcastReboot, freezeLifecycle, iso, record } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-history-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

let seq = 0;
function raw(body: unknown, partitionId = '0'): RawFleetEvent {
  return { body, partitionId, sequenceNumber: seq++, enqueuedAt: new Date(0) };
}

type Kind = 'sqlite' | 'postgres';

async function databaseUrl(kind: Kind, name: string): Promise<string> {
  if (kind === 'sqlite') return join(tmp.dir, `${name}-${seq++}`, 'fleet.db');
  const db = await createTestDatabase(inject('pgAdminUrl'));
  cleanups.push(() => db.drop());
  return db.url;
}

async function open(kind: Kind, name: string, database?: string): Promise<FleetHistory> {
  const history = await openHistory({
    database: database ?? (await databaseUrl(kind, name)),
    now: () => new Date('2025-03-01T00:00:00Z'),
  });
  cleanups.push(() => history.close());
  return history;
}

describe.each(['sqlite', 'postgres'] as const)('FleetHistory on %s', (kind) => {
  it('stores each (source, id) once: re-deliveries are counted duplicates', async () => {
    const h = await open(kind, 'dedupe');
    const records = freezeLifecycle();
    expect(await h.ingest(records.map((r) => raw(r)))).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(await h.ingest([raw(records[1]), raw(JSON.stringify(records[2]))])).toMatchObject({
      accepted: 0,
      duplicates: 2,
      eventsTouched: 0,
    });
    expect(await h.stats()).toEqual({ received: 5, accepted: 3, duplicates: 2, rejected: 0, heartbeats: 0 });
    const { items } = await h.events();
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ eventId: 'E1', status: 'completed', records: 3, affectedVms: 1 });
  });

  it('gives the same history whatever the arrival order and batch split', async () => {
    const a = await open(kind, 'order-a');
    const b = await open(kind, 'order-b');
    const records = [
      ...freezeLifecycle('web_1', 'E1'),
      ...freezeLifecycle('web_2', 'E2'),
      ...broadcastReboot(),
    ];
    await a.ingest(records.map((r) => raw(r)));
    for (const r of [...records].reverse()) await b.ingest([raw(r, '1')]);
    expect((await b.events()).items).toEqual((await a.events()).items);
    expect((await b.observations({}, { limit: 1000 })).items).toEqual(
      (await a.observations({}, { limit: 1000 })).items,
    );
    expect((await b.timeline('web_1')).map((t) => t.transition)).toEqual([
      'scheduled',
      'scheduled',
      'started',
      'started',
      'completed',
    ]);
  });

  it('folds one batch of many events and VMs to what one record at a time folds', async () => {
    // Ingest reads and writes a batch's (event, VM) pairs a chunk of statements at a time (ingest.ts): a batch
    // of a fleet's whole history spans several chunks of each statement.
    const records = [...generateFleet({ vms: 200, days: 10, seed: 35 }).records()];
    expect(records.length).toBeGreaterThan(800);
    const batched = await open(kind, 'batched');
    const single = await open(kind, 'single');
    await batched.ingest(records.map((r) => raw(r)));
    for (const r of [...records].reverse()) await single.ingest([raw(r)]);
    for (const sql of [
      'SELECT * FROM maintenance ORDER BY event_id, occurrence',
      'SELECT * FROM observations ORDER BY event_id, occurrence, source',
      'SELECT * FROM vms ORDER BY source',
      `SELECT field, value, SUM(refs) AS refs FROM dimension_refs GROUP BY field, value HAVING SUM(refs) <> 0
       ORDER BY field, value`,
    ])
      expect(await batched.db.all(sql), sql).toEqual(await single.db.all(sql));
    const [events] = await batched.db.all('SELECT count(*) AS n FROM maintenance');
    expect(Number(events?.n)).toBeGreaterThan(100);
    expect(await batched.summary()).toEqual(await single.summary());
    expect(await batched.leadTimeAndImpact()).toEqual(await single.leadTimeAndImpact());
  }, 120_000);

  it('rejects hostile records with reasons, stores the good ones of the same batch', async () => {
    const h = await open(kind, 'hostile');
    const good = freezeLifecycle('web_9', 'G1');
    const base = good[0]!;
    const hostile: unknown[] = [
      { ...base, id: 'h1', data: { ...base.data, vm: { ...base.data.vm, name: { evil: true } } } },
      { ...base, id: 'h2', data: { ...base.data, EventType: ['Freeze'] } },
      { ...base, id: 'h3\u0000x' },
      { ...base, id: 'h4', data: { ...base.data, Description: 'x'.repeat(1024 * 1024) } },
      { ...base, id: 'h5', data: { ...base.data, occurrence: 1e12 } },
      { ...base, id: 'h6', specversion: '0.3' },
      'not json at all',
    ];
    const result = await h.ingest([...hostile.map((b) => raw(b)), ...good.map((r) => raw(r))]);
    expect(result).toMatchObject({ accepted: 3, rejected: 7 });
    expect(result.rejections.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const r of result.rejections) expect(r.reason.length).toBeGreaterThan(0);
    expect(result.rejections[0]!.reason).toMatch(/data\.vm\.name/);
    expect(result.rejections[1]!.reason).toMatch(/EventType/);
    expect(result.rejections[5]!.reason).toMatch(/specversion/);
    const rejected = await h.db.all('SELECT reason, body FROM rejected ORDER BY sequence_number');
    expect(rejected).toHaveLength(7);
    expect(rejected.every((row) => !String(row.body).includes('\u0000'))).toBe(true);
    expect((await h.events()).items.map((e) => e.eventId)).toEqual(['G1']);
  });

  it('rolls back the whole batch when the store fails (nothing half-stored)', async () => {
    const h = await open(kind, 'rollback');
    await h.db.transaction((tx) => tx.run('DROP TABLE vms'));
    await expect(h.ingest(freezeLifecycle().map((r) => raw(r)))).rejects.toThrow(/vms/);
    const [count] = await h.db.all('SELECT count(*) AS n FROM records');
    expect(Number(count?.n)).toBe(0);
  });

  it('counts a broadcast maintenance event once, with its affected VMs; observers are not affected', async () => {
    const h = await open(kind, 'broadcast');
    await h.ingest([...broadcastReboot(), ...freezeLifecycle('db_1', 'F1')].map((r) => raw(r)));
    const s = await h.summary();
    expect(s).toMatchObject({
      events: 2,
      vms: 3,
      affectedVmEvents: 3,
      reportingVms: 6,
      byType: { Freeze: 1, Reboot: 1 },
      byStatus: { completed: 1, started: 1 },
      pendingTotal: 1,
    });
    expect(s.pending.map((e) => [e.eventId, e.affectedVms, e.observers, e.affectedNames])).toEqual([
      ['R1', 2, 3, ['web_1', 'web_2']],
    ]);
    const detail = await h.event('R1');
    expect(detail?.observations.filter((o) => o.affectsVm).map((o) => o.vmName)).toEqual(['web_1', 'web_2']);
    expect(detail?.observations).toHaveLength(5);
    // Per-VM views still show what each VM observed.
    expect((await h.observations({ vm: 'web_4' })).items.map((o) => [o.eventId, o.affectsVm])).toEqual([
      ['R1', false],
    ]);
    expect((await h.observations({ vm: 'web_4', affectsOnly: true })).items).toEqual([]);
    // Filters: an affected VM's name finds the event; an observer's does not.
    expect((await h.summary({ vm: 'web_2' })).events).toBe(1);
    expect((await h.summary({ vm: 'web_4' })).events).toBe(0);
    expect((await h.summary({ eventType: 'Reboot', status: 'started' })).events).toBe(1);
    expect((await h.values('type')).items).toEqual(['Freeze', 'Reboot']);
  });

  it('lists the pending events due soonest in the summary and the report, and counts them all', async () => {
    const h = await open(kind, 'pending-list');
    // 14 scheduled events, due one minute apart in the reverse of their ingest order.
    const ids = Array.from({ length: 14 }, (_, i) => `P${String(i).padStart(2, '0')}`);
    await h.ingest(
      ids.map((eventId, i) =>
        raw(record('scheduled', { eventId, vm: `vm_${i}`, at: 0, notBeforeAt: 6_000 - i * 60 })),
      ),
    );
    const s = await h.summary();
    expect(s.pendingTotal).toBe(14);
    expect(s.pending.map((e) => e.eventId)).toEqual([...ids].reverse().slice(0, SUMMARY_PENDING_LIMIT));
    // The whole list is the paged pending view.
    expect((await h.pending()).items.map((e) => e.eventId)).toEqual([...ids].reverse());
    const report = formatReport(s);
    expect(report).toContain(
      `Pending now: 14 (the ${SUMMARY_PENDING_LIMIT} due soonest listed; all of them: /api/pending)`,
    );
    expect(report).toContain('P13  Freeze  scheduled');
    expect(report).not.toContain('P03  ');
  });

  it('summarizes in SQL: notice, impact, approvals, pending, by region / zone / scale set', async () => {
    const h = await open(kind, 'summary');
    await h.ingest(
      [
        ...freezeLifecycle('web_1', 'E1'),
        record('scheduled', {
          vm: 'web_2',
          eventId: 'E2',
          eventType: 'Reboot',
          at: 100,
          firstSeenAt: 100,
          notBeforeAt: 700,
          location: 'norwayeast',
          zone: '2',
          scaleSet: 'web',
        }),
      ].map((r) => raw(r)),
    );
    const s = await h.summary();
    expect(s).toMatchObject({
      events: 2,
      vms: 2,
      records: 4,
      byStatus: { completed: 1, scheduled: 1 },
      byLocation: { norwayeast: 1, westeurope: 1 },
      byZone: { '1': 1, '2': 1 },
      byScaleSet: { '(none)': 1, web: 1 },
      byTransition: { completed: 1, scheduled: 2, started: 1 },
      impactVsAdvertised: { compared: 1, exceeded: 0 },
      approvals: { lapsed: 1 },
    });
    expect(s.noticeSeconds).toMatchObject({ count: 2, min: 600, max: 900, p50: 600, p90: 900 });
    expect((await h.pending({ location: 'westeurope' })).items).toEqual([]);
    expect((await h.summary({ eventType: 'Reboot' })).byTransition).toEqual({ scheduled: 1 });
    expect((await h.events({ since: iso(60) })).items.map((e) => e.eventId)).toEqual(['E2']);
    expect((await h.events({ vm: 'WEB_1' })).items.map((e) => e.eventId)).toEqual(['E1']);
  });

  it('pages every list with a cursor: no event twice, none missed', async () => {
    const h = await open(kind, 'paging');
    const records: LifecycleRecord[] = [];
    for (let i = 0; i < 25; i++)
      records.push(record('scheduled', { vm: `vm_${i}`, eventId: `P${i}`, at: i % 5, firstSeenAt: i % 5 }));
    await h.ingest(records.map((r) => raw(r)));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await h.events({}, { limit: 4, cursor });
      seen.push(...page.items.map((e) => e.eventId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    const pendingIds: string[] = [];
    cursor = undefined;
    do {
      const page = await h.pending({}, { limit: 7, cursor });
      expect(page.total).toBe(25);
      pendingIds.push(...page.items.map((e) => e.eventId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(new Set(pendingIds).size).toBe(25);
    await expect(h.events({}, { cursor: 'garbage' })).rejects.toThrow(/cursor/);
  });

  it('prunes events, records and observations older than the retention', async () => {
    const h = await open(kind, 'retention');
    await h.ingest(
      [
        ...freezeLifecycle('old_1', 'OLD'),
        record('scheduled', { vm: 'new_1', eventId: 'NEW', at: 86_400 * 30, firstSeenAt: 86_400 * 30 }),
      ].map((r) => raw(r)),
    );
    await h.setRetention('20d');
    const removed = await h.prune(new Date(Date.parse(iso(86_400 * 10))));
    expect(removed).toMatchObject({ events: 1, records: 3, observations: 1, vms: 1 });
    expect((await h.events()).items.map((e) => e.eventId)).toEqual(['NEW']);
    expect((await h.summary()).retention).toBe('20d');
  });
});

// Several consumer hosts share PostgreSQL; SQLite's writers are processes on one host (test/integration/fleet/e2e.test.ts).
describe('FleetHistory on postgres with concurrent writers', () => {
  const kind = 'postgres' as const;
  it('two writers on one database fold to what one writer folds (same records, split and interleaved)', async () => {
    const database = await databaseUrl(kind, 'writers');
    const a = await open(kind, 'writers', database);
    const b = await open(kind, 'writers', database);
    const single = await open(kind, 'single');
    const records = [
      ...broadcastReboot(),
      ...freezeLifecycle('web_1', 'E1'),
      ...freezeLifecycle('web_3', 'E3'),
    ];
    await single.ingest(records.map((r) => raw(r)));
    // Both writers get every record of the broadcast (a handover re-delivers), in different batches, at once.
    const odd = records.filter((_, i) => i % 2 === 1);
    const even = records.filter((_, i) => i % 2 === 0);
    await Promise.all([
      ...even.map((r) => a.ingest([raw(r, '0')])),
      ...odd.map((r) => b.ingest([raw(r, '1')])),
      a.ingest(records.slice(0, 6).map((r) => raw(r, '1'))),
      b.ingest(records.slice(4).map((r) => raw(r, '0'))),
    ]);
    expect((await a.events()).items).toEqual((await single.events()).items);
    expect((await b.observations({}, { limit: 1000 })).items).toEqual(
      (await single.observations({}, { limit: 1000 })).items,
    );
    const [count] = await a.db.all('SELECT count(*) AS n FROM records');
    expect(Number(count?.n)).toBe(records.length);
  });

  it('four partitions ingested at once, broadcast events through several of them and a handover, end as one serial fold', async () => {
    // Ingest takes the VMs' locks, then the events' (ingest.ts): an availability set's event arrives through
    // every partition its members hash to, so the partitions' batches share events and wait on each other there.
    const records = [...generateFleet({ vms: 300, days: 6, seed: 40 }).records()];
    const partitionOf = (r: LifecycleRecord) =>
      String(
        createHash('md5')
          .update(r.vmid || r.source)
          .digest()
          .readUInt32BE(0) % 4,
      );
    const byPartition = new Map<string, RawFleetEvent[][]>();
    for (const r of records) {
      const batches = byPartition.get(partitionOf(r)) ?? [[]];
      if (batches.at(-1)!.length === 25) batches.push([]);
      batches.at(-1)!.push(raw(r, partitionOf(r)));
      byPartition.set(partitionOf(r), batches);
    }
    expect(byPartition.size).toBe(4);
    const database = await databaseUrl(kind, 'partitions');
    const writers = await Promise.all([0, 1, 2, 3].map(() => open(kind, 'partitions', database)));
    const single = await open(kind, 'serial');
    for (let i = 0; i < records.length; i += 50)
      await single.ingest(records.slice(i, i + 50).map((r) => raw(r, partitionOf(r))));
    await Promise.all(
      [...byPartition.values()].map(async (batches, i) => {
        for (const [j, batch] of batches.entries()) {
          await writers[i]!.ingest(batch);
          // A handover: the next writer re-reads some batches of this partition at the same time.
          if (j % 7 === 3) await writers[(i + 1) % 4]!.ingest(batch);
        }
      }),
    );
    const [broadcast] = await single.db.all('SELECT count(*) AS n FROM maintenance WHERE reporting_vms > 1');
    expect(Number(broadcast?.n)).toBeGreaterThan(10);
    for (const sql of [
      'SELECT * FROM maintenance ORDER BY event_id, occurrence',
      'SELECT * FROM observations ORDER BY event_id, occurrence, source',
      'SELECT * FROM vms ORDER BY source',
      'SELECT * FROM impact_intervals ORDER BY event_id, occurrence, source',
      'SELECT * FROM pending_vm_refs ORDER BY scope, name, source',
      `SELECT scope, name, SUM(vms) AS vms FROM pending_scope_counts GROUP BY scope, name HAVING SUM(vms) <> 0
       ORDER BY scope, name`,
      `SELECT field, value, SUM(refs) AS refs FROM dimension_refs GROUP BY field, value HAVING SUM(refs) <> 0
       ORDER BY field, value`,
      `SELECT state, location, zone, scale_set, SUM(vms) AS vms FROM coverage_counts
       GROUP BY state, location, zone, scale_set HAVING SUM(vms) <> 0 ORDER BY state, location, zone, scale_set`,
    ])
      expect(await writers[0]!.db.all(sql), sql).toEqual(await single.db.all(sql));
    // The ingest counters differ by what the handover read twice (duplicates).
    const { ingest, ...summary } = await writers[1]!.summary();
    const { ingest: serialIngest, ...serialSummary } = await single.summary();
    expect(summary).toEqual(serialSummary);
    expect(ingest).toMatchObject({ accepted: serialIngest.accepted, duplicates: expect.any(Number) });
    expect(ingest.duplicates).toBeGreaterThan(0);
    expect(await writers[2]!.blastRadius()).toEqual(await single.blastRadius());
  }, 180_000);
});

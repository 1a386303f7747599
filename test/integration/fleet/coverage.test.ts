/**
 * Coverage in the fleet history (issue 33 item 2) against both stores, a real SQLite file and a real PostgreSQL
 * server, with the same expectations: heartbeats are kept as each VM's latest (not history rows) and its days of
 * coverage; reporting / silent / unhealthy / gone; a lagging partition makes no VM silent; a VM Azure deleted is
 * gone, not silent; the window counts every maintenance view shows; paging; retention. The report reads kept
 * counts and the VMs that went quiet: it must equal a scan of every VM (coverageReportScan), whatever the clock,
 * filter, page or prune.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import {
  type CoverageState,
  coverageReportScan,
  listCoverageVmsScan,
  readCoverageSettings,
} from '../../../src/fleet/history/coverage.ts';
import { COUNTED_SELECTS } from '../../../src/fleet/history/coverage-counts.ts';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { freezeLifecycle, heartbeatOf, iso, record } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-coverage-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

const T0 = Date.UTC(2025, 0, 1);
let seq = 0;
/** An event as the hub hands it over: enqueued when the body says it was made (heartbeat or record time). */
function raw(body: { time: string }, partitionId = '0'): RawFleetEvent {
  return { body, partitionId, sequenceNumber: seq++, enqueuedAt: new Date(body.time) };
}

type Kind = 'sqlite' | 'postgres';

async function open(kind: Kind, name: string, now: { at: number }): Promise<FleetHistory> {
  let database = join(tmp.dir, `${name}-${seq++}`, 'fleet.db');
  if (kind === 'postgres') {
    const db = await createTestDatabase(inject('pgAdminUrl'));
    cleanups.push(() => db.drop());
    database = db.url;
  }
  const history = await openHistory({ database, now: () => new Date(T0 + now.at * 1000) });
  cleanups.push(() => history.close());
  return history;
}

describe.each(['sqlite', 'postgres'] as const)('coverage on %s', (kind) => {
  it('tells reporting, silent, unhealthy and gone VMs apart, with why', async () => {
    const now = { at: 36_000 };
    const h = await open(kind, 'states', now);
    const result = await h.ingest([
      raw(heartbeatOf({ vm: 'web_ok', at: 35_000, version: '0.2.0' })),
      raw(heartbeatOf({ vm: 'web_silent', at: 20_000, scaleSet: 'vmss-a', zone: '2' })),
      raw(heartbeatOf({ vm: 'web_stopped', at: 19_000, trigger: 'stop' })),
      raw(heartbeatOf({ vm: 'web_sick', at: 35_400, sink: { deadLetters: 3 } })),
      raw(
        heartbeatOf({
          vm: 'web_backlog',
          at: 35_450,
          sink: { state: 'failing', pending: 4, oldestPendingAgeSeconds: 4000, lastError: 'http-503: busy' },
        }),
      ),
      raw(
        heartbeatOf({
          vm: 'web_young_backlog',
          at: 35_450,
          sink: { pending: 4, oldestPendingAgeSeconds: 60 },
        }),
      ),
      raw(heartbeatOf({ vm: 'web_deleted', at: 1000, scaleSet: 'vmss-a' })),
      raw(heartbeatOf({ vm: 'web_gone', at: -8 * 86_400 })),
      raw(heartbeatOf({ vm: 'web_imds', at: 35_500, imdsOk: false })),
      // Terminate started on web_deleted after its last heartbeat: Azure deleted it.
      raw(
        record('scheduled', {
          vm: 'web_deleted',
          eventId: 'T1',
          eventType: 'Terminate',
          at: 2000,
          scaleSet: 'vmss-a',
        }),
      ),
      raw(
        record('started', {
          vm: 'web_deleted',
          eventId: 'T1',
          eventType: 'Terminate',
          at: 2100,
          startedAt: 2100,
          scaleSet: 'vmss-a',
        }),
      ),
      // A VM whose forwarder sends records but no heartbeat (an older version).
      ...freezeLifecycle('web_old', 'F1').map((r) => raw(r)),
    ]);
    expect(result).toMatchObject({ heartbeats: 9, rejected: 0 });

    const report = await h.coverage();
    expect(report.byState).toEqual({ reporting: 2, silent: 2, unhealthy: 3, gone: 2 });
    expect(report.vms).toBe(9);
    expect(report.withoutHeartbeat).toBe(1);
    expect(report.byVersion).toEqual({
      '0.1.0': { reporting: 1, silent: 2, unhealthy: 3, gone: 2 },
      '0.2.0': { reporting: 1, silent: 0, unhealthy: 0, gone: 0 },
    });
    expect(report.byScaleSet['vmss-a']).toEqual({ reporting: 0, silent: 1, unhealthy: 0, gone: 1 });
    expect(report.byLocation).toEqual({ westeurope: { reporting: 2, silent: 2, unhealthy: 3, gone: 2 } });
    // Silent: longest quiet first, with when it was last seen and why.
    expect(report.silent.total).toBe(2);
    expect(report.silent.items.map((v) => [v.vmName, v.quietSeconds])).toEqual([
      ['web_stopped', 35_500 - 19_000],
      ['web_silent', 35_500 - 20_000],
    ]);
    expect(report.silent.items[0]!.reason).toMatch(
      /^no heartbeat for 4\.6 h \(interval 60 min\); stopped cleanly at/,
    );
    expect(report.silent.items[1]).toMatchObject({
      lastHeartbeatAt: iso(20_000),
      scaleSet: 'vmss-a',
      zone: '2',
      state: 'silent',
    });
    expect(report.unhealthy.items.map((v) => [v.vmName, v.problems.map((p) => p.code)])).toEqual([
      ['web_backlog', ['backlog', 'sink-failing']],
      ['web_imds', ['imds']],
      ['web_sick', ['dead-letters']],
    ]);
    expect(report.unhealthy.items[2]!.reason).toBe('sink hub: 3 dead letters');
    const gone = await h.coverageVms('gone');
    expect(gone.items.map((v) => [v.vmName, v.deletedAt])).toEqual([
      ['web_gone', null],
      ['web_deleted', iso(2100)],
    ]);
    expect(gone.items[1]!.reason).toMatch(/^deleted by Azure \(Preempt\/Terminate started /);
    expect(report.partitions).toEqual([{ partitionId: '0', readThrough: iso(35_500), lagSeconds: 500 }]);

    // Filters: one scale set.
    expect((await h.coverage({ scaleSet: 'vmss-a' })).byState).toEqual({
      reporting: 0,
      silent: 1,
      unhealthy: 0,
      gone: 1,
    });
  });

  it('leaves out a scale set and a region whose VMs have sent no heartbeat yet, and counts those VMs', async () => {
    const now = { at: 36_000 };
    const h = await open(kind, 'quiet-scale-set', now);
    const quiet = { scaleSet: 'vmss-quiet', location: 'northeurope' };
    await h.ingest([
      raw(heartbeatOf({ vm: 'web_ok', at: 35_000, scaleSet: 'vmss-a' })),
      raw(record('scheduled', { vm: 'web_q1', eventId: 'Q1', at: 3000, ...quiet })),
      raw(record('scheduled', { vm: 'web_q2', eventId: 'Q2', at: 3100, ...quiet }), '1'),
    ]);
    const at = new Date(T0 + now.at * 1000);
    // Before and after the refresh folds the counts' partition rows into one per key.
    for (const label of ['unfolded', 'folded']) {
      const report = await h.coverage();
      expect(report.withoutHeartbeat, label).toBe(2);
      expect(report.byState, label).toEqual({ reporting: 1, silent: 0, unhealthy: 0, gone: 0 });
      expect(Object.keys(report.byScaleSet), label).toEqual(['vmss-a']);
      expect(Object.keys(report.byLocation), label).toEqual(['westeurope']);
      expect(report, label).toEqual(await coverageReportScan(h.db, {}, at));
      const scoped = await h.coverage({ scaleSet: 'vmss-quiet' });
      expect(scoped.withoutHeartbeat, label).toBe(2);
      expect(scoped, label).toEqual(await coverageReportScan(h.db, { scaleSet: 'vmss-quiet' }, at));
      await h.refreshRollups();
    }
  });

  it('a lagging partition makes no VM silent; once it is read through, the quiet VM is', async () => {
    const now = { at: 36_000 };
    const h = await open(kind, 'lag', now);
    await h.ingest([raw(heartbeatOf({ vm: 'web_busy', at: 35_000 }), '0')]);
    // Partition 3 was last read at 20,000 s: its VM's heartbeat from then is as fresh as the partition.
    await h.ingest([raw(heartbeatOf({ vm: 'web_behind', at: 20_000 }), '3')]);
    let report = await h.coverage();
    expect(report.byState).toEqual({ reporting: 2, silent: 0, unhealthy: 0, gone: 0 });
    expect(report.partitions.find((p) => p.partitionId === '3')).toEqual({
      partitionId: '3',
      readThrough: iso(20_000),
      lagSeconds: 16_000,
    });
    // The consumer finds partition 3 caught up now: nothing came from web_behind since 20,000 s.
    await h.recordReadThrough('3', T0 + 36_000 * 1000);
    await h.recordReadThrough('3', T0 + 30_000 * 1000); // never moves back
    report = await h.coverage();
    expect(report.byState).toEqual({ reporting: 1, silent: 1, unhealthy: 0, gone: 0 });
    expect(report.silent.items[0]).toMatchObject({ vmName: 'web_behind', quietSeconds: 16_000 });
    // A read-through beyond now counts only up to now.
    await h.recordReadThrough('0', T0 + 99_000 * 1000);
    expect((await h.coverage()).silent.items.map((v) => v.vmName)).toEqual(['web_behind']);
  });

  it('keeps one row per VM (latest wins) and its days: re-deliveries and older heartbeats change nothing', async () => {
    const now = { at: 36_000 };
    const h = await open(kind, 'latest', now);
    const older = heartbeatOf({ vm: 'web_1', at: 30_000, sequence: 5 });
    const newer = heartbeatOf({ vm: 'web_1', at: 35_000, sequence: 6, sink: { deadLetters: 1 } });
    await h.ingest([raw(newer), raw(older)]);
    await h.ingest([raw(older)]);
    await h.ingest([raw(newer), raw(newer)]);
    const [row] = await h.db.all('SELECT count(*) AS n FROM latest_heartbeats');
    expect(Number(row!.n)).toBe(1);
    const report = await h.coverage();
    expect(report.unhealthy.items.map((v) => [v.vmName, v.lastHeartbeatAt])).toEqual([
      ['web_1', iso(35_000)],
    ]);
    // Covered in hours 8 (30,000 s) and 9 (35,000 s, unhealthy) of 2025-01-01; nothing counted twice.
    expect(await h.coverageDays('web_1')).toEqual({
      source: newer.source,
      days: [{ day: '2025-01-01', hours: [8, 9], unhealthyHours: [9] }],
    });
    expect(await h.stats()).toMatchObject({ received: 5, accepted: 0, rejected: 0, heartbeats: 5 });
    // Heartbeats are no history rows.
    const [records] = await h.db.all('SELECT count(*) AS n FROM records');
    expect(Number(records!.n)).toBe(0);
  });

  it('counts the VMs covered in a window (what every maintenance view shows), and the days of one VM', async () => {
    const now = { at: 3 * 86_400 };
    const h = await open(kind, 'window', now);
    await h.ingest([
      raw(heartbeatOf({ vm: 'web_1', at: 3600, location: 'westeurope' })),
      raw(heartbeatOf({ vm: 'web_1', at: 86_400 + 7200, location: 'westeurope' })),
      raw(heartbeatOf({ vm: 'web_2', at: 2 * 86_400 + 60, location: 'northeurope' })),
      raw(heartbeatOf({ vm: 'web_3', at: -86_400, location: 'northeurope' })),
    ]);
    expect(await h.coveredVms({})).toBe(3);
    expect(await h.coveredVms({ since: iso(0), until: iso(86_400) })).toBe(1);
    expect(await h.coveredVms({ since: iso(0), until: iso(3 * 86_400) })).toBe(2);
    expect(await h.coveredVms({ since: iso(86_400), location: 'northeurope' })).toBe(1);
    expect(await h.coveredVms({ until: iso(0) })).toBe(1);
    expect((await h.coverageDays('web_1'))!.days.map((d) => [d.day, d.hours])).toEqual([
      ['2025-01-01', [1]],
      ['2025-01-02', [2]],
    ]);
    expect((await h.coverageDays('web_1', { since: iso(86_400) }))!.days.map((d) => d.day)).toEqual([
      '2025-01-02',
    ]);
    expect(await h.coverageDays('nobody')).toBeUndefined();
  });

  it('pages the silent VMs with a cursor: none twice, none missed, the total on every page', async () => {
    const now = { at: 200_000 };
    const h = await open(kind, 'paging', now);
    await h.ingest(
      Array.from({ length: 7 }, (_, i) => raw(heartbeatOf({ vm: `web_${i}`, at: 1000 + i * 100 }))).concat([
        raw(heartbeatOf({ vm: 'web_fresh', at: 199_000 })),
      ]),
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await h.coverageVms('silent', {}, { limit: 3, cursor });
      expect(page.total).toBe(7);
      seen.push(...page.items.map((v) => v.vmName));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toEqual(Array.from({ length: 7 }, (_, i) => `web_${i}`));
  });

  it('rejects an invalid heartbeat with the reason, keeps the rest; prunes heartbeats with the retention', async () => {
    const now = { at: 36_000 };
    const h = await open(kind, 'reject', now);
    const bad = structuredClone(heartbeatOf({ vm: 'web_bad', at: 100 })) as unknown as {
      data: { sinks: unknown };
    };
    bad.data.sinks = 'all fine';
    const result = await h.ingest([
      { body: bad, partitionId: '0', sequenceNumber: seq++, enqueuedAt: new Date(T0) },
      raw(heartbeatOf({ vm: 'web_1', at: -40 * 86_400 })),
      raw(heartbeatOf({ vm: 'web_2', at: 100 })),
    ]);
    expect(result).toMatchObject({ heartbeats: 2, rejected: 1 });
    expect(result.rejections[0]!.reason).toBe('data.sinks: expected an array, got a string');
    const removed = await h.prune(new Date(T0 - 30 * 86_400 * 1000));
    expect(removed).toMatchObject({ heartbeats: 1, coverageDays: 1 });
    expect((await h.coverage()).vms).toBe(1);
  });

  it('the counted report equals a scan of every VM: at any clock, filter and page, after deletions and a prune', async () => {
    const fleet = generateFleet({ vms: 200, days: 8, heartbeatIntervalSeconds: 7200, heartbeatDays: 4 });
    const end = Date.parse(fleet.window.end);
    const now = { at: (end - T0) / 1000 };
    const h = await open(kind, 'oracle', now);
    // As the hub hands them over: per partition (by vmId, as the Event Hubs sink keys them), in time order.
    const buffers = new Map<string, RawFleetEvent[]>();
    const flush = async (partitionId: string) => {
      const batch = buffers.get(partitionId) ?? [];
      buffers.set(partitionId, []);
      if (batch.length > 0) await h.ingest(batch);
    };
    for (const event of fleet.events()) {
      const partitionId = String(
        createHash('md5')
          .update(event.vmid || event.source)
          .digest()
          .readUInt32BE(0) % 4,
      );
      const batch = buffers.get(partitionId) ?? [];
      batch.push({ body: event, partitionId, sequenceNumber: seq++, enqueuedAt: new Date(event.time) });
      buffers.set(partitionId, batch);
      if (batch.length === 50) await flush(partitionId);
    }
    for (const partitionId of [...buffers.keys()]) await flush(partitionId);

    const tidy = (rows: Array<Record<string, unknown>>) => {
      const key = (r: Record<string, unknown>) =>
        [r.state, r.location, r.zone, r.scale_set, r.version, r.interval_seconds].join('\u0000');
      return rows
        .map((r) => ({ ...r, interval_seconds: Number(r.interval_seconds), n: Number(r.n) }))
        .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    };
    // The counts kept (by ingest, prune and the sweep) and what each row's counted state says, in one snapshot
    // (the history's refresh timer may sweep meanwhile).
    const keptAndRecounted = () =>
      h.db.transaction(async (tx) => {
        if (tx.dialect === 'postgres') await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
        const kept = tidy(
          await tx.all(
            `SELECT state, location, zone, scale_set, version, interval_seconds, sum(vms) AS n FROM coverage_counts
             GROUP BY state, location, zone, scale_set, version, interval_seconds HAVING sum(vms) <> 0`,
          ),
        );
        const rows: Array<Record<string, unknown>> = [];
        for (const select of COUNTED_SELECTS)
          for (const { partition_id: _, vms, ...row } of await tx.all(select)) rows.push({ ...row, n: vms });
        return { kept, recounted: tidy(rows) };
      });
    const expectKeptCounts = async () => {
      const { kept, recounted } = await keptAndRecounted();
      expect(kept).toEqual(recounted);
      return kept;
    };
    const compare = async (label: string) => {
      const settings = await readCoverageSettings(h.db);
      const at = new Date(T0 + now.at * 1000);
      const report = await h.coverage();
      const states = Object.values(report.byState).reduce((a, b) => a + b, 0);
      expect(states, label).toBe(report.vms);
      for (const filter of [
        {},
        { location: report.byLocation && Object.keys(report.byLocation)[0] },
        { zone: '2' },
        { scaleSet: '(none)' },
        { scaleSet: Object.keys(report.byScaleSet).at(-1) },
      ]) {
        const counted = await h.coverage(filter, 7);
        const scanned = await coverageReportScan(h.db, filter, at, undefined, 7);
        expect(counted, `${label} ${JSON.stringify(filter)}`).toEqual(scanned);
      }
      for (const state of ['silent', 'unhealthy'] as CoverageState[]) {
        const pages = async (
          list: (
            cursor: string | undefined,
          ) => Promise<{ items: Array<{ source: string }>; nextCursor: string | null; total: number }>,
        ) => {
          const seen: string[] = [];
          const totals = new Set<number>();
          let cursor: string | undefined;
          do {
            const page = await list(cursor);
            seen.push(...page.items.map((v) => v.source));
            totals.add(page.total);
            cursor = page.nextCursor ?? undefined;
          } while (cursor !== undefined);
          return { seen, totals: [...totals] };
        };
        const counted = await pages((cursor) => h.coverageVms(state, {}, { limit: 4, cursor }));
        const scanned = await pages((cursor) =>
          listCoverageVmsScan(h.db, state, {}, { limit: 4, cursor }, at, settings),
        );
        expect(counted, `${label} ${state}`).toEqual(scanned);
      }
      return report;
    };

    // The counts kept by ingest are what the rows say.
    await expectKeptCounts();
    const atEnd = await compare('at the end');
    expect(atEnd.byState.silent + atEnd.byState.unhealthy).toBeGreaterThan(0);
    expect(atEnd.byState.gone).toBeGreaterThan(0);
    expect(atEnd.withoutHeartbeat).toBeGreaterThan(0);
    // The consumer finds partitions 0-2 caught up later; partition 3 lags: its VMs are quiet only up to there.
    const readThrough = async () => {
      for (const p of ['0', '1', '2']) await h.recordReadThrough(p, T0 + now.at * 1000);
    };
    now.at += 3 * 3600;
    await readThrough();
    const later = await compare('three hours after the end (past the interval and the margin)');
    expect(later.byState.silent).toBeGreaterThan(atEnd.byState.silent);
    now.at += 8 * 86_400;
    await readThrough();
    const muchLater = await compare('eight days later');
    expect(muchLater.byState.gone).toBeGreaterThan(later.byState.gone);
    expect(muchLater.byState.reporting + muchLater.byState.unhealthy).toBeGreaterThan(0);

    const removed = await h.prune(new Date(end - 2 * 86_400_000));
    expect(removed.heartbeats).toBeGreaterThan(0);
    expect(removed.vms).toBeGreaterThan(0);
    await expectKeptCounts();
    now.at = (end - T0) / 1000;
    await compare('after a prune');

    // Swept at this clock, the kept counts are the report's: a read moves no VM.
    await h.refreshRollups();
    const swept = await expectKeptCounts();
    const byState = { reporting: 0, silent: 0, unhealthy: 0, gone: 0 };
    for (const row of swept as Array<Record<string, unknown>>)
      if (row.state !== 'none') byState[row.state as CoverageState] += Number(row.n);
    expect(byState).toEqual((await coverageReportScan(h.db, {}, new Date(T0 + now.at * 1000))).byState);
  });
});

/**
 * The operator views of the fleet history (src/fleet/history/views.ts) on BOTH stores — a real SQLite history
 * (openHistory on a temporary file) and a real PostgreSQL one (createTestDatabase on the run's server) — filled
 * through history.ingest with the hand-made fixture of test/support/fleet-views-fixture.ts, whose answers are
 * known exactly (a broadcast, overlapping events in one scale set, pending events), read through FleetHistory
 * (both stores) and through the real dashboard over HTTP (the SQLite run).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningDashboard, startDashboard } from '../../../src/fleet/dashboard/server.ts';
import {
  type BlastRadiusRow,
  type EventApprovals,
  type EventRecord,
  type FleetHistory,
  type LeadTimeAndImpact,
  openHistory,
  type TimeSeries,
} from '../../../src/fleet/history/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { iso } from '../../support/fleet-records.ts';
import { D, viewsFixture as fixture } from '../../support/fleet-views-fixture.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

/** The fixture's blast radius at threshold 2, in the view's order (pending, then peak, descending; scope; name). */
const BLAST: Array<
  Pick<BlastRadiusRow, 'scope' | 'name' | 'pendingVms' | 'maxConcurrentVms' | 'peakAt' | 'overThreshold'>
> = [
  {
    scope: 'location',
    name: 'westeurope',
    pendingVms: 3,
    maxConcurrentVms: 3,
    peakAt: iso(87_430),
    overThreshold: true,
  },
  {
    scope: 'scaleSet',
    name: 'web',
    pendingVms: 3,
    maxConcurrentVms: 3,
    peakAt: iso(87_430),
    overThreshold: true,
  },
  { scope: 'zone', name: '1', pendingVms: 3, maxConcurrentVms: 3, peakAt: iso(87_430), overThreshold: true },
  {
    scope: 'location',
    name: 'eastus2',
    pendingVms: 1,
    maxConcurrentVms: 0,
    peakAt: null,
    overThreshold: false,
  },
  { scope: 'scaleSet', name: 'spot', pendingVms: 1, maxConcurrentVms: 0, peakAt: null, overThreshold: false },
  { scope: 'zone', name: '3', pendingVms: 1, maxConcurrentVms: 0, peakAt: null, overThreshold: false },
  {
    scope: 'scaleSet',
    name: '(none)',
    pendingVms: 0,
    maxConcurrentVms: 2,
    peakAt: iso(4600),
    overThreshold: false,
  },
  {
    scope: 'zone',
    name: '(none)',
    pendingVms: 0,
    maxConcurrentVms: 2,
    peakAt: iso(4600),
    overThreshold: false,
  },
  {
    scope: 'scaleSet',
    name: 'api',
    pendingVms: 0,
    maxConcurrentVms: 1,
    peakAt: iso(173_510),
    overThreshold: false,
  },
  {
    scope: 'zone',
    name: '2',
    pendingVms: 0,
    maxConcurrentVms: 1,
    peakAt: iso(173_510),
    overThreshold: false,
  },
];

const pick = (rows: BlastRadiusRow[]) =>
  rows.map(({ scope, name, pendingVms, maxConcurrentVms, peakAt, overThreshold }) => ({
    scope,
    name,
    pendingVms,
    maxConcurrentVms,
    peakAt,
    overThreshold,
  }));

const spread = (count: number, p50: number | null, p90: number | null, max: number | null) => ({
  count,
  p50,
  p90,
  max,
});

const STORES = ['sqlite', 'postgres'] as const;

describe.each(STORES)('operator views on the %s store', (store) => {
  const tmp = makeTempDir(`sef-views-${store}-`);
  let history: FleetHistory;
  let drop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    let database = join(tmp.dir, 'fleet.db');
    if (store === 'postgres') {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      database = db.url;
      drop = db.drop;
    }
    history = await openHistory({ database });
    const result = await history.ingest(
      fixture().map((body, i) => ({ body, partitionId: '0', sequenceNumber: i, enqueuedAt: new Date(0) })),
    );
    expect(result.rejections).toEqual([]);
  });

  afterAll(async () => {
    await history?.close();
    await drop?.();
    tmp.cleanup();
  });

  it('counts maintenance events per UTC day by type, with the impact beside them', async () => {
    const series = await history.timeSeries();
    expect(series.types).toEqual(['Freeze', 'Reboot', 'Redeploy', 'Terminate']);
    expect(series.days).toEqual([
      {
        day: '2025-01-01',
        events: 1,
        byType: { Reboot: 1 },
        affectedVms: 2,
        observedEvents: 1,
        observedSecondsSum: 80,
        observedSecondsMax: 80,
      },
      {
        day: '2025-01-02',
        events: 3,
        byType: { Freeze: 3 },
        affectedVms: 3,
        observedEvents: 3,
        observedSecondsSum: 15.2,
        observedSecondsMax: 9,
      },
      {
        day: '2025-01-03',
        events: 2,
        byType: { Freeze: 2 },
        affectedVms: 2,
        observedEvents: 2,
        observedSecondsSum: 4.5,
        observedSecondsMax: 3,
      },
      {
        day: '2025-01-04',
        events: 3,
        byType: { Redeploy: 1, Reboot: 1, Terminate: 1 },
        affectedVms: 4,
        observedEvents: 0,
        observedSecondsSum: 0,
        observedSecondsMax: null,
      },
    ]);
    // The filters: one scale set, a window.
    const web = await history.timeSeries({ scaleSet: 'web' });
    expect(web.days.map((d) => [d.day, d.byType])).toEqual([
      ['2025-01-02', { Freeze: 3 }],
      ['2025-01-03', { Freeze: 1 }],
      ['2025-01-04', { Redeploy: 1, Reboot: 1 }],
    ]);
    const window = await history.timeSeries({ since: iso(D), until: iso(3 * D) });
    expect(window.days.map((d) => [d.day, d.events])).toEqual([
      ['2025-01-02', 3],
      ['2025-01-03', 2],
    ]);
  });

  it('computes the blast radius: pending VMs now and the most impacted at once, over the threshold', async () => {
    const all = await history.blastRadius({}, 2, { limit: 100 });
    expect(pick(all.items)).toEqual(BLAST);
    expect(all).toMatchObject({ threshold: 2, total: 10, overThreshold: 3, nextCursor: null });
    expect(all.items[0]).toMatchObject({ pendingOverThreshold: true, peakOverThreshold: true });

    // Paged: 4 + 4 + 2, each row once, in order; the totals on every page.
    const seen: BlastRadiusRow[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await history.blastRadius({}, 2, { limit: 4, cursor });
      expect(page).toMatchObject({ total: 10, overThreshold: 3 });
      seen.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(pick(seen)).toEqual(BLAST);

    // Another threshold, one kind of scope, and the filters.
    const three = await history.blastRadius({}, 3);
    expect(three.overThreshold).toBe(0);
    expect(three.items.every((r) => !r.overThreshold)).toBe(true);
    const zones = await history.blastRadius({}, 2, {}, 'zone');
    expect(zones.items.map((r) => [r.name, r.pendingVms, r.maxConcurrentVms])).toEqual([
      ['1', 3, 3],
      ['3', 1, 0],
      ['(none)', 0, 2],
      ['2', 0, 1],
    ]);
    expect(zones.total).toBe(4);
    const zone1 = await history.blastRadius({ zone: '1' }, 2);
    expect(zone1.items.map((r) => `${r.scope}:${r.name}`)).toEqual([
      'location:westeurope',
      'scaleSet:web',
      'zone:1',
    ]);
    // Day 2 only: F4 (web) and F5 (api) overlap — two at once in the region, one per scale set and zone.
    const day2 = await history.blastRadius({ since: iso(2 * D), until: iso(3 * D) }, 2);
    expect(pick(day2.items)).toEqual([
      {
        scope: 'location',
        name: 'westeurope',
        pendingVms: 0,
        maxConcurrentVms: 2,
        peakAt: iso(173_510),
        overThreshold: false,
      },
      {
        scope: 'scaleSet',
        name: 'api',
        pendingVms: 0,
        maxConcurrentVms: 1,
        peakAt: iso(173_510),
        overThreshold: false,
      },
      {
        scope: 'scaleSet',
        name: 'web',
        pendingVms: 0,
        maxConcurrentVms: 1,
        peakAt: iso(173_500),
        overThreshold: false,
      },
      {
        scope: 'zone',
        name: '1',
        pendingVms: 0,
        maxConcurrentVms: 1,
        peakAt: iso(173_500),
        overThreshold: false,
      },
      {
        scope: 'zone',
        name: '2',
        pendingVms: 0,
        maxConcurrentVms: 1,
        peakAt: iso(173_510),
        overThreshold: false,
      },
    ]);
  });

  it('gives notice lead time and observed impact per type and region (count, p50, p90, max)', async () => {
    const view = await history.leadTimeAndImpact();
    const freeze = {
      events: 5,
      notice: spread(5, 780, 900, 900),
      observed: spread(5, 3, 9, 9),
    };
    const reboot = { events: 2, notice: spread(2, 900, 7200, 7200), observed: spread(1, 80, 80, 80) };
    const redeploy = { events: 1, notice: spread(1, 300, 300, 300), observed: spread(0, null, null, null) };
    const terminate = { events: 1, notice: spread(1, 30, 30, 30), observed: spread(0, null, null, null) };
    expect(view.rows).toEqual([
      { eventType: 'Freeze', location: '(all)', ...freeze },
      { eventType: 'Freeze', location: 'westeurope', ...freeze },
      { eventType: 'Reboot', location: '(all)', ...reboot },
      { eventType: 'Reboot', location: 'westeurope', ...reboot },
      { eventType: 'Redeploy', location: '(all)', ...redeploy },
      { eventType: 'Redeploy', location: 'westeurope', ...redeploy },
      { eventType: 'Terminate', location: '(all)', ...terminate },
      { eventType: 'Terminate', location: 'eastus2', ...terminate },
    ]);
    const web = await history.leadTimeAndImpact({ scaleSet: 'web', eventType: 'Freeze' });
    expect(web.rows).toEqual([
      {
        eventType: 'Freeze',
        location: '(all)',
        events: 4,
        notice: spread(4, 780, 900, 900),
        observed: spread(4, 2, 9, 9),
      },
      {
        eventType: 'Freeze',
        location: 'westeurope',
        events: 4,
        notice: spread(4, 780, 900, 900),
        observed: spread(4, 2, 9, 9),
      },
    ]);
  });

  it("lists an event's records per affected VM (paged) and its approvals", async () => {
    const entries: EventRecord[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await history.eventRecords('B1', 1, {}, { limit: 3, cursor });
      entries.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(entries.map((e) => [e.vmName, e.transition, e.time])).toEqual([
      ['av_a', 'scheduled', iso(3600)],
      ['av_a', 'approved', iso(4000)],
      ['av_a', 'started', iso(4600)],
      ['av_a', 'completed', iso(4700)],
      ['av_b', 'scheduled', iso(3600)],
      ['av_b', 'approved', iso(4010)],
      ['av_b', 'started', iso(4600)],
      ['av_b', 'completed', iso(4720)],
    ]);
    expect(entries.every((e) => e.affectsVm && e.eventId === 'B1' && e.eventType === 'Reboot')).toBe(true);
    expect(entries[1]?.detail).toBe('rule reboot-rule, posted');
    expect(entries[3]?.detail).toBe('observed, downtime 60 s');
    const everyone = await history.eventRecords('B1', 1, { affectsOnly: false });
    expect(everyone.items.filter((e) => !e.affectsVm).map((e) => [e.vmName, e.transition])).toEqual([
      ['av_c', 'scheduled'],
    ]);
    expect(everyone.items).toHaveLength(9);

    const approvals = await history.eventApprovals('B1');
    expect(approvals).toEqual({
      outcome: 'us',
      rule: 'reboot-rule',
      approvedAt: iso(4000),
      truncated: false,
      lapsed: [],
      records: [
        {
          source: expect.stringMatching(/\/av_a$/),
          vmName: 'av_a',
          time: iso(4000),
          approvedAt: iso(4000),
          rule: 'reboot-rule',
          leader: true,
          posted: true,
          dryRun: false,
          hooks: 1,
          hooksFailed: 0,
        },
        {
          source: expect.stringMatching(/\/av_b$/),
          vmName: 'av_b',
          time: iso(4010),
          approvedAt: iso(4010),
          rule: 'reboot-rule',
          leader: false,
          posted: false,
          dryRun: false,
          hooks: 1,
          hooksFailed: 0,
        },
      ],
    } satisfies EventApprovals);
    expect(await history.eventApprovals('F3')).toMatchObject({
      outcome: 'lapsed',
      records: [],
      lapsed: ['web_3'],
    });
    expect(await history.eventApprovals('NOPE')).toBeUndefined();
  });

  if (store === 'sqlite')
    describe('over HTTP', () => {
      let dashboard: RunningDashboard;
      beforeAll(async () => {
        dashboard = await startDashboard({ history, logger: silentLogger() });
      });
      afterAll(async () => {
        await dashboard?.close();
      });
      const get = (path: string) => fetch(new URL(path, dashboard.url));
      async function getJson<T>(path: string): Promise<T> {
        const res = await get(path);
        expect(res.status, path).toBe(200);
        return (await res.json()) as T;
      }

      it('serves the views with the filters, paging and 400s naming the parameter', async () => {
        const series = await getJson<TimeSeries>('/api/timeseries?type=Freeze');
        expect(series.days.map((d) => [d.day, d.events])).toEqual([
          ['2025-01-02', 3],
          ['2025-01-03', 2],
        ]);
        const lead = await getJson<LeadTimeAndImpact>('/api/lead-time?location=eastus2');
        expect(lead.rows.map((r) => [r.eventType, r.location, r.notice.max])).toEqual([
          ['Terminate', '(all)', 30],
          ['Terminate', 'eastus2', 30],
        ]);

        // The dashboard's default threshold (10): nothing over it; threshold=2 per request.
        const first = await get('/api/blast-radius?limit=4');
        expect(first.headers.get('x-blast-radius-threshold')).toBe('10');
        expect(first.headers.get('x-over-threshold-count')).toBe('0');
        const paged = await get('/api/blast-radius?threshold=2&limit=4');
        expect(paged.headers.get('x-total-count')).toBe('10');
        expect(paged.headers.get('x-over-threshold-count')).toBe('3');
        const rows = (await paged.json()) as BlastRadiusRow[];
        expect(pick(rows)).toEqual(BLAST.slice(0, 4));
        const link = /^<([^>]+)>; rel="next"$/.exec(paged.headers.get('link') ?? '')?.[1] ?? '';
        expect(link).toContain('threshold=2');
        expect(pick(await getJson<BlastRadiusRow[]>(link))).toEqual(BLAST.slice(4, 8));
        // The configured threshold (dashboard.blastRadiusThreshold) is the default of a dashboard started with it.
        const configured = await startDashboard({ history, logger: silentLogger(), blastRadiusThreshold: 2 });
        try {
          const r = await fetch(new URL('/api/blast-radius?limit=4', configured.url));
          expect(r.headers.get('x-blast-radius-threshold')).toBe('2');
          expect(r.headers.get('x-over-threshold-count')).toBe('3');
        } finally {
          await configured.close();
        }
        expect(pick(await getJson<BlastRadiusRow[]>('/api/blast-radius?threshold=2&scaleSet=web'))).toEqual(
          BLAST.filter((r) => ['westeurope', 'web', '1'].includes(r.name)),
        );

        const records = await get('/api/event/records?id=B1&limit=5');
        expect(records.headers.get('x-next-cursor')).not.toBeNull();
        expect(((await records.json()) as EventRecord[]).map((e) => e.vmName)).toEqual([
          'av_a',
          'av_a',
          'av_a',
          'av_a',
          'av_b',
        ]);
        const observers = await getJson<EventRecord[]>(
          '/api/event/records?id=B1&affectsOnly=false&limit=100',
        );
        expect(observers).toHaveLength(9);
        const approvals = await getJson<EventApprovals>('/api/event/approvals?id=B1&occurrence=1');
        expect(approvals.records.map((r) => [r.vmName, r.leader, r.posted])).toEqual([
          ['av_a', true, true],
          ['av_b', false, false],
        ]);
        expect((await get('/api/event/approvals?id=NOPE')).status).toBe(404);

        for (const [path, parameter] of [
          ['/api/blast-radius?threshold=many', 'threshold'],
          ['/api/blast-radius?scope=rack', 'scope'],
          ['/api/blast-radius?cursor=bogus', 'cursor'],
          ['/api/timeseries?since=yesterday', 'since'],
          ['/api/lead-time?until=2025-13-45', 'until'],
          ['/api/event/records', 'id'],
          ['/api/event/records?id=B1&affectsOnly=maybe', 'affectsOnly'],
          ['/api/event/approvals?id=B1&occurrence=0', 'occurrence'],
        ] as const) {
          const res = await get(path);
          expect(res.status, path).toBe(400);
          expect(((await res.json()) as { parameter: string }).parameter, path).toBe(parameter);
        }
      });
    });
});

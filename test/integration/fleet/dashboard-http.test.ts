/**
 * The fleet dashboard over real HTTP, on a real SQLite fleet history (openHistory on a temporary file, filled
 * with history.ingest): maintenance events counted once (a broadcast reported by three VMs, one of them only an
 * observer), paging with Link / X-Next-Cursor, 400s naming the bad parameter, the filter values, an event's
 * detail, streamed CSV/JSON exports (formula neutralisation, many pages), and the issue-15 checks (date filter
 * placeholders show the format; the timeline rounds a stall to whole ms).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { EXPORT_PAGE_SIZE, MAINTENANCE_COLUMNS } from '../../../src/fleet/dashboard/export.ts';
import { type RunningDashboard, startDashboard } from '../../../src/fleet/dashboard/server.ts';
import {
  type FleetHistory,
  type FleetSummary,
  type MaintenanceView,
  type ObservationView,
  openHistory,
} from '../../../src/fleet/history/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { freezeLifecycle, record } from '../../support/fleet-records.ts';
import { makeTempDir } from '../../support/tmp.ts';

/** A VM name a spreadsheet would evaluate as a formula (the validator accepts it: any name up to 256 chars). */
const FORMULA_VM = '=HYPERLINK("http://evil.example","click")';
/** Events of the bulk history: more than two export pages. */
const BULK_EVENTS = 2 * EXPORT_PAGE_SIZE + 137;

const tmp = makeTempDir('sef-dashboard-http-');
let history: FleetHistory;
let dashboard: RunningDashboard;
let sequence = 0;

async function ingest(target: FleetHistory, records: readonly LifecycleRecord[]): Promise<void> {
  const result = await target.ingest(
    records.map((body) => ({ body, partitionId: '0', sequenceNumber: sequence++, enqueuedAt: new Date(0) })),
  );
  expect(result.rejections).toEqual([]);
}

/** The broadcast: EventId B1 reported by vm_a and vm_b (in its Resources) and by vm_c, which it does not affect. */
function broadcast(): LifecycleRecord[] {
  return ['vm_a', 'vm_b', 'vm_c'].map((vm) =>
    record('scheduled', {
      vm,
      eventId: 'B1',
      eventType: 'Reboot',
      at: 7200,
      firstSeenAt: 7200,
      notBeforeAt: 8100,
      zone: '2',
      extra: { affectsThisVm: vm !== 'vm_c', Resources: ['vm_a', 'vm_b'] },
    }),
  );
}

beforeAll(async () => {
  history = await openHistory({ database: join(tmp.dir, 'fleet.db') });
  const web1 = freezeLifecycle('web_1', 'E1');
  // A stall with a fraction: the timeline shows whole milliseconds.
  ((web1[2] as LifecycleRecord).data.observedImpact as Record<string, unknown>).longestStallMs =
    59.52411799999754;
  await ingest(history, [
    ...web1,
    ...freezeLifecycle('web_2', 'E2'),
    ...freezeLifecycle(FORMULA_VM, 'E3'),
    ...broadcast(),
    // Re-delivered: duplicates change nothing.
    ...broadcast(),
  ]);
  await history.setRetention('400d');
  dashboard = await startDashboard({ history, logger: silentLogger() });
});

afterAll(async () => {
  await dashboard?.close();
  await history?.close();
  tmp.cleanup();
});

async function get(path: string): Promise<Response> {
  return fetch(new URL(path, dashboard.url));
}

async function getJson<T>(path: string): Promise<T> {
  const res = await get(path);
  expect(res.status, `${path}: ${res.status}`).toBe(200);
  return (await res.json()) as T;
}

describe('fleet dashboard over HTTP on a SQLite history', () => {
  it('serves the page with the security headers and the date placeholders', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    const placeholders = [...html.matchAll(/name="(since|until)" placeholder="([^"]*)"/g)].map((m) => [
      m[1],
      m[2],
    ]);
    expect(placeholders).toEqual([
      ['since', 'YYYY-MM-DDThh:mm:ssZ'],
      ['until', 'YYYY-MM-DDThh:mm:ssZ'],
    ]);
    expect(html).not.toMatch(/placeholder="20\d\d-/);
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
    expect((await get('/assets/app.js')).headers.get('content-type')).toContain('javascript');
    expect((await fetch(new URL('/api/summary', dashboard.url), { method: 'POST' })).status).toBe(405);
    expect((await get('/nowhere')).status).toBe(404);
  });

  it('counts the broadcast once: summary, pending, events, observations', async () => {
    const summary = await getJson<FleetSummary>('/api/summary');
    expect(summary.events).toBe(4); // E1, E2, E3 and B1 (once, although three VMs reported it)
    expect(summary.vms).toBe(5); // web_1, web_2, the formula VM, vm_a, vm_b — not the observer vm_c
    expect(summary.reportingVms).toBe(6);
    expect(summary.pendingTotal).toBe(1);
    expect(summary.retention).toBe('400d');
    expect(summary.pending.map((e) => [e.eventId, e.affectedVms, e.observers])).toEqual([['B1', 2, 1]]);
    expect(summary.ingest.duplicates).toBe(3);

    const pendingRes = await get('/api/pending');
    expect(pendingRes.headers.get('x-total-count')).toBe('1');
    expect(pendingRes.headers.get('link')).toBeNull();
    const pending = (await pendingRes.json()) as MaintenanceView[];
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({
      eventId: 'B1',
      eventType: 'Reboot',
      status: 'scheduled',
      affectedVms: 2,
      affectedNames: ['vm_a', 'vm_b'],
      reportingVms: 3,
      observers: 1,
    });

    const events = await getJson<MaintenanceView[]>('/api/events?type=Reboot');
    expect(events.map((e) => e.eventId)).toEqual(['B1']);
    const observations = await getJson<ObservationView[]>('/api/observations?type=Reboot');
    expect(observations.map((o) => [o.vmName, o.affectsVm]).sort()).toEqual([
      ['vm_a', true],
      ['vm_b', true],
      ['vm_c', false],
    ]);
    const affected = await getJson<ObservationView[]>('/api/observations?type=Reboot&affectsOnly=true');
    expect(affected.map((o) => o.vmName).sort()).toEqual(['vm_a', 'vm_b']);
    // The filters: zone, VM name, time window.
    expect((await getJson<MaintenanceView[]>('/api/events?zone=2')).map((e) => e.eventId)).toEqual(['B1']);
    expect((await getJson<MaintenanceView[]>('/api/events?vm=WEB_')).map((e) => e.eventId).sort()).toEqual([
      'E1',
      'E2',
    ]);
    expect(
      (await getJson<MaintenanceView[]>('/api/events?since=2025-01-01T01:00:00Z')).map((e) => e.eventId),
    ).toEqual(['B1']);
    expect((await getJson<FleetSummary>('/api/summary?until=2025-01-01T01:00:00Z')).events).toBe(3);
  });

  it('pages every list with Link / X-Next-Cursor, each item once', async () => {
    const all = await getJson<MaintenanceView[]>('/api/events');
    expect(all).toHaveLength(4);
    const seen: string[] = [];
    let next: string | null = '/api/events?limit=1';
    let pages = 0;
    while (next !== null) {
      const res: Response = await get(next);
      expect(res.status).toBe(200);
      const items = (await res.json()) as MaintenanceView[];
      expect(items).toHaveLength(1);
      seen.push(...items.map((e) => `${e.eventId}#${e.occurrence}`));
      pages++;
      const link = res.headers.get('link');
      const cursor = res.headers.get('x-next-cursor');
      if (link === null) {
        expect(cursor).toBeNull();
        next = null;
      } else {
        const match = /^<([^>]+)>; rel="next"$/.exec(link);
        expect(match).not.toBeNull();
        const url = new URL(match?.[1] ?? '', dashboard.url);
        expect(url.pathname).toBe('/api/events');
        expect(url.searchParams.get('limit')).toBe('1');
        expect(url.searchParams.get('cursor')).toBe(cursor);
        next = `${url.pathname}${url.search}`;
      }
    }
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(all.map((e) => `${e.eventId}#${e.occurrence}`));

    // The filter is kept in the next link; observations and VMs page the same way.
    const observationsPage = await get('/api/observations?type=Reboot&limit=2');
    const link = observationsPage.headers.get('link') ?? '';
    expect(link).toContain('type=Reboot');
    const rest = (await (await get(/<([^>]+)>/.exec(link)?.[1] ?? '')).json()) as ObservationView[];
    const first = (await observationsPage.json()) as ObservationView[];
    expect([...first, ...rest].map((o) => o.vmName).sort()).toEqual(['vm_a', 'vm_b', 'vm_c']);
    const vms = await get('/api/vms?limit=5');
    expect(((await vms.json()) as unknown[]).length).toBe(5);
    const moreVms = (await (
      await get(`/api/vms?limit=5&cursor=${vms.headers.get('x-next-cursor')}`)
    ).json()) as Array<{
      vmName: string;
    }>;
    expect(moreVms.map((v) => v.vmName)).toEqual(['web_2']);
  });

  it('answers a bad parameter with a 400 naming it', async () => {
    const cases: Array<[string, string]> = [
      ['/api/events?limit=0', 'limit'],
      ['/api/events?limit=1001', 'limit'],
      ['/api/events?limit=ten', 'limit'],
      ['/api/pending?limit=-1', 'limit'],
      ['/api/events?cursor=not-a-cursor', 'cursor'],
      ['/api/observations?cursor=WzFd', 'cursor'],
      ['/api/vms?cursor=%7B', 'cursor'],
      ['/api/events?since=yesterday', 'since'],
      ['/api/summary?until=2025-13-45', 'until'],
      ['/api/export.csv?since=soon', 'since'],
      ['/api/export.json?view=everything', 'view'],
      ['/api/observations?affectsOnly=maybe', 'affectsOnly'],
      ['/api/values?field=password', 'field'],
      ['/api/values', 'field'],
      ['/api/event', 'id'],
      ['/api/event?id=B1&occurrence=0', 'occurrence'],
      ['/api/timeline', 'vm'],
    ];
    for (const [path, parameter] of cases) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/json');
      const body = (await res.json()) as { error: string; parameter: string };
      expect(body.parameter, path).toBe(parameter);
      expect(body.error, path).toContain(parameter);
    }
  });

  it('lists the distinct values of the filter fields', async () => {
    expect(await getJson<string[]>('/api/values?field=type')).toEqual(['Freeze', 'Reboot']);
    expect(await getJson<string[]>('/api/values?field=status')).toEqual(['completed', 'scheduled']);
    expect(await getJson<string[]>('/api/values?field=location')).toEqual(['westeurope']);
    expect(await getJson<string[]>('/api/values?field=zone')).toEqual(['1', '2']);
    expect(await getJson<string[]>('/api/values?field=scaleSet')).toEqual(['(none)']);
    // Paged like every list: the next page's cursor in x-next-cursor and a Link header.
    const first = await get('/api/values?field=zone&limit=1');
    expect(await first.json()).toEqual(['1']);
    const cursor = first.headers.get('x-next-cursor');
    expect(first.headers.get('link')).toContain(`cursor=${cursor}`);
    const second = await get(`/api/values?field=zone&limit=1&cursor=${cursor}`);
    expect(await second.json()).toEqual(['2']);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    expect((await get('/api/values?field=zone&cursor=nonsense')).status).toBe(400);
  });

  it("shows one event's detail with every VM's observation, 404 for an unknown one", async () => {
    const detail = await getJson<{ event: MaintenanceView; observations: ObservationView[] }>(
      '/api/event?id=B1&occurrence=1',
    );
    expect(detail.event).toMatchObject({ eventId: 'B1', affectedNames: ['vm_a', 'vm_b'], observers: 1 });
    expect(detail.observations.map((o) => [o.vmName, o.affectsVm])).toEqual([
      ['vm_a', true],
      ['vm_b', true],
      ['vm_c', false],
    ]);
    expect((await getJson<{ event: MaintenanceView }>('/api/event?id=E1')).event.eventId).toBe('E1');
    const missing = await get('/api/event?id=NOPE&occurrence=1');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toContain('NOPE');
    expect((await get('/api/event?id=B1&occurrence=2')).status).toBe(404);
  });

  it('rounds a Freeze stall to whole ms in the timeline', async () => {
    const timeline = await getJson<Array<{ transition: string; detail: string }>>('/api/timeline?vm=web_1');
    expect(timeline.map((t) => t.transition)).toEqual(['scheduled', 'started', 'completed']);
    expect(timeline.find((t) => t.transition === 'completed')?.detail).toBe('observed, stall 60 ms');
  });

  it('exports CSV with formulas neutralised, per event and per VM', async () => {
    const res = await get('/api/export.csv');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="fleet-events.csv"');
    const text = await res.text();
    const lines = text.split('\r\n');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toBe(MAINTENANCE_COLUMNS.join(','));
    expect(lines).toHaveLength(1 + 4 + 1);
    const e3 = lines.find((l) => l.startsWith('E3,')) ?? '';
    expect(e3).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(text).not.toMatch(/(^|,)=HYPERLINK/m);
    const b1 = lines.find((l) => l.startsWith('B1,')) ?? '';
    expect(b1).toContain(',vm_a vm_b,3,1,'); // affectedNames, reportingVms, observers

    const perVm = await get('/api/export.csv?view=observations&vm=HYPERLINK');
    expect(perVm.headers.get('content-disposition')).toBe('attachment; filename="fleet-observations.csv"');
    const perVmLines = (await perVm.text()).trim().split('\r\n');
    expect(perVmLines[0]?.startsWith('vmName,eventId,occurrence,eventType,status')).toBe(true);
    expect(perVmLines).toHaveLength(2);
    expect(
      perVmLines[1]?.startsWith(`"'=HYPERLINK(""http://evil.example"",""click"")",E3,1,Freeze,completed,`),
    ).toBe(true);
    const observers = (
      await (await get('/api/export.csv?view=observations&type=Reboot&affectsOnly=true')).text()
    )
      .trim()
      .split('\r\n');
    expect(observers).toHaveLength(3);
  });

  it('exports JSON that parses, with the filter applied', async () => {
    const res = await get('/api/export.json?type=Reboot');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="fleet-events.json"');
    const events = JSON.parse(await res.text()) as MaintenanceView[];
    expect(events.map((e) => e.eventId)).toEqual(['B1']);
    expect(JSON.parse(await (await get('/api/export.json?type=Nothing')).text())).toEqual([]);
    const observations = JSON.parse(
      await (await get('/api/export.json?view=observations&type=Reboot')).text(),
    ) as ObservationView[];
    expect(observations).toHaveLength(3);
  });
});

describe('streamed exports of a history larger than one page', () => {
  const bulk = makeTempDir('sef-dashboard-bulk-');
  let big: FleetHistory;
  let server: RunningDashboard;

  beforeAll(async () => {
    big = await openHistory({ database: join(bulk.dir, 'fleet.db') });
    const records: LifecycleRecord[] = [];
    for (let i = 0; i < BULK_EVENTS; i++) {
      // Some share their first-seen time: the cursor orders ties by EventId.
      records.push(
        ...freezeLifecycle(`vm_${String(i).padStart(4, '0')}`, `BULK-${String(i).padStart(4, '0')}`),
      );
    }
    for (let i = 0; i < records.length; i += 1500) await ingest(big, records.slice(i, i + 1500));
    server = await startDashboard({ history: big, logger: silentLogger() });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await big?.close();
    bulk.cleanup();
  });

  const expectedIds = () =>
    Array.from({ length: BULK_EVENTS }, (_, i) => `BULK-${String(i).padStart(4, '0')}`)
      .sort()
      .reverse();

  it('streams every event once as CSV, page after page', async () => {
    const text = await (await fetch(`${server.url}/api/export.csv`)).text();
    const lines = text.split('\r\n').slice(1, -1);
    expect(lines).toHaveLength(BULK_EVENTS);
    expect(lines.map((l) => l.split(',')[0])).toEqual(expectedIds());
    expect(lines.every((l) => l.includes(',Freeze,completed,'))).toBe(true);
  });

  it('streams every event once as a JSON array; per-VM rows too', async () => {
    const events = JSON.parse(
      await (await fetch(`${server.url}/api/export.json`)).text(),
    ) as MaintenanceView[];
    expect(events.map((e) => e.eventId)).toEqual(expectedIds());
    const observations = JSON.parse(
      await (await fetch(`${server.url}/api/export.json?view=observations`)).text(),
    ) as ObservationView[];
    expect(observations).toHaveLength(BULK_EVENTS);
    expect(new Set(observations.map((o) => o.vmName)).size).toBe(BULK_EVENTS);
  });

  it('stops an export whose client goes away, and keeps serving', async () => {
    const abort = new AbortController();
    const res = await fetch(`${server.url}/api/export.json?view=observations`, { signal: abort.signal });
    const reader = res.body?.getReader();
    const first = await reader?.read();
    expect(first?.done).toBe(false);
    abort.abort();
    await reader?.cancel().catch(() => undefined);
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'alive' });
    expect((await (await fetch(`${server.url}/api/summary`)).json()) as FleetSummary).toMatchObject({
      events: BULK_EVENTS,
    });
  });
});

describe('a failing history', () => {
  it('answers 500 without internals', async () => {
    const dir = makeTempDir('sef-dashboard-closed-');
    const closed = await openHistory({ database: join(dir.dir, 'fleet.db') });
    const server = await startDashboard({ history: closed, logger: silentLogger() });
    try {
      await closed.close();
      for (const path of ['/api/summary', '/api/events', '/api/values?field=type', '/api/export.csv']) {
        const res = await fetch(`${server.url}${path}`);
        expect(res.status, path).toBe(500);
        expect(await res.json()).toEqual({ error: 'internal error' });
      }
    } finally {
      await server.close();
      dir.cleanup();
    }
  });
});

/**
 * Browser tier (`npm run test:browser`): the fleet dashboard's operator views in headless Chromium (Debian's
 * /usr/bin/chromium driven by playwright-core) over a real SQLite fleet history filled through history.ingest
 * with the hand-made fixture of test/support/fleet-views-fixture.ts (known answers: a broadcast, overlapping
 * events in one scale set, pending events), served by the real dashboard with a blast-radius threshold of 2:
 *
 * - the views render: events per day by type (stacked bars on a time axis), the blast radius with the rows over
 *   the threshold highlighted (paged), notice and impact per type and region on log scales in auto units;
 * - a filter changes every card (those that cannot follow it say they are fleet-wide) and every chart;
 * - every event row links to the event's page (#event=ID:occurrence, linkable): affected VMs and observers,
 *   approvals, each affected VM's timeline;
 * - auto-refresh ticks (a second /api/summary request) and the pause button stops it.
 *
 * Screenshots go to test-artifacts/fleet/. A missing Chromium fails the test with the install command.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DashboardOptions,
  type RunningDashboard,
  startDashboard,
} from '../../src/fleet/dashboard/server.ts';
import { type FleetHistory, type FleetSummary, openHistory } from '../../src/fleet/history/index.ts';
import { silentLogger } from '../../src/log.ts';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { iso } from '../support/fleet-records.ts';
import { D, viewsFixture } from '../support/fleet-views-fixture.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'fleet');
/** The server's clock: day 10 of the fixture; the default window (30 days) holds every fixture event. */
const NOW = new Date(iso(10 * D));
const WINDOW_START = iso(-20 * D).replace('.000Z', 'Z');

const tmp = makeTempDir('sef-views-browser-');
let history: FleetHistory | undefined;
let dashboard: RunningDashboard | undefined;
let context: BrowserContext | undefined;
let profile: ReturnType<typeof makeTempDir> | undefined;

beforeAll(async () => {
  if (chromiumMissing) return;
  history = await openHistory({ database: join(tmp.dir, 'fleet.db'), now: () => NOW });
  const result = await history.ingest(
    viewsFixture().map((body, i) => ({ body, partitionId: '0', sequenceNumber: i, enqueuedAt: NOW })),
  );
  expect(result.rejections).toEqual([]);
  // dashboard.blastRadiusThreshold as `fleet run` / `fleet dashboard` pass it to the server.
  const options: DashboardOptions & { blastRadiusThreshold: number } = {
    history,
    logger: silentLogger(),
    now: () => NOW,
    blastRadiusThreshold: 2,
  };
  dashboard = await startDashboard(options);
  mkdirSync(ARTIFACTS, { recursive: true });
  profile = makeTempDir('sef-chromium-views-');
  context = await launchChromium(profile.dir);
});

afterAll(async () => {
  await context?.close();
  profile?.cleanup();
  await dashboard?.close();
  await history?.close();
  tmp.cleanup();
});

/** A new page that records failures (page errors, failed or external requests, console errors). */
async function open(path: string): Promise<{ page: Page; failures: string[]; requests: string[] }> {
  if (chromiumMissing) throw new Error(chromiumMissing);
  if (!context || !dashboard) throw new Error('the dashboard or the browser was not started');
  const url = dashboard.url;
  const page = await context.newPage();
  const failures: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (e) => failures.push(e.message));
  page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(url)) failures.push(`external request ${r.url()}`);
    requests.push(new URL(r.url()).pathname);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') failures.push(`console: ${m.text()}`);
  });
  await page.goto(new URL(path, url).toString());
  await page.waitForSelector('body[data-ready="true"]');
  return { page, failures, requests };
}

async function rows(page: Page, selector: string, count: number): Promise<void> {
  await waitFor(async () => (await page.locator(selector).count()) === count, `${count} rows in ${selector}`);
}

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.textContent(selector)) ?? '').trim();
}

async function cards(page: Page): Promise<Record<string, { value: string; scope: string; label: string }>> {
  const list = await page.locator('#cards .card').evaluateAll((els) =>
    els.map((el) => ({
      id: (el.getAttribute('data-testid') ?? '').replace(/^card-/, ''),
      scope: el.getAttribute('data-scope') ?? '',
      value: (el.querySelector('b')?.textContent ?? '').trim(),
      label: (el.textContent ?? '').trim(),
    })),
  );
  return Object.fromEntries(list.map((c) => [c.id, { value: c.value, scope: c.scope, label: c.label }]));
}

async function summary(query: string): Promise<FleetSummary> {
  const res = await fetch(new URL(`/api/summary?${query}`, dashboard?.url));
  expect(res.status).toBe(200);
  return (await res.json()) as FleetSummary;
}

/** What each card shows of a summary, when it is a plain number (the rest: compared for change only). */
const CARD_VALUES: Record<string, (s: FleetSummary) => string | undefined> = {
  events: (s) => String(s.events),
  vms: (s) => String(s.vms),
  pending: (s) => String(s.pendingTotal),
  'affected-vm-events': (s) => String(s.affectedVmEvents),
  'approved-us': (s) => String(s.approvals.us ?? 0),
  lapsed: (s) => String(s.approvals.lapsed ?? 0),
  'vm-deleted': (s) => String(s.vmDeleted),
  missing: (s) => String(s.missingTransitions),
  'impact-exceeded': (s) => `${s.impactVsAdvertised.exceeded} of ${s.impactVsAdvertised.compared}`,
  records: (s) => String(s.records),
  'covered-vms': (s) => String(s.coveredVms),
  'notice-p50': () => undefined,
  'observed-p50': () => undefined,
};
const CARD_SOURCES: Record<string, (s: FleetSummary) => unknown> = {
  'notice-p50': (s) => s.noticeSeconds.p50,
  'observed-p50': (s) => s.observedSeconds.p50,
};
const FLEET_WIDE_CARDS = ['reporting-vms', 'duplicates'];

describe('fleet dashboard operator views in headless Chromium', () => {
  it('renders the time axis, blast radius and lead-time views; a filter changes every card and chart', async () => {
    const { page, failures } = await open('/');
    expect(await page.inputValue('input[name="since"]')).toBe(WINDOW_START);

    // Events per day by type: a 31-day axis (the default window), stacked bars where the fixture has events.
    await page.waitForSelector('#timeseries-chart svg');
    expect(await page.getAttribute('#timeseries-chart svg', 'data-days')).toBe('31');
    const bars = await page
      .locator('#timeseries-chart rect.day-type')
      .evaluateAll((els) =>
        els.map(
          (e) =>
            `${e.getAttribute('data-day')} ${e.getAttribute('data-type')} ${e.getAttribute('data-count')}`,
        ),
      );
    expect(bars.sort()).toEqual([
      '2025-01-01 Reboot 1',
      '2025-01-02 Freeze 3',
      '2025-01-03 Freeze 2',
      '2025-01-04 Reboot 1',
      '2025-01-04 Redeploy 1',
      '2025-01-04 Terminate 1',
    ]);
    expect(await page.locator('#timeseries-legend [data-type]').allTextContents()).toEqual([
      'Freeze',
      'Reboot',
      'Redeploy',
      'Terminate',
    ]);
    // The impact beside it: affected VMs per day, the longest observed impact (80 s on day 0).
    expect(
      await page.getAttribute('#timeseries-chart rect.vmbar[data-day="2025-01-04"]', 'data-affected'),
    ).toBe('4');
    expect(
      await page.getAttribute('#timeseries-chart circle.impact[data-day="2025-01-01"]', 'data-max'),
    ).toBe('80');

    // Blast radius at threshold 2: 10 scopes, the three over it highlighted, worst first.
    await rows(page, '#blast tbody tr', 10);
    expect(await page.getAttribute('#blast-note', 'data-threshold')).toBe('2');
    expect(await page.getAttribute('#blast-note', 'data-over')).toBe('3');
    const over = await page
      .locator('#blast tbody tr.over')
      .evaluateAll((trs) => trs.map((r) => `${r.getAttribute('data-scope')}:${r.getAttribute('data-name')}`));
    expect(over).toEqual(['location:westeurope', 'scaleSet:web', 'zone:1']);
    expect(await page.locator('#blast tbody tr.over td.pending.over').count()).toBe(3);
    expect(await page.locator('#blast tbody tr[data-over="false"]').count()).toBe(7);
    await page.screenshot({ path: join(ARTIFACTS, 'views.png'), fullPage: true });

    // Paging the blast radius: 5 per page.
    await page.selectOption('#blast-size', '5');
    await rows(page, '#blast tbody tr', 5);
    const firstPage = await page
      .locator('#blast tbody tr')
      .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-name')));
    await page.click('#blast-next');
    await page.waitForSelector('#blast-page[data-page="2"]');
    await rows(page, '#blast tbody tr', 5);
    const secondPage = await page
      .locator('#blast tbody tr')
      .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-name')));
    expect(await page.isDisabled('#blast-next')).toBe(true);
    expect([...firstPage, ...secondPage]).toEqual([
      'westeurope',
      'web',
      '1',
      'eastus2',
      'spot',
      '3',
      '(none)',
      '(none)',
      'api',
      '2',
    ]);
    await page.click('#blast-first');
    await page.waitForSelector('#blast-page[data-page="1"]');

    // Notice and impact per type and region, on a log scale labelled in auto units (seconds to hours).
    await rows(page, '#leadtime tbody tr', 8);
    const reboot = page.locator('#leadtime tbody tr[data-type="Reboot"][data-location="westeurope"]');
    expect(await reboot.locator('td.notice-p50').textContent()).toBe('15 min');
    expect(await reboot.locator('td.notice-max').textContent()).toBe('2 h');
    expect(await reboot.locator('td.observed-max').textContent()).toBe('80 s');
    expect(await page.getAttribute('#leadtime-chart svg', 'data-scale')).toBe('log');
    const leadTicks = await page.locator('#leadtime-chart svg text.tick').allTextContents();
    expect(leadTicks).toEqual(expect.arrayContaining(['1 s', '1 min', '1 h']));
    // The advertised-versus-observed chart fits its data (5 s adverts, up to 80 s observed): log scale, units.
    expect(await page.getAttribute('#impact-chart svg', 'data-scale')).toBe('log');
    const impactTicks = await page.locator('#impact-chart svg text.tick').allTextContents();
    expect(impactTicks).toEqual(['1 s', '10 s', '1 min', '10 min']);
    const observedMax = await page.getAttribute('#impact-chart rect.obs[data-stat="max"]', 'width');
    const advertisedMax = await page.getAttribute('#impact-chart rect.adv[data-stat="max"]', 'width');
    expect(Number(observedMax)).toBeGreaterThan(Number(advertisedMax));
    expect(await page.getAttribute('#notice-chart svg', 'data-scale')).toBe('log');

    // Cards: every card follows the filter, or says it is fleet-wide.
    const before = await cards(page);
    expect(Object.keys(before).sort()).toEqual([...Object.keys(CARD_VALUES), ...FLEET_WIDE_CARDS].sort());
    for (const id of FLEET_WIDE_CARDS) {
      expect(before[id]?.scope, id).toBe('fleet');
      expect(before[id]?.label, id).toContain('fleet-wide');
    }
    const windowQuery = `since=${encodeURIComponent(WINDOW_START)}`;
    const all = await summary(windowQuery);
    await page.selectOption('select[name="scaleSet"]', 'web');
    await page.click('button[type="submit"]');
    await waitFor(
      async () => (await text(page, '[data-testid="card-events"] b')) === '6',
      'the scale-set filter',
    );
    const web = await summary(`${windowQuery}&scaleSet=web`);
    const after = await cards(page);
    for (const [id, value] of Object.entries(CARD_VALUES)) {
      expect(after[id]?.scope, id).toBe('filter');
      const expected = value(web);
      if (expected !== undefined) expect(after[id]?.value, id).toBe(expected);
      const source = CARD_SOURCES[id] ?? value;
      // A card whose number differs between the two filters shows the change.
      if (JSON.stringify(source(all)) !== JSON.stringify(source(web)))
        expect(after[id]?.value, `${id} changes with the filter`).not.toBe(before[id]?.value);
    }
    expect(after.events?.value).toBe('6');
    expect(after.lapsed?.value).toBe('5');
    expect(after['approved-us']?.value).toBe('0');
    // ... and every chart and table.
    await rows(page, '#blast tbody tr', 3);
    await rows(page, '#leadtime tbody tr', 6);
    await rows(page, '#timeseries-chart rect.day-type', 4);
    await rows(page, '#events tbody tr', 6);
    await rows(page, '#pending tbody tr', 2);
    expect(await page.locator('#impact-chart rect.obs[data-stat="max"]').getAttribute('data-value')).toBe(
      '9',
    );
    expect(await page.locator('#notice-chart rect.bar[data-stat="max"]').getAttribute('data-value')).toBe(
      '7200',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'views-filtered.png'), fullPage: true });
    expect(failures).toEqual([]);
    await page.close();
  });

  it("opens an event's page from every event row: VMs and observers, approvals, each VM's timeline", async () => {
    const { page, failures } = await open('/');
    await rows(page, '#events tbody tr', 9);
    for (const table of ['#events', '#pending']) {
      const links = await page
        .locator(`${table} tbody tr`)
        .evaluateAll((trs) => trs.map((r) => r.querySelector('a.event')?.getAttribute('href') ?? ''));
      expect(
        links.every((href) => /^#event=[^:]+:\d+$/.test(href)),
        table,
      ).toBe(true);
    }
    await page.click('#events tbody tr[data-event="B1"] a.event');
    await page.waitForSelector('#detail-section[data-event-ready="B1:1"]');
    expect(new URL(page.url()).hash).toBe('#event=B1:1');
    expect(await page.isHidden('#overview')).toBe(true);
    // Affected VMs and the observer.
    await rows(page, '#detail tbody tr', 3);
    expect(await page.locator('#detail tbody tr[data-affects="false"] a.vm').allTextContents()).toEqual([
      'av_c',
    ]);
    // Approvals: av_a the leader that posted, av_b not the leader.
    await rows(page, '#approvals tbody tr', 2);
    expect(await page.locator('#approvals tbody tr[data-posted="true"]').getAttribute('data-vm')).toBe(
      'av_a',
    );
    expect(await page.locator('#approvals tbody tr[data-vm="av_b"] td.leader').textContent()).toBe(
      'not leader',
    );
    expect(await text(page, '#approvals-summary')).toContain('outcome: us, rule reboot-rule');
    // Each affected VM's timeline (4 records each), then with the observer.
    await rows(page, '#event-records tbody tr', 8);
    expect(await page.locator('#event-timeline-chart svg circle').count()).toBe(8);
    expect(
      await page
        .locator('#event-records tbody tr[data-vm="av_a"]')
        .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-transition'))),
    ).toEqual(['scheduled', 'approved', 'started', 'completed']);
    await page.screenshot({ path: join(ARTIFACTS, 'event-page.png'), fullPage: true });
    await page.check('#records-observers');
    await rows(page, '#event-records tbody tr', 9);
    expect(await page.locator('#event-records tbody tr[data-affects="false"]').getAttribute('data-vm')).toBe(
      'av_c',
    );

    // Linkable: a fresh page on the URL opens the event; a lapsed one shows who lapsed.
    await page.goto(new URL('/#event=F3:1', dashboard?.url).toString());
    await page.waitForSelector('#detail-section[data-event-ready="F3:1"]');
    expect(await text(page, '#approvals-summary')).toContain('lapsed on web_3');
    await rows(page, '#event-records tbody tr', 3);
    // Back to the overview; a VM link on the event page opens that VM's timeline there.
    await page.click('#event-back');
    await page.waitForSelector('#overview:not([hidden])');
    await page.click('#pending tbody tr[data-event="P1"] a.event');
    await page.waitForSelector('#detail-section[data-event-ready="P1:1"]');
    await page.click('#event-records tbody tr[data-vm="web_6"] a.vm');
    await page.waitForSelector('#overview:not([hidden])');
    await rows(page, '#timeline tbody tr', 1);
    expect(await page.locator('#timeline tbody tr a.event').getAttribute('href')).toBe('#event=P1:1');
    expect(failures).toEqual([]);
    await page.close();
  });

  it('refreshes itself at the chosen interval, and not while paused', async () => {
    // ?refresh=1: every second (the selector offers 10 s to 5 min; the URL may ask for any interval).
    const { page, failures, requests } = await open('/?refresh=1');
    const summaries = () => requests.filter((p) => p === '/api/summary').length;
    expect(await page.inputValue('#refresh-interval')).toBe('1');
    expect(await page.locator('#refresh-interval option').allTextContents()).toEqual([
      '10 s',
      '30 s',
      '1 min',
      '5 min',
      '1 s',
    ]);
    await waitFor(async () => summaries() >= 2, 'a second /api/summary request (auto-refresh)');
    await waitFor(async () => Number(await page.getAttribute('#refresh-state', 'data-ticks')) >= 1, 'a tick');
    expect(new URL(page.url()).searchParams.get('refresh')).toBe('1');

    await page.click('#refresh-pause');
    expect(await text(page, '#refresh-pause')).toBe('resume');
    await page.waitForSelector('#refresh-state[data-state="paused"]');
    await page.waitForSelector('body[data-refreshing="false"]');
    const paused = summaries();
    // Three intervals without a request: paused means no refresh at all.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(summaries()).toBe(paused);
    expect(await page.getAttribute('#refresh-state', 'data-state')).toBe('paused');

    await page.click('#refresh-pause');
    await waitFor(async () => summaries() > paused, 'a refresh after resuming');
    expect(failures).toEqual([]);
    await page.close();
  });
});

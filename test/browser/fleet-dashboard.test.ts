/**
 * Browser tier (`npm run test:browser`, not part of `npm test`): the fleet dashboard in headless Chromium
 * (Debian's /usr/bin/chromium driven by playwright-core) over a real SQLite fleet history filled with
 * history.ingest from the record fixtures: completed Freezes inside and before the default 30-day window, a
 * broadcast Reboot reported by three VMs (two affected, one observer) and a pending Terminate. Checks the
 * cards (maintenance events counted once), the default window and its note, the drop-downs (from /api/values),
 * the pending table, paging with the cursor, an event's detail, a VM's timeline, filters and the CSV export.
 * Screenshots go to test-artifacts/fleet/ (gitignored).
 *
 * A missing Chromium fails the test with the install command: this tier is never skipped.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { MAINTENANCE_COLUMNS } from '../../src/fleet/dashboard/export.ts';
import { type RunningDashboard, startDashboard } from '../../src/fleet/dashboard/server.ts';
import { type FleetHistory, openHistory } from '../../src/fleet/history/index.ts';
import { silentLogger } from '../../src/log.ts';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { heartbeatOf, iso, record } from '../support/fleet-records.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'fleet');

const DAY = 86_400;
/** The server's clock: day 40 after the fixtures' T0; the page's default window starts at day 10. */
const NOW = new Date(iso(40 * DAY));
const WINDOW_START = iso(10 * DAY).replace('.000Z', 'Z');
/** Completed Freezes inside the default window, and before it. */
const RECENT_FREEZES = 25;
const OLD_FREEZES = 3;

/** A Freeze first seen at `t` (seconds after T0): scheduled, started 950 s later, completed 10 s after that. */
function freezeAt(vm: string, eventId: string, t: number): LifecycleRecord[] {
  const base = { vm, eventId, firstSeenAt: t, notBeforeAt: t + 900 };
  return [
    record('scheduled', { ...base, at: t }),
    record('started', { ...base, at: t + 950, startedAt: t + 950 }),
    record('completed', {
      ...base,
      at: t + 960,
      startedAt: t + 950,
      extra: {
        inferred: false,
        observedImpact: {
          expectedDurationSeconds: 5,
          hostRebooted: false,
          downtimeSeconds: null,
          downtimeFrom: null,
          downtimeTo: null,
          longestStallMs: 4200 + t / 1000,
          longestObservationGapMs: 1000,
        },
      },
    }),
  ];
}

function fixtures(): LifecycleRecord[] {
  const records: LifecycleRecord[] = [];
  for (let i = 0; i < OLD_FREEZES; i++) records.push(...freezeAt(`old_${i}`, `OLD-${i}`, DAY + i * 3600));
  for (let i = 0; i < RECENT_FREEZES; i++) {
    const vm = `web_${String(i).padStart(2, '0')}`;
    records.push(...freezeAt(vm, `FRZ-${String(i).padStart(2, '0')}`, 20 * DAY + i * 3600));
  }
  // The broadcast: reported by three VMs of an availability set, affecting two of them; pending.
  for (const vm of ['db_a', 'db_b', 'db_c'])
    records.push(
      record('scheduled', {
        vm,
        eventId: 'BCAST-1',
        eventType: 'Reboot',
        at: 30 * DAY,
        firstSeenAt: 30 * DAY,
        notBeforeAt: 30 * DAY + 900,
        zone: '2',
        extra: { affectsThisVm: vm !== 'db_c', Resources: ['db_a', 'db_b'] },
      }),
    );
  // A Spot VM's eviction notice: pending.
  records.push(
    record('scheduled', {
      vm: 'spot_1',
      eventId: 'TERM-1',
      eventType: 'Terminate',
      at: 35 * DAY,
      firstSeenAt: 35 * DAY,
      notBeforeAt: 35 * DAY + 30,
      zone: '3',
    }),
  );
  return records;
}

const tmp = makeTempDir('sef-dashboard-browser-');
let history: FleetHistory | undefined;
let dashboard: RunningDashboard | undefined;

beforeAll(async () => {
  if (chromiumMissing) return;
  history = await openHistory({ database: join(tmp.dir, 'fleet.db'), now: () => NOW });
  const result = await history.ingest(
    fixtures().map((body, i) => ({ body, partitionId: '0', sequenceNumber: i, enqueuedAt: NOW })),
  );
  expect(result.rejections).toEqual([]);
  await history.setRetention('400d');
  dashboard = await startDashboard({ history, logger: silentLogger(), now: () => NOW });
});

afterAll(async () => {
  await dashboard?.close();
  await history?.close();
  tmp.cleanup();
});

/** Waits (polling from Node: the dashboard's CSP forbids the eval that page.waitForFunction needs) for `count` rows. */
async function rows(page: Page, selector: string, count: number): Promise<void> {
  await waitFor(async () => (await page.locator(selector).count()) === count, `${count} rows in ${selector}`);
}

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.textContent(selector)) ?? '').trim();
}

async function options(page: Page, name: string): Promise<string[]> {
  return page.locator(`select[name="${name}"] option`).allTextContents();
}

/** A page of headless Chromium on a fresh profile, and what went wrong on it (errors, outside requests). */
async function openBrowser(url: string): Promise<{ page: Page; failures: string[]; close(): Promise<void> }> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = makeTempDir('sef-chromium-');
  // A fresh --user-data-dir: playwright passes the profile directory itself with a persistent context.
  const context = await launchChromium(profile.dir, { acceptDownloads: true });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (e) => failures.push(e.message));
  page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(url)) failures.push(`external request ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') failures.push(`console: ${m.text()}`);
  });
  return {
    page,
    failures,
    close: async () => {
      await context.close();
      profile.cleanup();
    },
  };
}

describe('fleet dashboard in headless Chromium over a SQLite fleet history', () => {
  it('renders the default window, cards, drop-downs, pending, pages, details, timelines and exports', async () => {
    if (chromiumMissing) throw new Error(chromiumMissing);
    if (!dashboard) throw new Error('the dashboard was not started');
    const url = dashboard.url;
    const browser = await openBrowser(url);
    try {
      const { page, failures } = browser;
      await page.goto(url);
      await page.waitForSelector('body[data-ready="true"]');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });

      // The default window: the last 30 days of the server's clock, pre-filled and stated.
      expect(await page.inputValue('input[name="since"]')).toBe(WINDOW_START);
      const note = await text(page, '#window-note');
      expect(note).toContain(`showing events first seen since ${WINDOW_START.replace('T', ' ')}`);
      expect(note).toContain('the history keeps the last 400d');

      // Cards: maintenance events in the window, the broadcast counted once.
      expect(await text(page, '[data-testid="card-events"] b')).toBe(String(RECENT_FREEZES + 2));
      expect(await text(page, '[data-testid="card-vms"] b')).toBe(String(RECENT_FREEZES + 3)); // not db_c
      expect(await text(page, '[data-testid="card-pending"] b')).toBe('2');
      expect(await text(page, '[data-testid="card-lapsed"] b')).toMatch(/^\d+$/);

      // Drop-downs: from /api/values (the whole history), never from the events shown.
      expect(await options(page, 'type')).toEqual(['all', 'Freeze', 'Reboot', 'Terminate']);
      expect(await options(page, 'zone')).toEqual(['all', '1', '2', '3']);
      expect(await options(page, 'status')).toEqual(['all', 'completed', 'scheduled']);
      expect(await options(page, 'location')).toEqual(['all', 'westeurope']);

      // Pending now: each maintenance event once, with its affected VMs.
      await rows(page, '#pending tbody tr', 2);
      expect(await page.locator('#pending tbody tr td:nth-child(2)').allTextContents()).toEqual([
        'Reboot',
        'Terminate',
      ]);
      const broadcastRow = page.locator('#pending tbody tr[data-event="BCAST-1"]');
      expect(await broadcastRow.locator('td.affected').textContent()).toBe('2');
      expect(await broadcastRow.locator('td.names a.vm').allTextContents()).toEqual(['db_a', 'db_b']);
      expect(await broadcastRow.locator('td:nth-child(8)').textContent()).toBe('1'); // one observer
      expect(await text(page, '#pending-count')).toBe('(2)');

      // Charts from the summary.
      expect(await page.locator('#notice-chart svg rect.bar').count()).toBe(5);
      expect(await page.locator('#impact-chart svg rect.adv').count()).toBeGreaterThan(0);
      expect(await page.locator('#impact-chart svg rect.obs').count()).toBeGreaterThan(0);

      // Paging: 27 events, 20 per page.
      await rows(page, '#events tbody tr', RECENT_FREEZES + 2);
      await page.selectOption('#page-size', '20');
      await rows(page, '#events tbody tr', 20);
      const firstPage = await page
        .locator('#events tbody tr')
        .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-event')));
      expect(firstPage.slice(0, 2)).toEqual(['TERM-1', 'BCAST-1']);
      await page.click('#events-next');
      await page.waitForSelector('#events-page[data-page="2"]');
      await rows(page, '#events tbody tr', RECENT_FREEZES + 2 - 20);
      const secondPage = await page
        .locator('#events tbody tr')
        .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-event')));
      expect(new Set([...firstPage, ...secondPage]).size).toBe(RECENT_FREEZES + 2);
      expect(await page.isDisabled('#events-next')).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-page-2.png'), fullPage: true });
      await page.click('#events-prev');
      await page.waitForSelector('#events-page[data-page="1"]');
      await rows(page, '#events tbody tr', 20);

      // An event's detail: every VM that reported the broadcast, the observer marked.
      await page.click('#pending tbody tr[data-event="BCAST-1"] a.event');
      await page.waitForSelector('#detail-section:not([hidden])');
      await rows(page, '#detail tbody tr', 3);
      expect(await page.locator('#detail tbody tr[data-affects="false"] a.vm').allTextContents()).toEqual([
        'db_c',
      ]);
      expect(await text(page, '#detail-summary')).toContain('affects 2 VM(s): db_a, db_b');
      // The event page has its own URL; back to the overview.
      expect(new URL(page.url()).hash).toBe('#event=BCAST-1:1');
      await page.click('#event-back');
      await page.waitForSelector('#overview:not([hidden])');
      expect(await page.isHidden('#detail-section')).toBe(true);

      // A VM's timeline: click an affected VM's name.
      await page.click('#pending tbody tr[data-event="BCAST-1"] a.vm[data-vm="db_b"]');
      await rows(page, '#timeline tbody tr', 1);
      expect(await page.locator('#timeline tbody tr').getAttribute('data-transition')).toBe('scheduled');
      await page.selectOption('#timeline-vm', { label: 'web_03 (3)' });
      await rows(page, '#timeline tbody tr', 3);
      expect(await page.locator('#timeline-chart svg circle').count()).toBe(3);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-timeline.png'), fullPage: true });

      // Filter: Freezes in the window only; then the whole history.
      await page.selectOption('select[name="type"]', 'Freeze');
      await page.click('button[type="submit"]');
      await waitFor(
        async () => (await text(page, '[data-testid="card-events"] b')) === String(RECENT_FREEZES),
        'the Freeze filter',
      );
      await rows(page, '#events tbody tr[data-type="Freeze"]', 20);
      expect(await page.locator('#pending tbody tr td.empty').count()).toBe(1);
      await page.fill('input[name="since"]', '');
      await page.click('button[type="submit"]');
      await waitFor(
        async () =>
          (await text(page, '[data-testid="card-events"] b')) === String(RECENT_FREEZES + OLD_FREEZES),
        'the whole history',
      );
      expect(await text(page, '#window-note')).toContain('showing events of the whole history');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-freeze.png'), fullPage: true });

      // Export with the filter applied.
      const [csvDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
      const csv = readFileSync((await csvDownload.path())!, 'utf8')
        .trim()
        .split('\r\n');
      expect(csv[0]).toBe(MAINTENANCE_COLUMNS.join(','));
      expect(csv).toHaveLength(1 + RECENT_FREEZES + OLD_FREEZES);
      expect(csv.slice(1).every((line) => line.includes(',Freeze,completed,'))).toBe(true);
      const [jsonDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
      const exported = JSON.parse(readFileSync((await jsonDownload.path())!, 'utf8')) as Array<{
        eventType: string;
      }>;
      expect(exported).toHaveLength(RECENT_FREEZES + OLD_FREEZES);

      // The reset button goes back to the default window.
      await page.click('#default-window');
      await waitFor(
        async () => (await text(page, '[data-testid="card-events"] b')) === String(RECENT_FREEZES + 2),
        'the default window again',
      );
      expect(await page.inputValue('input[name="since"]')).toBe(WINDOW_START);
      expect(failures).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it('shows coverage: the card per state, the silent and unhealthy VMs with why, the VMs covered in each view', async () => {
    if (chromiumMissing) throw new Error(chromiumMissing);
    if (!dashboard || !history) throw new Error('the dashboard was not started');
    // Heartbeats (issue 33): web_00 reports, db_a went quiet 5 h ago, db_b reports dead letters, old_0 was last
    // heard 10 days ago (gone); and a fresh one that marks partition hb read up to now.
    const now = 40 * DAY;
    const beats = [
      heartbeatOf({ vm: 'web_00', at: now - 600 }),
      heartbeatOf({ vm: 'db_a', at: now - 5 * 3600 }),
      heartbeatOf({ vm: 'db_b', at: now - 300, sink: { deadLetters: 2 } }),
      heartbeatOf({ vm: 'old_0', at: 30 * DAY }),
      heartbeatOf({ vm: 'web_01', at: now - 60 }),
    ];
    const result = await history.ingest(
      beats.map((body, i) => ({
        body,
        partitionId: 'hb',
        sequenceNumber: i,
        enqueuedAt: new Date(body.time),
      })),
    );
    expect(result).toMatchObject({ heartbeats: beats.length, rejected: 0 });
    const browser = await openBrowser(dashboard.url);
    try {
      const { page, failures } = browser;
      await page.goto(dashboard.url);
      await page.waitForSelector('body[data-ready="true"]');
      const card = (state: string) => text(page, `[data-testid="coverage-${state}"] b`);
      expect([
        await card('reporting'),
        await card('unhealthy'),
        await card('silent'),
        await card('gone'),
      ]).toEqual(['2', '1', '1', '1']);
      // VMs that sent records but no heartbeat: every fixture VM but the five above.
      expect(await card('without')).toBe(String(RECENT_FREEZES + OLD_FREEZES + 4 - beats.length));
      await rows(page, '#coverage-table tbody tr', 2);
      const silent = page.locator('#coverage-table tbody tr[data-state="silent"]');
      expect(await silent.getAttribute('data-vm')).toBe('db_a');
      expect(await silent.locator('td.why').textContent()).toMatch(
        /^no heartbeat for 5 h \(interval 60 min\); last heartbeat /,
      );
      const unhealthy = page.locator('#coverage-table tbody tr[data-state="unhealthy"]');
      expect(await unhealthy.getAttribute('data-vm')).toBe('db_b');
      expect(await unhealthy.locator('td.why').textContent()).toBe('sink hub: 2 dead letters');
      await page.locator('#coverage').screenshot({ path: join(ARTIFACTS, 'dashboard-coverage.png') });

      // Every maintenance view says how many VMs were covered in its window (the default: the last 30 days).
      // The five VMs above: old_0 (day 30) too, but not what only sent records.
      expect(await text(page, '[data-testid="card-covered-vms"] b')).toBe('5');
      expect(await text(page, '#window-note')).toContain('5 VMs covered in this window (sent a heartbeat)');
      for (const note of ['timeseries-note', 'leadtime-note', 'blast-note'])
        expect(await page.getAttribute(`#${note}`, 'data-covered')).toBe('5');

      // The VM filter narrows the coverage too.
      await page.fill('input[name="vm"]', 'db_');
      await page.click('button[type="submit"]');
      await waitFor(async () => (await card('reporting')) === '0', 'the coverage of db_* VMs');
      expect([await card('unhealthy'), await card('silent'), await card('gone')]).toEqual(['1', '1', '0']);
      expect(failures).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

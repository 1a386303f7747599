/**
 * Browser tier (`npm run test:browser`, not part of `npm test`): the fleet dashboard in headless Chromium
 * (Debian's /usr/bin/chromium driven by playwright-core) against the end-to-end fleet data — the same world and
 * scenario as test/integration/fleet/e2e.test.ts: 20 simulated VMs → forwarders → Event Hubs double → fleet
 * consumers (A killed, B taking over, duplicates re-sent) → SQLite. Renders, filters, exports (CSV/JSON) and
 * shows a per-VM timeline. Screenshots go to test-artifacts/fleet/ (gitignored).
 *
 * A missing Chromium fails the test with the install command: this tier is never skipped.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetStore, startDashboard } from '../../src/fleet/index.ts';
import { silentLogger } from '../../src/log.ts';
import {
  type FleetWorld,
  runFleetScenario,
  startFleetWorld,
  VM_COUNT,
} from '../integration/fleet/fleet-world.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'fleet');

/** Why the browser test cannot run here, or undefined when Chromium is installed. */
const chromiumMissing = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is missing: the dashboard browser test needs Debian's chromium ` +
    '(as root: apt-get update && apt-get install -y chromium)';

let world: FleetWorld | undefined;

beforeAll(async () => {
  // Without Chromium the test fails at once with the install command; do not build the world for nothing.
  if (chromiumMissing) return;
  world = await startFleetWorld();
  await runFleetScenario(world);
}, 120_000);

afterAll(async () => {
  await world?.close();
}, 60_000);

/** Waits (polling from Node: the dashboard's CSP forbids the eval that page.waitForFunction needs) for `count` rows. */
async function rows(page: Page, selector: string, count: number): Promise<void> {
  await waitFor(async () => (await page.locator(selector).count()) === count, `${count} rows in ${selector}`);
}

describe('fleet dashboard in headless Chromium over the end-to-end fleet data', () => {
  it('renders, filters, exports and shows a VM timeline', async () => {
    if (chromiumMissing) throw new Error(chromiumMissing);
    if (!world) throw new Error('the fleet world was not built');
    expect(world.dbCount('SELECT count(*) AS n FROM records')).toBe(world.expectedRecords());

    mkdirSync(ARTIFACTS, { recursive: true });
    const store = new FleetStore({ path: world.databasePath, readOnly: true });
    const dashboard = await startDashboard({ db: store.db, logger: silentLogger() });
    const profile = makeTempDir('sef-chromium-');
    // A fresh --user-data-dir: playwright passes the profile directory itself with a persistent context.
    const context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      headless: true,
      acceptDownloads: true,
      viewport: { width: 1400, height: 1000 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    try {
      const page = await context.newPage();
      const failures: string[] = [];
      page.on('pageerror', (e) => failures.push(e.message));
      page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
      page.on('request', (r) => {
        if (!r.url().startsWith(dashboard.url)) failures.push(`external request ${r.url()}`);
      });
      await page.goto(dashboard.url);
      await page.waitForSelector('body[data-ready="true"]');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });

      expect(await page.locator('#events tbody tr').count()).toBe(VM_COUNT);
      expect(await page.textContent('[data-testid="card-events"] b')).toBe(String(VM_COUNT));
      // Pending now: the two Terminate events (Preempted VMs are deleted, not pending).
      expect(await page.locator('#pending tbody tr').count()).toBe(2);
      expect(await page.locator('#pending tbody tr td:nth-child(3)').allTextContents()).toEqual([
        'Terminate',
        'Terminate',
      ]);
      expect(await page.locator('#notice-chart svg rect.bar').count()).toBeGreaterThan(0);
      expect(await page.locator('#impact-chart svg rect.adv').count()).toBe(4); // Freeze advertised 5 s

      // Filter: Freeze events only.
      await page.selectOption('select[name="type"]', 'Freeze');
      await page.click('button[type="submit"]');
      await rows(page, '#events tbody tr', 4);
      expect(await page.locator('#events tbody tr[data-type="Freeze"]').count()).toBe(4);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-freeze.png'), fullPage: true });

      // Export with the filter applied: CSV and JSON.
      const [csvDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
      const csv = readFileSync((await csvDownload.path())!, 'utf8')
        .trim()
        .split('\r\n');
      expect(csv[0]?.startsWith('vmName,eventId,occurrence,eventType,status')).toBe(true);
      expect(csv).toHaveLength(1 + 4);
      expect(csv.slice(1).every((line) => line.includes(',Freeze,completed,'))).toBe(true);
      const [jsonDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
      const exported = JSON.parse(readFileSync((await jsonDownload.path())!, 'utf8')) as Array<{
        eventType: string;
      }>;
      expect(exported.map((e) => e.eventType)).toEqual(['Freeze', 'Freeze', 'Freeze', 'Freeze']);

      // Per-VM timeline: click a VM in the filtered table.
      await page.click('#events tbody tr a.vm');
      await rows(page, '#timeline tbody tr', 3);
      expect(
        await page
          .locator('#timeline tbody tr')
          .evaluateAll((trs) => trs.map((r) => r.getAttribute('data-transition'))),
      ).toEqual(['scheduled', 'started', 'completed']);
      expect(await page.locator('#timeline-chart svg circle').count()).toBe(3);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-timeline.png'), fullPage: true });
      expect(failures).toEqual([]);
    } finally {
      await context.close();
      await dashboard.close();
      store.close();
      profile.cleanup();
    }
  }, 60_000);
});

/**
 * Browser tier (`npm run test:browser`): the fleet dashboard at fleet scale in headless Chromium. A SQLite history
 * is filled once per run (beforeAll) with the synthetic fleet of src/simulator/fleet.ts — SEF_BROWSER_FLEET_VMS
 * VMs (default 10,000) over 90 days, about 450,000 records at 10,000 — through the real ingest path as
 * bench/fleet.ts does it (FleetHistory.ingest, batches of 100 records per partition, the partition from a hash of
 * the VM as the Event Hubs sink's default partition key spreads them). The real dashboard serves it (its clock at
 * the end of the synthetic window); the page is loaded and the time to a rendered page (every card, chart and
 * table of the default 30-day window filled: body[data-ready]) is printed, not asserted. A screenshot goes to
 * test-artifacts/fleet/.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDashboard, startDashboard } from '../../src/fleet/dashboard/server.ts';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../src/fleet/history/index.ts';
import { silentLogger } from '../../src/log.ts';
import { generateFleet } from '../../src/simulator/fleet.ts';
import { chromiumMissing, launchChromium } from '../support/chromium.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';

const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts', 'fleet');
const VMS = Number(process.env.SEF_BROWSER_FLEET_VMS ?? 10_000);
const DAYS = 90;
/** Records per ingest batch and partitions, as bench/fleet.ts (one Event Hubs receive per partition). */
const BATCH = 100;
const PARTITIONS = 4;
/** Building the history takes 2–4 minutes at 10,000 VMs on two cores. */
const BUILD_TIMEOUT_MS = 15 * 60_000;

const tmp = makeTempDir('sef-fleet-10k-browser-');
let history: FleetHistory | undefined;
let dashboard: RunningDashboard | undefined;
let records = 0;

function partitionOf(key: string): string {
  return String(createHash('md5').update(key).digest().readUInt32BE(0) % PARTITIONS);
}

beforeAll(async () => {
  if (chromiumMissing) return;
  const fleet = generateFleet({ vms: VMS, days: DAYS });
  const end = new Date(fleet.window.end);
  history = await openHistory({ database: join(tmp.dir, 'fleet.db'), now: () => end });
  const t0 = performance.now();
  const buffers = new Map<string, RawFleetEvent[]>();
  const sequence = new Map<string, number>();
  for (const record of fleet.records()) {
    const partitionId = partitionOf(record.vmid || record.source);
    const seq = sequence.get(partitionId) ?? 0;
    sequence.set(partitionId, seq + 1);
    const buffer = buffers.get(partitionId) ?? [];
    buffers.set(partitionId, buffer);
    buffer.push({ body: record, partitionId, sequenceNumber: seq, enqueuedAt: new Date(record.time) });
    records++;
    if (buffer.length === BATCH) {
      buffers.set(partitionId, []);
      const result = await history.ingest(buffer);
      if (result.rejected > 0) throw new Error(`rejected: ${JSON.stringify(result.rejections[0])}`);
    }
  }
  for (const buffer of buffers.values()) if (buffer.length > 0) await history.ingest(buffer);
  await history.setRetention('400d');
  process.stdout.write(
    `fleet history: ${VMS} VMs × ${DAYS} days, ${records} records ingested in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );
  dashboard = await startDashboard({ history, logger: silentLogger(), now: () => end });
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await dashboard?.close();
  await history?.close();
  tmp.cleanup();
});

describe(`fleet dashboard over a ${VMS}-VM × ${DAYS}-day SQLite history in headless Chromium`, () => {
  it('renders the page (every card, chart and table) and reports how long it took', async () => {
    if (chromiumMissing) throw new Error(chromiumMissing);
    if (!dashboard || !history) throw new Error('the dashboard was not started');
    mkdirSync(ARTIFACTS, { recursive: true });
    const profile = makeTempDir('sef-chromium-10k-');
    const context = await launchChromium(profile.dir);
    try {
      const page = await context.newPage();
      const failures: string[] = [];
      page.on('pageerror', (e) => failures.push(e.message));
      page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
      page.on('console', (m) => {
        if (m.type() === 'error') failures.push(`console: ${m.text()}`);
      });
      const t0 = performance.now();
      await page.goto(dashboard.url);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 120_000 });
      const renderedMs = performance.now() - t0;
      process.stdout.write(
        `time to a rendered page at ${VMS} VMs (default 30-day window, every view): ${Math.round(renderedMs)} ms\n`,
      );

      // Rendered: the cards agree with the summary, every view has content.
      const summary = await history.summary({
        since: (await page.inputValue('input[name="since"]')) || undefined,
      });
      expect(summary.events).toBeGreaterThan(0);
      await waitFor(
        async () =>
          (await page.textContent('[data-testid="card-events"] b'))?.trim() === String(summary.events),
        'the events card',
      );
      expect(await page.getAttribute('#timeseries-chart svg', 'data-days')).toBe('31');
      expect(await page.locator('#timeseries-chart rect.day-type').count()).toBeGreaterThan(30);
      expect(await page.locator('#blast tbody tr[data-scope]').count()).toBe(20);
      expect(await page.locator('#leadtime tbody tr[data-type]').count()).toBeGreaterThan(0);
      expect(await page.locator('#events tbody tr[data-event]').count()).toBe(50);
      expect(await page.locator('#pending tbody tr[data-event]').count()).toBeGreaterThan(0);
      await page.screenshot({ path: join(ARTIFACTS, `fleet-${VMS}-vms.png`), fullPage: true });

      // An event's page at scale.
      await page.click('#events tbody tr[data-event] a.event');
      await page.waitForSelector('#detail-section[data-event-ready]', { timeout: 60_000 });
      expect(await page.locator('#event-records tbody tr').count()).toBeGreaterThan(0);
      await page.screenshot({ path: join(ARTIFACTS, `fleet-${VMS}-vms-event.png`), fullPage: true });
      expect(failures).toEqual([]);
    } finally {
      await context.close();
      profile.cleanup();
    }
  }, 180_000);
});

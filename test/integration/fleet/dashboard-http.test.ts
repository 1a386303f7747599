/**
 * Issue 15, item 13, over real HTTP to the fleet dashboard: the date filters show the expected format (not
 * example dates from a past year), and the timeline shows a Freeze stall in whole milliseconds, also for
 * records that carry a fraction.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { FleetStore, startDashboard } from '../../../src/fleet/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { freezeLifecycle } from '../../unit/fleet/records.ts';

const tmp = makeTempDir('sef-dashboard-http-');
const store = new FleetStore({ path: join(tmp.dir, 'fleet.db') });
afterAll(() => {
  store.close();
  tmp.cleanup();
});

describe('fleet dashboard over HTTP', () => {
  it('date filter placeholders show the format; the timeline rounds a stall to whole ms', async () => {
    const records = freezeLifecycle('web_1', 'E1');
    const completed = records[2] as LifecycleRecord;
    (completed.data.observedImpact as Record<string, unknown>).longestStallMs = 59.52411799999754;
    store.ingest(
      records.map((body, i) => ({ body, partitionId: '0', sequenceNumber: i, enqueuedAt: new Date(0) })),
    );
    const dashboard = await startDashboard({ db: store.db, logger: silentLogger() });
    try {
      const html = await (await fetch(`${dashboard.url}/`)).text();
      const placeholders = [...html.matchAll(/name="(since|until)" placeholder="([^"]*)"/g)].map((m) => [
        m[1],
        m[2],
      ]);
      expect(placeholders).toEqual([
        ['since', 'YYYY-MM-DDThh:mm:ssZ'],
        ['until', 'YYYY-MM-DDThh:mm:ssZ'],
      ]);
      expect(html).not.toMatch(/placeholder="20\d\d-/);
      const timeline = (await (await fetch(`${dashboard.url}/api/timeline?vm=web_1`)).json()) as Array<{
        transition: string;
        detail: string;
      }>;
      expect(timeline.find((t) => t.transition === 'completed')?.detail).toBe('observed, stall 60 ms');
    } finally {
      await dashboard.close();
    }
  });
});

/**
 * Every maintenance view's `coveredVms` (the VMs that sent a heartbeat on a day of its window, from a heartbeat
 * stating the filter's region, zone and scale set) is read from the coverage rollups
 * (src/fleet/history/coverage-rollups.ts). On random histories of five months — long enough that windows are
 * covered by 64-day, 8-day and 1-day sets — ingested with late heartbeats (days before a prune's cutoff among
 * them), VMs moving between regions, zones and scale sets, prunes at cutoffs inside a bucket and refreshes at
 * random moments (so the reader meets fresh, stale and half-refreshed buckets), the count equals an exact scan
 * of the heartbeats kept (computed here from what was ingested) and a count over coverage_days, in both stores
 * (a real SQLite file and a real PostgreSQL server).
 */
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import {
  type CoveredFilter,
  coveredVms,
  coveredVmsExact,
} from '../../../src/fleet/history/coverage-rollups.ts';
import { type FleetHistory, openHistory, type RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { seededRandom } from '../../support/delivery.ts';
import { heartbeatOf } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-fleet-covered-vms-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

/** heartbeatOf's epoch (test/support/fleet-records.ts). */
const T0 = Date.UTC(2025, 0, 1);
const DAY = 86_400;
const DAYS = 150;
const VMS = 25;

type Kind = 'sqlite' | 'postgres';

async function open(kind: Kind, name: string): Promise<FleetHistory> {
  let database = `${tmp.dir}/${name}/fleet.db`;
  if (kind === 'postgres') {
    const db = await createTestDatabase(inject('pgAdminUrl'));
    cleanups.push(() => db.drop());
    database = db.url;
  }
  const history = await openHistory({ database, now: () => new Date(T0 + DAYS * DAY * 1000) });
  cleanups.push(() => history.close());
  return history;
}

interface Where {
  location: string;
  zone: string;
  scaleSet: string;
}
interface Beat extends Where {
  vm: string;
  /** Seconds after T0. */
  at: number;
}

/** VMs sending heartbeats on random days (some days twice), moving now and then; in time order, some late. */
function randomBeats(random: () => number): Beat[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const beats: Array<Beat & { arrives: number }> = [];
  for (let v = 0; v < VMS; v++) {
    let where: Where = {
      location: pick(['westeurope', 'eastus', '']),
      zone: pick(['', '1', '2']),
      scaleSet: pick(['', 'ss-a', 'ss-b']),
    };
    const first = Math.floor(random() * 40);
    const last = DAYS - Math.floor(random() * 40);
    const daily = 0.3 + random() * 0.6;
    for (let day = first; day < last; day++) {
      if (random() > daily) continue;
      for (let n = random() < 0.3 ? 2 : 1; n > 0; n--) {
        // A move (a redeploy to another zone, another scale set; rarely another region) takes effect at once.
        if (random() < 0.02) where = { ...where, zone: pick(['', '1', '2', '3']) };
        if (random() < 0.02) where = { ...where, scaleSet: pick(['', 'ss-a', 'ss-b', 'ss-c']) };
        if (random() < 0.005) where = { ...where, location: pick(['westeurope', 'eastus']) };
        const at = day * DAY + Math.floor(random() * DAY);
        // Most arrive within minutes; a few days or weeks late (a forwarder's outbox after an outage).
        const arrives = at + (random() < 0.03 ? Math.floor(random() * 20 * DAY) : Math.floor(random() * 300));
        beats.push({ vm: `vm_${v}`, at, arrives, ...where });
      }
    }
  }
  return beats.sort((a, b) => a.arrives - b.arrives);
}

/** What the history should hold: per VM and day, the region, zone and scale set of the last heartbeat ingested. */
class Truth {
  readonly days = new Map<string, Where & { vm: string; day: number }>();

  ingest(batch: readonly Beat[]) {
    // Within a batch the latest heartbeat of a VM's day states it (heartbeat-ingest.ts), across batches the
    // later batch.
    const inBatch = new Map<string, Beat>();
    for (const b of batch) {
      const key = `${b.vm}/${Math.floor(b.at / DAY)}`;
      const seen = inBatch.get(key);
      if (seen === undefined || b.at >= seen.at) inBatch.set(key, b);
    }
    for (const [key, b] of inBatch) this.days.set(key, { ...b, day: Math.floor(b.at / DAY) });
  }

  prune(cutoffDay: number) {
    for (const [key, d] of this.days) if (d.day < cutoffDay) this.days.delete(key);
  }

  covered(filter: CoveredFilter): number {
    const from = filter.since ? Math.floor((Date.parse(filter.since) - T0) / 1000 / DAY) : -Infinity;
    const to = filter.until ? Math.floor((Date.parse(filter.until) - 1 - T0) / 1000 / DAY) : Infinity;
    const named = (value: string, none: string) => (value === '' ? none : value);
    const vms = new Set<string>();
    for (const d of this.days.values())
      if (
        d.day >= from &&
        d.day <= to &&
        (!filter.location || named(d.location, '(unknown)') === filter.location) &&
        (!filter.zone || named(d.zone, '(none)') === filter.zone) &&
        (!filter.scaleSet || named(d.scaleSet, '(none)') === filter.scaleSet)
      )
        vms.add(d.vm);
    return vms.size;
  }
}

function randomFilters(random: () => number): CoveredFilter[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const instant = (day: number) =>
    new Date(T0 + (day * DAY + Math.floor(random() * DAY)) * 1000).toISOString();
  const window = () => {
    const a = Math.floor(random() * (DAYS + 10)) - 5;
    const b = a + Math.floor(random() * (DAYS + 10));
    return { since: instant(a), until: instant(b) };
  };
  return [
    {},
    window(),
    window(),
    { since: instant(Math.floor(random() * DAYS)) },
    { until: instant(Math.floor(random() * DAYS)) },
    { ...window(), location: pick(['westeurope', 'eastus', '(unknown)']) },
    { ...window(), location: 'eastus', zone: pick(['1', '2', '(none)']) },
    { ...window(), zone: pick(['1', '3', '(none)']) },
    { ...window(), scaleSet: pick(['ss-a', 'ss-c', '(none)']) },
    { location: 'westeurope', zone: pick(['1', '(none)']), scaleSet: pick(['ss-b', '(none)']) },
    // From the first day of a 64-day bucket (day 71 is 2025-03-13, day 20,160 since the epoch = 315 × 64), and
    // a window that starts and ends inside such buckets.
    { since: instant(71) },
    { since: instant(30), until: instant(140) },
  ];
}

describe.each(['sqlite', 'postgres'] as const)('covered VMs on %s', (kind) => {
  it.each([1, 2])(
    'equal an exact scan on random history %i: late heartbeats, moves, prunes inside buckets, refreshes at random',
    async (seed) => {
      const random = seededRandom(seed * 104_729);
      const beats = randomBeats(random);
      const h = await open(kind, `seed-${seed}`);
      const truth = new Truth();
      const levelsRead = new Set<number>();
      const check = async (label: string) => {
        for (const filter of randomFilters(random)) {
          const expected = truth.covered(filter);
          const what = `${label}: ${JSON.stringify(filter)}`;
          expect(await coveredVmsExact(h.db, filter), `${what} (coverage_days)`).toBe(expected);
          expect(await coveredVms(h.db, filter), what).toBe(expected);
          expect((await h.summary(filter)).coveredVms, `${what} (summary)`).toBe(expected);
        }
        for (const row of await h.db.all('SELECT DISTINCT level FROM coverage_rollups'))
          levelsRead.add(Number(row.level));
      };
      let sequence = 0;
      let cutoff = 0;
      let rounds = 0;
      for (let i = 0; i < beats.length; rounds++) {
        const size = 1 + Math.floor(random() * 60);
        const slice = beats.slice(i, i + size);
        i += slice.length;
        const batch: RawFleetEvent[] = slice.map((b) => ({
          body: heartbeatOf({ vm: b.vm, at: b.at, location: b.location, zone: b.zone, scaleSet: b.scaleSet }),
          partitionId: '0',
          sequenceNumber: sequence++,
          enqueuedAt: new Date(T0 + b.at * 1000),
        }));
        await h.ingest(batch);
        truth.ingest(slice);
        // A refresh now and then (the consumer's is on a timer): readers meet fresh and stale buckets.
        if (random() < 0.15) await h.refreshRollups();
        // A prune now and then, to a day inside an 8-day and a 64-day bucket; late heartbeats then add days
        // before it again.
        if (random() < 0.02 && slice.length > 0) {
          const day = Math.floor(slice.at(-1)!.at / DAY) - 20 - Math.floor(random() * 10);
          if (day > cutoff) {
            cutoff = day;
            await h.prune(new Date(T0 + cutoff * DAY * 1000));
            truth.prune(cutoff);
          }
        }
        if (rounds % 25 === 0) await check(`round ${rounds}`);
      }
      await check('after the load');
      await h.refreshRollups();
      await check('refreshed');
      // The prune at a day inside an 8-day and a 64-day bucket, then a heartbeat for a day before it.
      cutoff = Math.max(cutoff + 1, 101);
      await h.prune(new Date(T0 + cutoff * DAY * 1000));
      truth.prune(cutoff);
      await check('pruned');
      const late = {
        vm: 'vm_late',
        at: (cutoff - 40) * DAY + 3600,
        location: 'eastus',
        zone: '1',
        scaleSet: '',
      };
      await h.ingest([
        {
          body: heartbeatOf({ vm: late.vm, at: late.at, location: late.location, zone: late.zone }),
          partitionId: '0',
          sequenceNumber: sequence++,
          enqueuedAt: new Date(T0 + late.at * 1000),
        },
      ]);
      truth.ingest([late]);
      await check('a late day before the cutoff');
      await h.refreshRollups();
      await check('a late day before the cutoff, refreshed');
      expect(truth.covered({})).toBeGreaterThan(0);
      // Sets of every level were built (and so read by the long windows).
      expect([...levelsRead].sort()).toEqual([2, 3, 4]);
    },
  );
});

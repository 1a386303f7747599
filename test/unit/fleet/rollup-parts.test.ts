/**
 * The pure parts of the fleet rollups (src/fleet/history/rollups): the stored form, the distinct-VM set, the
 * distributions and the bucket cover of a window.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Aggregate,
  decodeDigest,
  type EventEntry,
  encodeDigest,
} from '../../../src/fleet/history/rollups/aggregate.ts';
import { ancestorsOf, childrenOf, cover, LEVEL_HOURS } from '../../../src/fleet/history/rollups/buckets.ts';
import { Reader, Writer } from '../../../src/fleet/history/rollups/codec.ts';
import { DistinctSet, SPARSE_LIMIT, vmHash } from '../../../src/fleet/history/rollups/distinct.ts';
import {
  Distribution,
  EXACT_LIMIT,
  nearestRank,
  RELATIVE_ACCURACY,
} from '../../../src/fleet/history/rollups/distribution.ts';
import { peakIn } from '../../../src/fleet/history/rollups/impacts.ts';

describe('rollup codec', () => {
  it('reads back what it wrote, raw when small and deflated when long', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ k: fc.constant('u' as const), v: fc.nat({ max: Number.MAX_SAFE_INTEGER }) }),
            fc.record({ k: fc.constant('i' as const), v: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }) }),
            fc.record({ k: fc.constant('f' as const), v: fc.double({ noNaN: true }) }),
            fc.record({ k: fc.constant('s' as const), v: fc.string({ unit: 'grapheme', maxLength: 40 }) }),
          ),
          { maxLength: 400 },
        ),
        (values) => {
          const w = new Writer();
          for (const x of values) {
            if (x.k === 'u') w.uint(x.v);
            else if (x.k === 'i') w.int(x.v);
            else if (x.k === 'f') w.float(x.v);
            else w.string(x.v);
          }
          const r = new Reader(w.finish());
          for (const x of values) {
            const got = x.k === 'u' ? r.uint() : x.k === 'i' ? r.int() : x.k === 'f' ? r.float() : r.string();
            expect(got).toEqual(x.v);
          }
          expect(r.done).toBe(true);
        },
      ),
    );
  });
});

describe('distinct VMs', () => {
  it('is exact up to the sparse limit, through merges and the stored form', () => {
    const a = new DistinctSet();
    const b = new DistinctSet();
    for (let i = 0; i < 1500; i++) a.add(vmHash(`vm-${i}`));
    for (let i = 1000; i < SPARSE_LIMIT; i++) b.add(vmHash(`vm-${i}`));
    const w = new Writer();
    a.write(w);
    const back = DistinctSet.read(new Reader(w.finish()));
    back.merge(b);
    expect(back.exact).toBe(true);
    expect(back.count()).toBe(SPARSE_LIMIT);
  });

  it('estimates within 3 standard errors (0.81% each) beyond it, merged from parts', () => {
    for (const n of [5_000, 40_000, 250_000]) {
      const parts = [new DistinctSet(), new DistinctSet(), new DistinctSet()];
      for (let i = 0; i < n; i++) {
        const h = vmHash(
          `/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-${i}`,
        );
        parts[i % 3]!.add(h);
        if (i % 7 === 0) parts[(i + 1) % 3]!.add(h); // a VM in two buckets counts once
      }
      const all = new DistinctSet();
      for (const p of parts) {
        const w = new Writer();
        p.write(w);
        all.merge(DistinctSet.read(new Reader(w.finish())));
      }
      expect(all.exact).toBe(false);
      expect(Math.abs(all.count() - n) / n, `${n} VMs`).toBeLessThan(3 * 0.0081);
    }
  });
});

describe('distributions', () => {
  const values = fc.array(
    fc.oneof(
      fc.double({ min: -1e6, max: 1e7, noNaN: true }),
      fc.constant(0),
      fc.integer({ min: 0, max: 900 }),
    ),
    { minLength: 1, maxLength: 1200 },
  );

  it('give the nearest-rank p50 and p90: exact over few values, within 1% beyond, merged in any split', () => {
    fc.assert(
      fc.property(values, fc.nat({ max: 5 }), (list, splits) => {
        // −0 is kept as 0 (Distribution.add), as SQL compares and returns it.
        const sorted = list.map((v) => v + 0).sort((x, y) => x - y);
        const parts = Array.from({ length: splits + 1 }, () => new Distribution());
        for (const [i, v] of list.entries()) parts[i % parts.length]!.add(v);
        const d = new Distribution();
        for (const p of parts) {
          const w = new Writer();
          p.write(w);
          d.merge(Distribution.read(new Reader(w.finish())));
        }
        expect(d.count).toBe(list.length);
        expect(d.min).toBe(sorted[0]);
        expect(d.max).toBe(sorted.at(-1));
        for (const p of [50, 90]) {
          const exact = sorted[nearestRank(p, list.length) - 1]!;
          const got = d.percentile(p)!;
          if (list.length <= EXACT_LIMIT) expect(got).toBe(exact);
          else expect(Math.abs(got - exact)).toBeLessThanOrEqual(RELATIVE_ACCURACY * Math.abs(exact) + 1e-9);
        }
      }),
    );
  });

  it('keeps negative values through a merge of two sketches (DDSketch.merge would drop them)', () => {
    const a = new Distribution();
    const b = new Distribution();
    for (let i = 0; i < 400; i++) a.add(100 + i);
    for (let i = 0; i < 400; i++) b.add(-(100 + i));
    a.merge(b);
    expect(a.percentile(50)).toBeLessThan(0);
    expect(a.percentile(90)).toBeGreaterThan(0);
  });
});

describe('buckets', () => {
  it('cover a window exactly with aligned buckets, at most two of each level per side', () => {
    fc.assert(
      fc.property(fc.nat({ max: 20_000 }), fc.nat({ max: 12_000 }), (from, length) => {
        const to = from + length;
        const parts = cover(from, to, to, () => false);
        let hour = from;
        for (const p of parts) {
          const size = LEVEL_HOURS[p.level]!;
          expect(p.bucket * size).toBe(hour);
          hour += size;
        }
        expect(hour).toBe(to);
        const perLevel = LEVEL_HOURS.map((_, l) => parts.filter((p) => p.level === l).length);
        for (let l = 0; l < LEVEL_HOURS.length - 1; l++) {
          const ratio = LEVEL_HOURS[l + 1]! / LEVEL_HOURS[l]!;
          expect(perLevel[l]).toBeLessThanOrEqual(2 * (ratio - 1));
        }
      }),
    );
  });

  it('never use a stale bucket: its children, down to the hours', () => {
    const stale = new Set(ancestorsOf(5000).map((b) => `${b.level}:${b.bucket}`));
    const parts = cover(0, 10_000, 10_000, (b) => stale.has(`${b.level}:${b.bucket}`));
    expect(parts.some((p) => stale.has(`${p.level}:${p.bucket}`))).toBe(false);
    expect(parts).toContainEqual({ level: 0, bucket: 5000 });
    const hours = parts.reduce((n, p) => n + LEVEL_HOURS[p.level]!, 0);
    expect(hours).toBe(10_000);
  });

  it('name a bucket’s children and ancestors consistently', () => {
    const hour = 123_457;
    const chain = ancestorsOf(hour);
    for (const [i, b] of chain.entries()) {
      const below = i === 0 ? { level: 0, bucket: hour } : chain[i - 1]!;
      expect(childrenOf(b)).toContainEqual(below);
    }
  });
});

describe('impact peaks', () => {
  it('count an interval ending at t with one starting at t, and give the earliest instant', () => {
    const intervals = [
      { startMs: 0, endMs: 10 },
      { startMs: 10, endMs: 20 },
      { startMs: 15, endMs: 30 },
      { startMs: 25, endMs: 26 },
    ];
    expect(peakIn(intervals, 0, 100)).toEqual({ m: 2, at: 10 });
    expect(peakIn(intervals, 20, 100)).toEqual({ m: 2, at: 25 });
    expect(peakIn(intervals, 40, 100).m).toBe(0);
  });
});

describe('hour digests', () => {
  it('read back every entry, and an aggregate of them equals one of their stored form', () => {
    const entry = (i: number): EventEntry => ({
      key: vmHash(`E${i}#1`),
      firstSeenMs: 1_700_000_000_000 + i * 1000,
      eventType: ['Freeze', 'Reboot', ''][i % 3]!,
      location: i % 2 ? 'westeurope' : '',
      zone: String(i % 4),
      scaleSet: i % 5 ? `vmss-${i % 5}` : '',
      status: ['scheduled', 'started', 'completed', 'canceled'][i % 4]!,
      approval: i % 3 ? null : 'us',
      reason: i % 7 ? null : 'vanished',
      inferred: i % 7 === 0,
      vmDeleted: i % 11 === 0,
      missing: i % 13 === 0,
      affectedVms: 1 + (i % 3),
      records: 3,
      transitions: [1, 1, 1, 0, i % 2, 0],
      notice: i % 9 ? 900 + i : null,
      advertised: i % 4 ? 5 : null,
      observed: i % 6 ? i / 7 : null,
      affected: [vmHash(`vm-${i}`), vmHash(`vm-${i + 1}`)],
    });
    const digest = new Map(Array.from({ length: 300 }, (_, i) => [entry(i).key, entry(i)] as const));
    const back = decodeDigest(encodeDigest(digest));
    expect([...back.values()]).toEqual([...digest.values()]);
    const a = new Aggregate();
    for (const e of digest.values()) a.add(e);
    const b = Aggregate.decode(a.encode());
    expect(b.encode()).toEqual(a.encode());
    expect(b.vms.count()).toBe(301);
  });
});

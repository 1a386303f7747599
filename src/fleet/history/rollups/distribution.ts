/**
 * One measure (notice, advertised or observed seconds) over a set of maintenance events, mergeable: its count,
 * sum, minimum and maximum are exact; its values are kept exactly while the set is small (at most EXACT_LIMIT
 * of them) and in a DDSketch (@datadog/sketches-js: logarithmic bins of relative accuracy RELATIVE_ACCURACY)
 * beyond. The p50 and p90 are nearest-rank (the value at rank ceil(p·n/100), as the exact queries define them):
 * exact from exact values, and from a sketch the representative of the bin holding that rank, which is within
 * RELATIVE_ACCURACY of the exact value at that rank (clamped to the exact minimum and maximum).
 */
import { DDSketch } from '@datadog/sketches-js';
import type { Reader, Writer } from './codec.ts';

/** Relative accuracy of a percentile from a sketch: within 1% of the exact value at that rank. */
export const RELATIVE_ACCURACY = 0.01;
/** Values kept exactly at most (then a sketch). */
export const EXACT_LIMIT = 256;

type Store = DDSketch['store'];

function storeBins(store: Store): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  if (store.count === 0) return out;
  for (let key = store.minKey; key <= store.maxKey; key++) {
    const n = store.bins[key - store.offset] ?? 0;
    if (n > 0) out.push([key, n]);
  }
  return out;
}

/** Nearest rank of percentile p over n values (1-based). */
export const nearestRank = (p: number, n: number) => Math.floor((p * n + 99) / 100);

export class Distribution {
  count = 0;
  sum = 0;
  min: number | null = null;
  max: number | null = null;
  /** Exact values (unsorted) while small; undefined once a sketch holds them. */
  #values: number[] | undefined = [];
  #sketch: DDSketch | undefined;

  add(input: number | null): void {
    if (input === null || !Number.isFinite(input)) return;
    const value = input + 0; // −0 counts as 0 (a minimum or maximum of −0 would not equal the exact query's 0)
    this.count++;
    this.sum += value;
    if (this.min === null || value < this.min) this.min = value;
    if (this.max === null || value > this.max) this.max = value;
    if (this.#values !== undefined) {
      this.#values.push(value);
      if (this.#values.length > EXACT_LIMIT) this.#toSketch();
    } else this.#sketch!.accept(value);
  }

  #toSketch(): void {
    this.#sketch = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
    for (const v of this.#values!) this.#sketch.accept(v);
    this.#values = undefined;
  }

  merge(other: Distribution): void {
    if (other.count === 0) return;
    this.count += other.count;
    this.sum += other.sum;
    if (this.min === null || (other.min !== null && other.min < this.min)) this.min = other.min;
    if (this.max === null || (other.max !== null && other.max > this.max)) this.max = other.max;
    if (other.#values !== undefined) {
      if (this.#values !== undefined) {
        for (const v of other.#values) this.#values.push(v);
        if (this.#values.length > EXACT_LIMIT) this.#toSketch();
      } else for (const v of other.#values) this.#sketch!.accept(v);
      return;
    }
    if (this.#values !== undefined) this.#toSketch();
    // Store by store: DDSketch.merge (2.1.1) leaves out the other sketch's negative values.
    const mine = this.#sketch!;
    const theirs = other.#sketch!;
    if (theirs.store.count > 0) mine.store.merge(theirs.store);
    if (theirs.negativeStore.count > 0) mine.negativeStore.merge(theirs.negativeStore);
    mine.zeroCount += theirs.zeroCount;
    mine.count += theirs.count;
  }

  /** True while the percentiles are exact. */
  get exact(): boolean {
    return this.#values !== undefined;
  }

  /** The nearest-rank percentile p (0–100); null when empty. */
  percentile(p: number): number | null {
    if (this.count === 0) return null;
    const rank = nearestRank(p, this.count);
    if (this.#values !== undefined) {
      const sorted = [...this.#values].sort((a, b) => a - b);
      return sorted[rank - 1] ?? null;
    }
    const s = this.#sketch!;
    const r = rank - 1;
    let value: number;
    if (r < s.negativeStore.count) {
      value = -s.mapping.value(s.negativeStore.keyAtRank(s.negativeStore.count - r - 1, false));
    } else if (r < s.negativeStore.count + s.zeroCount) {
      value = 0;
    } else {
      value = s.mapping.value(s.store.keyAtRank(r - s.negativeStore.count - s.zeroCount));
    }
    return Math.min(Math.max(value, this.min!), this.max!);
  }

  write(w: Writer): void {
    w.uint(this.count);
    if (this.count === 0) return;
    w.float(this.sum).float(this.min!).float(this.max!);
    if (this.#values !== undefined) {
      w.uint(0).uint(this.#values.length);
      for (const v of this.#values) w.float(v);
      return;
    }
    const s = this.#sketch!;
    w.uint(1).uint(s.zeroCount);
    for (const store of [s.store, s.negativeStore]) {
      const bins = storeBins(store);
      w.uint(bins.length);
      let previous = 0;
      for (const [key, n] of bins) {
        w.int(key - previous).uint(n);
        previous = key;
      }
    }
  }

  static read(r: Reader): Distribution {
    const d = new Distribution();
    d.count = r.uint();
    if (d.count === 0) return d;
    d.sum = r.float();
    d.min = r.float();
    d.max = r.float();
    if (r.uint() === 0) {
      const n = r.uint();
      for (let i = 0; i < n; i++) d.#values!.push(r.float());
      return d;
    }
    const s = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
    const zeros = r.uint();
    if (zeros > 0) {
      s.zeroCount = zeros;
      s.count += zeros;
    }
    for (const store of [s.store, s.negativeStore]) {
      const n = r.uint();
      const keys: number[] = [];
      const counts: number[] = [];
      let key = 0;
      for (let i = 0; i < n; i++) {
        key += r.int();
        keys.push(key);
        counts.push(r.uint());
      }
      // The highest and the lowest key first: the store then spans every key once, instead of growing (and
      // re-centring its bins) at each new highest key, which made a read quadratic in its bins.
      for (const i of n === 0 ? [] : n === 1 ? [0] : [n - 1, 0]) store.add(keys[i]!, counts[i]!);
      for (let i = 1; i < n - 1; i++) store.add(keys[i]!, counts[i]!);
      for (const c of counts) s.count += c;
    }
    d.#values = undefined;
    d.#sketch = s;
    return d;
  }
}

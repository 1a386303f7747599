/**
 * What a process keeps of the rollups it read, so that a dashboard asking for the same window every refresh does
 * not decode and merge the same stored values again (their cost grows with the fleet: a HyperLogLog of 16 KB per
 * bucket at 10,000 VMs). Both caches are exact by construction and share what they hold: readers never change a
 * cached value (merges copy).
 */

/**
 * Decoded stored values by key, with the bytes each came from: a value whose bytes equal those cached under its
 * key is the one decoded before (a rebuilt value has other bytes and is decoded again; any database, any
 * process). At most `size` values, least recently used first out.
 */
export class DecodedCache<T> {
  readonly #size: number;
  readonly #entries = new Map<string, { bytes: Buffer; value: T }>();

  constructor(size: number) {
    this.#size = size;
  }

  get(key: string, stored: Uint8Array, decode: (stored: Uint8Array) => T): T {
    const hit = this.#entries.get(key);
    this.#entries.delete(key);
    if (hit?.bytes.equals(stored)) {
      this.#entries.set(key, hit);
      return hit.value;
    }
    const value = decode(stored);
    // A copy: the driver's bytes may be a view of a larger buffer.
    this.#entries.set(key, { bytes: Buffer.from(stored), value });
    if (this.#entries.size > this.#size) this.#entries.delete(this.#entries.keys().next().value!);
    return value;
  }
}

/**
 * What was computed from a list of (decoded, cached) parts, by the identity of the parts: the same parts in the
 * same order give what they gave before (a part decoded again is another object, so its merge is done again). At
 * most `size` results, least recently used first out.
 */
export class MergedCache<P, R> {
  readonly #size: number;
  readonly #entries = new Map<string, { parts: readonly P[]; result: R }>();

  constructor(size: number) {
    this.#size = size;
  }

  get(key: string, parts: readonly P[], compute: (parts: readonly P[]) => R): R {
    const hit = this.#entries.get(key);
    this.#entries.delete(key);
    if (hit !== undefined && hit.parts.length === parts.length && hit.parts.every((p, i) => p === parts[i])) {
      this.#entries.set(key, hit);
      return hit.result;
    }
    const result = compute(parts);
    this.#entries.set(key, { parts, result });
    if (this.#entries.size > this.#size) this.#entries.delete(this.#entries.keys().next().value!);
    return result;
  }
}

/**
 * Distinct VMs of a rollup bucket (the summary's "VMs affected"): the exact set of 52-bit hashes of the VMs'
 * CloudEvent sources while it holds at most SPARSE_LIMIT of them, a HyperLogLog of 2^14 registers beyond (the
 * estimator of Flajolet et al. with linear counting below HyperLogLog++'s threshold for this precision: standard
 * error 1.04/√16384 = 0.81%). Union is the merge, so a window's count is the union of its buckets' sets. A bucket
 * is never asked to forget a VM: buckets are rebuilt from their children (store.ts), so the sets stay exact
 * under re-folds and pruning.
 *
 * Hand-written rather than a library: the npm HyperLogLog packages either carry a dependency tree far larger
 * than these 100 lines (bloom-filters) or hash with a native module, and neither stores a sparse exact set.
 */
import type { Reader, Writer } from './codec.ts';

const { hash } = process.getBuiltinModule('node:crypto');

/** Register index bits (2^14 registers). */
export const HLL_PRECISION = 14;
const REGISTERS = 1 << HLL_PRECISION;
/** Hash bits: 52 (a JavaScript number holds them exactly). */
const HASH_BITS = 52;
const REST_BITS = HASH_BITS - HLL_PRECISION;
/** Exact below this many distinct VMs (the sparse set is then about the size of the registers). */
export const SPARSE_LIMIT = 2048;
/** HyperLogLog++'s threshold below which linear counting is used, for precision 14. */
const LINEAR_COUNTING_THRESHOLD = 11_500;
/** 2^−r for each register value. */
const INVERSE_POWERS = Float64Array.from({ length: 64 }, (_, r) => 2 ** -r);

/** The 52-bit hash of a VM's source (SHA-1, its first 52 bits). */
export function vmHash(source: string): number {
  const d = hash('sha1', source, 'buffer');
  return (d.readUInt32BE(0) & 0xfffff) * 2 ** 32 + d.readUInt32BE(4);
}

function rankOf(hash: number): { index: number; rank: number } {
  const index = Math.floor(hash / 2 ** REST_BITS);
  const rest = hash % 2 ** REST_BITS;
  const rank = rest === 0 ? REST_BITS + 1 : REST_BITS - Math.floor(Math.log2(rest));
  return { index, rank };
}

/** A set of VM hashes: exact while small, a HyperLogLog sketch beyond. */
export class DistinctSet {
  #sparse: Set<number> | undefined = new Set();
  /**
   * An exact set as read from the store (distinct hashes, ascending) and not yet changed: kept as its list, so
   * that reading a bucket and merging it into a sketch (what a window's read does) builds no Set.
   */
  #list: number[] | undefined;
  #registers: Uint8Array | undefined;

  /** True while the set is exact. */
  get exact(): boolean {
    return this.#registers === undefined;
  }

  get empty(): boolean {
    if (this.#registers !== undefined) return false;
    return this.#list !== undefined ? this.#list.length === 0 : this.#sparse!.size === 0;
  }

  /** The exact set as a Set, to change it (a list read from the store becomes one). */
  #exactSet(): Set<number> {
    if (this.#list !== undefined) {
      this.#sparse = new Set(this.#list);
      this.#list = undefined;
    }
    return this.#sparse!;
  }

  add(hash: number): void {
    if (this.#registers === undefined) {
      const sparse = this.#exactSet();
      sparse.add(hash);
      if (sparse.size > SPARSE_LIMIT) this.#densify();
      return;
    }
    this.#set(hash);
  }

  #set(hash: number): void {
    const { index, rank } = rankOf(hash);
    if (rank > this.#registers![index]!) this.#registers![index] = rank;
  }

  #densify(): void {
    const hashes = this.#list ?? this.#sparse!;
    this.#registers = new Uint8Array(REGISTERS);
    this.#sparse = undefined;
    this.#list = undefined;
    for (const h of hashes) this.#set(h);
  }

  merge(other: DistinctSet): void {
    if (other.#registers === undefined) {
      const theirs = other.#list ?? other.#sparse!;
      if (this.#registers !== undefined) {
        for (const h of theirs) this.#set(h);
        return;
      }
      for (const h of theirs) {
        this.add(h);
        if (this.#registers !== undefined) {
          // Densified midway: the rest goes straight to the registers (adding a hash twice changes nothing).
          for (const rest of theirs) this.#set(rest);
          return;
        }
      }
      return;
    }
    if (this.#registers === undefined) this.#densify();
    const mine = this.#registers!;
    const theirs = other.#registers;
    for (let i = 0; i < REGISTERS; i++) if (theirs[i]! > mine[i]!) mine[i] = theirs[i]!;
  }

  /** The number of distinct VMs: exact while the set is, otherwise the HyperLogLog estimate (rounded). */
  count(): number {
    if (this.#list !== undefined) return this.#list.length;
    if (this.#sparse !== undefined) return this.#sparse.size;
    const registers = this.#registers!;
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < REGISTERS; i++) {
      const r = registers[i]!;
      sum += INVERSE_POWERS[r]!;
      if (r === 0) zeros++;
    }
    const alpha = 0.7213 / (1 + 1.079 / REGISTERS);
    const raw = (alpha * REGISTERS * REGISTERS) / sum;
    if (zeros > 0) {
      const linear = REGISTERS * Math.log(REGISTERS / zeros);
      if (linear <= LINEAR_COUNTING_THRESHOLD) return Math.round(linear);
    }
    return Math.round(raw);
  }

  write(w: Writer): void {
    if (this.#registers === undefined) {
      const sorted = this.#list ?? [...this.#sparse!].sort((a, b) => a - b);
      w.uint(0).uint(sorted.length);
      let previous = 0;
      for (const h of sorted) {
        w.uint(h - previous);
        previous = h;
      }
      return;
    }
    w.uint(1).bytes(this.#registers);
  }

  static read(r: Reader): DistinctSet {
    const set = new DistinctSet();
    if (r.uint() === 0) {
      const n = r.uint();
      const list = new Array<number>(n);
      let h = 0;
      for (let i = 0; i < n; i++) {
        h += r.uint();
        list[i] = h;
      }
      set.#sparse = undefined;
      set.#list = list;
      return set;
    }
    set.#sparse = undefined;
    set.#registers = Uint8Array.from(r.bytes(REGISTERS));
    return set;
  }
}

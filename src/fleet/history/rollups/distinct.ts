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
  #registers: Uint8Array | undefined;

  /** True while the set is exact. */
  get exact(): boolean {
    return this.#sparse !== undefined;
  }

  get empty(): boolean {
    return this.#sparse !== undefined && this.#sparse.size === 0;
  }

  add(hash: number): void {
    if (this.#sparse !== undefined) {
      this.#sparse.add(hash);
      if (this.#sparse.size > SPARSE_LIMIT) this.#densify();
      return;
    }
    this.#set(hash);
  }

  #set(hash: number): void {
    const { index, rank } = rankOf(hash);
    if (rank > this.#registers![index]!) this.#registers![index] = rank;
  }

  #densify(): void {
    this.#registers = new Uint8Array(REGISTERS);
    for (const h of this.#sparse!) this.#set(h);
    this.#sparse = undefined;
  }

  merge(other: DistinctSet): void {
    if (other.#sparse !== undefined) {
      for (const h of other.#sparse) this.add(h);
      return;
    }
    if (this.#sparse !== undefined) this.#densify();
    const mine = this.#registers!;
    const theirs = other.#registers!;
    for (let i = 0; i < REGISTERS; i++) if (theirs[i]! > mine[i]!) mine[i] = theirs[i]!;
  }

  /** The number of distinct VMs: exact while the set is, otherwise the HyperLogLog estimate (rounded). */
  count(): number {
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
    if (this.#sparse !== undefined) {
      w.uint(0).uint(this.#sparse.size);
      let previous = 0;
      for (const h of [...this.#sparse].sort((a, b) => a - b)) {
        w.uint(h - previous);
        previous = h;
      }
      return;
    }
    w.uint(1).bytes(this.#registers!);
  }

  static read(r: Reader): DistinctSet {
    const set = new DistinctSet();
    if (r.uint() === 0) {
      const n = r.uint();
      let h = 0;
      for (let i = 0; i < n; i++) {
        h += r.uint();
        set.#sparse!.add(h);
      }
      return set;
    }
    set.#sparse = undefined;
    set.#registers = Uint8Array.from(r.bytes(REGISTERS));
    return set;
  }
}

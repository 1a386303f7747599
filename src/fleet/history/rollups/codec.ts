/**
 * The binary form of the rollups' stored values (hour digests, bucket aggregates, impact slots): unsigned
 * varints, zig-zag signed varints, float64 and length-prefixed UTF-8, deflated when longer than COMPRESS_ABOVE
 * bytes (a first byte says which). Compact because a digest row is rewritten by every ingest transaction that
 * touches its hour and a window's rows are read by every view; small values stay raw, because a view reads many
 * of them and inflating each costs more than its bytes.
 */
const { deflateRawSync, inflateRawSync, constants } = process.getBuiltinModule('node:zlib');

/** Values up to this many bytes are stored raw. */
const COMPRESS_ABOVE = 2048;
const RAW = 0;
const DEFLATED = 1;

/** Appends values to a growing buffer. */
export class Writer {
  #buffer = new Uint8Array(256);
  #view = new DataView(this.#buffer.buffer);
  #length = 0;

  #reserve(n: number): void {
    if (this.#length + n <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.#length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = next;
    this.#view = new DataView(next.buffer);
  }

  /** An unsigned integer (0 … 2^53 − 1). */
  uint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`not an unsigned integer: ${value}`);
    this.#reserve(8);
    let v = value;
    while (v >= 0x80) {
      this.#buffer[this.#length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.#buffer[this.#length++] = v;
    return this;
  }

  /** A signed integer (zig-zag). */
  int(value: number): this {
    return this.uint(value < 0 ? -2 * value - 1 : 2 * value);
  }

  float(value: number): this {
    this.#reserve(8);
    this.#view.setFloat64(this.#length, value, true);
    this.#length += 8;
    return this;
  }

  /** A nullable float: a presence byte, then the value. */
  floatOrNull(value: number | null): this {
    this.uint(value === null ? 0 : 1);
    return value === null ? this : this.float(value);
  }

  string(value: string): this {
    const bytes = Buffer.from(value, 'utf8');
    this.uint(bytes.length);
    this.bytes(bytes);
    return this;
  }

  bytes(value: Uint8Array): this {
    this.#reserve(value.length);
    this.#buffer.set(value, this.#length);
    this.#length += value.length;
    return this;
  }

  /** The bytes written, deflated when long (a first byte says which). */
  finish(): Uint8Array {
    const raw = this.#buffer.subarray(0, this.#length);
    if (raw.length <= COMPRESS_ABOVE) {
      const out = new Uint8Array(raw.length + 1);
      out[0] = RAW;
      out.set(raw, 1);
      return out;
    }
    const deflated = deflateRawSync(raw, { level: constants.Z_BEST_SPEED });
    const out = new Uint8Array(deflated.length + 1);
    out[0] = DEFLATED;
    out.set(deflated, 1);
    return out;
  }
}

/** Reads what a Writer wrote (after inflating). */
export class Reader {
  readonly #buffer: Buffer;
  readonly #view: DataView;
  #offset = 0;

  constructor(stored: Uint8Array) {
    const body = stored.subarray(1);
    if (stored[0] === RAW) this.#buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    else if (stored[0] === DEFLATED) this.#buffer = inflateRawSync(body);
    else throw new Error('a rollup value has an unknown encoding');
    this.#view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset, this.#buffer.byteLength);
  }

  get done(): boolean {
    return this.#offset >= this.#buffer.length;
  }

  uint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      if (this.#offset >= this.#buffer.length) throw new RangeError('rollup value is truncated');
      const byte = this.#buffer[this.#offset++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  }

  int(): number {
    const v = this.uint();
    return v % 2 === 1 ? -(v + 1) / 2 : v / 2;
  }

  float(): number {
    if (this.#offset + 8 > this.#buffer.length) throw new RangeError('rollup value is truncated');
    const value = this.#view.getFloat64(this.#offset, true);
    this.#offset += 8;
    return value;
  }

  floatOrNull(): number | null {
    return this.uint() === 0 ? null : this.float();
  }

  string(): string {
    const n = this.uint();
    if (this.#offset + n > this.#buffer.length) throw new RangeError('rollup value is truncated');
    const value = this.#buffer.toString('utf8', this.#offset, this.#offset + n);
    this.#offset += n;
    return value;
  }

  bytes(n: number): Uint8Array {
    if (this.#offset + n > this.#buffer.length) throw new RangeError('rollup value is truncated');
    const out = this.#buffer.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return out;
  }
}

/** Stored bytes as either driver returns them (SQLite Uint8Array, PostgreSQL Buffer). */
export function storedBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  throw new TypeError('a rollup value is not binary');
}

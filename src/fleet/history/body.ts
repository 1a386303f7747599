/**
 * How a record's body is stored: its JSON deflated (raw DEFLATE, zlib level 6). Lifecycle records are about
 * 1.6 KB of repetitive JSON that deflate shrinks to about a third, which keeps a stored record within twice its
 * body in both stores (docs/performance.md, fleet section). Bodies are written and read only here.
 */
const { deflateRawSync, inflateRawSync } = process.getBuiltinModule('node:zlib');

/** The stored form of a record's JSON text. */
export function encodeBody(json: string): Buffer {
  return deflateRawSync(json);
}

/** The JSON text of a stored body (bytes from either driver; text from a history file of an earlier version). */
export function decodeBody(stored: unknown): string {
  if (typeof stored === 'string') return stored;
  if (stored instanceof Uint8Array) return inflateRawSync(stored).toString('utf8');
  throw new TypeError(`a stored record body is neither bytes nor text (${typeof stored})`);
}

const { createHash } = process.getBuiltinModule('node:crypto');
/**
 * Deterministic record ids: a name-based UUID (version 5 layout, SHA-1) so the same transition of the
 * same event on the same VM always gets the same id, across retries, restarts and re-diffs. The id
 * contains no '.', so it doubles as a Standard Webhooks `webhook-id`.
 */

/** Fixed namespace UUID of this project (random once, never change: it would change every id). */
export const RECORD_ID_NAMESPACE = '6f1c6f5e-3b8a-4c1e-9d3a-2f7e5b9a0c41';

const NAMESPACE_BYTES = Buffer.from(RECORD_ID_NAMESPACE.replaceAll('-', ''), 'hex');

/** RFC 9562 UUIDv5 of `name` in RECORD_ID_NAMESPACE. */
export function uuidV5(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE_BYTES).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Short stable hash of a JSON-serialisable value (used for the change of an updated record). */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}

/**
 * The id of one record. `vmKey` is the record's `source`; `discriminator` distinguishes records of the
 * same transition (update sequence and change hash for updated, approval kind for approved). Occurrence 1
 * (the usual case) is not part of the name, so ids stay the documented `vmKey|EventId|transition`.
 */
export function recordId(
  vmKey: string,
  eventId: string,
  transition: string,
  occurrence: number,
  discriminator?: string,
): string {
  const parts = [vmKey, eventId, transition];
  if (occurrence > 1) parts.push(`occurrence=${occurrence}`);
  if (discriminator !== undefined) parts.push(discriminator);
  return uuidV5(parts.join('|'));
}

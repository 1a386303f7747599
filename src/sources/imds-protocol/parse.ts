/**
 * Tolerant parsing of IMDS answers. Real payloads vary (api-versions, wrong weekday names in NotBefore,
 * string incarnations, varying casing); everything that can be understood is normalised, and only a
 * genuinely unusable answer (not UTF-8, not JSON, HTML, truncated, empty, nested deeper than 64 levels, Events
 * not an array, an event without EventId) throws ImdsResponseError. A leading byte order mark is accepted.
 */

import type { ScheduledEvent, ScheduledEventsDocument, VmIdentity } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import { ImdsResponseError } from './errors.ts';

export { ImdsResponseError } from './errors.ts';

const EVENT_TYPES = ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'] as const;
const EVENT_STATUSES = ['Scheduled', 'Started'] as const;
const EVENT_SOURCES = ['Platform', 'User'] as const;

/** Fields of an event the parser understands; anything else goes to `extra`. */
const KNOWN_EVENT_FIELDS = new Set([
  'EventId',
  'EventType',
  'ResourceType',
  'Resources',
  'EventStatus',
  'NotBefore',
  'Description',
  'EventSource',
  'DurationInSeconds',
]);

const MONTHS: Record<string, number> = {
  jan: 0,
  feb: 1,
  mar: 2,
  apr: 3,
  may: 4,
  jun: 5,
  jul: 6,
  aug: 7,
  sep: 8,
  oct: 9,
  nov: 10,
  dec: 11,
};

/** RFC 1123 / RFC 822 date; the weekday is optional and ignored (Microsoft's own examples get it wrong). */
const RFC1123 =
  /^(?:[A-Za-z]+,?\s+)?(\d{1,2})\s+([A-Za-z]{3})[A-Za-z]*\s+(\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(GMT|UTC|UT|Z|[+-]\d{4})?$/i;
/** ISO 8601 date-time as shown by the 2017 preview docs; a missing zone means UTC (IMDS times are UTC). */
const ISO8601 = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * Parse a NotBefore value to an ISO 8601 UTC instant. Accepts RFC 1123 (any or no weekday name) and ISO 8601.
 * Returns null for "", missing-like values and anything unparseable (never throws).
 */
export function parseNotBefore(raw: string): string | null {
  const text = raw.trim();
  if (text === '') return null;
  const rfc = RFC1123.exec(text);
  if (rfc) {
    const month = MONTHS[rfc[2]!.toLowerCase()];
    if (month === undefined) return null;
    return utcInstant(+rfc[3]!, month, +rfc[1]!, +rfc[4]!, +rfc[5]!, +(rfc[6] ?? 0), 0, rfc[7]);
  }
  const iso = ISO8601.exec(text);
  if (iso) {
    const millis = iso[7] ? Math.round(Number(`0${iso[7]}`) * 1000) : 0;
    return utcInstant(+iso[1]!, +iso[2]! - 1, +iso[3]!, +iso[4]!, +iso[5]!, +(iso[6] ?? 0), millis, iso[8]);
  }
  return null;
}

/** Build an instant from calendar fields, rejecting impossible dates (31 Feb, 25:00). */
function utcInstant(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number,
  zone: string | undefined,
): string | null {
  const ms = Date.UTC(year, month, day, hour, minute, second, millis);
  const check = new Date(ms);
  if (
    Number.isNaN(ms) ||
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month ||
    check.getUTCDate() !== day ||
    check.getUTCHours() !== hour ||
    check.getUTCMinutes() !== minute ||
    check.getUTCSeconds() !== second
  ) {
    return null;
  }
  return new Date(ms - zoneOffsetMs(zone)).toISOString();
}

/** Offset of a zone designator from UTC in ms ("+0200" / "+02:00" -> 7,200,000; GMT/UTC/Z/none -> 0). */
function zoneOffsetMs(zone: string | undefined): number {
  const m = zone ? /^([+-])(\d{2}):?(\d{2})$/.exec(zone) : null;
  if (!m) return 0;
  const minutes = +m[2]! * 60 + +m[3]!;
  return (m[1] === '-' ? -1 : 1) * minutes * 60_000;
}

/** Canonical casing for a known value (case-insensitive match); unknown values are kept as received. */
function canonical(value: unknown, known: readonly string[]): string {
  if (typeof value !== 'string') return value === undefined || value === null ? '' : String(value);
  const match = known.find((k) => k.toLowerCase() === value.trim().toLowerCase());
  return match ?? value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deepest JSON nesting accepted in an answer. A Scheduled Events document is 3 levels deep (4 with `extra`). */
export const MAX_JSON_DEPTH = 64;

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Decode the bytes of an IMDS answer as UTF-8 (RFC 8259 §8.1). A leading UTF-8 byte order mark is dropped.
 * Bytes that are not valid UTF-8 make the answer unusable (ImdsResponseError, a failed poll): replacing them
 * with U+FFFD would turn a garbled transfer into a changed Description — an `updated` record that IMDS never
 * published — and another one when the garbling stops.
 */
export function decodeImdsBody(bytes: Uint8Array, what = 'scheduled events'): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    const lenient = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    throw new ImdsResponseError(
      `IMDS ${what} answer is not valid UTF-8 (byte ${firstInvalidUtf8(bytes)} of ${bytes.byteLength}); the poll counts as failed and the last good document stays in force`,
      lenient,
    );
  }
}

/** Offset of the first byte that is not valid UTF-8 (for the error message). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  // "This prefix is valid so far" (streaming: a cut sequence at the end is not an error) is monotone in the
  // prefix length, so bisect for the longest such prefix.
  const validSoFar = (length: number): boolean => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream: true });
      return true;
    } catch {
      return false;
    }
  };
  let lo = 0;
  let hi = bytes.byteLength;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (validSoFar(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Reject nesting deeper than MAX_JSON_DEPTH and strings (values or keys) with unpaired UTF-16 surrogates
 * (`"\ud800"` escapes: valid JSON, but no UTF-8 store or sink can hold them unchanged, so the same bytes would
 * compare different after a restart). Iterative: a depth-100,000 document must not overflow the stack here.
 */
function checkJsonValue(json: unknown, body: string, what: string): void {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: json, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (!value.isWellFormed()) {
        throw new ImdsResponseError(
          `IMDS ${what} answer has a string with an unpaired UTF-16 surrogate escape (not Unicode text)`,
          body,
        );
      }
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new ImdsResponseError(
        `IMDS ${what} answer nests JSON deeper than ${MAX_JSON_DEPTH} levels (a real document has 4)`,
        body,
      );
    }
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, depth: depth + 1 });
    } else {
      for (const [key, item] of Object.entries(value)) {
        stack.push({ value: key, depth: depth + 1 }, { value: item, depth: depth + 1 });
      }
    }
  }
}

/** Parse a JSON body, turning every kind of unusable body into ImdsResponseError with an excerpt. */
function parseJsonBody(raw: string, what: string): unknown {
  // A UTF-8 byte order mark (decoded as U+FEFF) before the JSON text is tolerated (RFC 8259 §8.1 allows a
  // parser to ignore it); decodeImdsBody already drops it from bytes, this covers callers passing text.
  const body = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (body.trim() === '') throw new ImdsResponseError(`IMDS ${what} answer has an empty body`, body);
  if (/^\s*</.test(body)) {
    throw new ImdsResponseError(
      `IMDS ${what} answer is an HTML/XML page, not JSON (a proxy or captive portal in front of IMDS?)`,
      body,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    const detail = errorMessage(error);
    throw new ImdsResponseError(`IMDS ${what} answer is not valid JSON (truncated?): ${detail}`, body);
  }
  checkJsonValue(json, body, what);
  return json;
}

/** DocumentIncarnation as a number; accepts an integer or a numeric string. */
function parseIncarnation(value: unknown, body: string): number {
  const n = typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new ImdsResponseError(
      `IMDS document has ${value === undefined ? 'no' : 'an invalid'} DocumentIncarnation (${JSON.stringify(value) ?? 'missing'})`,
      body,
    );
  }
  return n;
}

function parseDuration(value: unknown): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? Math.trunc(n) : -1;
}

function parseEvent(raw: unknown, index: number, body: string): ScheduledEvent {
  if (!isRecord(raw)) throw new ImdsResponseError(`IMDS document Events[${index}] is not an object`, body);
  const id = raw.EventId;
  if (typeof id !== 'string' || id.trim() === '') {
    throw new ImdsResponseError(`IMDS document Events[${index}] has no EventId`, body);
  }
  const notBefore = typeof raw.NotBefore === 'string' ? raw.NotBefore : '';
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) if (!KNOWN_EVENT_FIELDS.has(key)) extra[key] = value;
  let resources: string[] = [];
  if (Array.isArray(raw.Resources)) resources = raw.Resources.map((r) => String(r));
  else if (raw.Resources !== undefined && raw.Resources !== null) extra.Resources = raw.Resources;
  const event: ScheduledEvent = {
    EventId: id,
    EventType: canonical(raw.EventType, EVENT_TYPES),
    ResourceType: typeof raw.ResourceType === 'string' ? raw.ResourceType : '',
    Resources: resources,
    EventStatus: canonical(raw.EventStatus, EVENT_STATUSES),
    NotBefore: notBefore,
    notBeforeUtc: parseNotBefore(notBefore),
    Description: typeof raw.Description === 'string' ? raw.Description : '',
    EventSource: canonical(raw.EventSource, EVENT_SOURCES),
    DurationInSeconds: parseDuration(raw.DurationInSeconds),
  };
  if (Object.keys(extra).length > 0) event.extra = extra;
  return event;
}

/**
 * Parse a Scheduled Events answer body. Tolerant of every known payload variety; throws ImdsResponseError
 * (reason 'invalid-response', with a short excerpt) when the body cannot be a Scheduled Events document.
 */
export function parseScheduledEventsDocument(body: string): ScheduledEventsDocument {
  const json = parseJsonBody(body, 'scheduled events');
  if (!isRecord(json)) throw new ImdsResponseError('IMDS scheduled events answer is not a JSON object', body);
  const incarnation = parseIncarnation(json.DocumentIncarnation, body);
  if (!Array.isArray(json.Events)) {
    throw new ImdsResponseError(
      `IMDS document Events is ${json.Events === undefined ? 'missing' : 'not an array'}`,
      body,
    );
  }
  return {
    DocumentIncarnation: incarnation,
    Events: json.Events.map((event, index) => parseEvent(event, index, body)),
  };
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

/**
 * Parse an instance metadata answer (/metadata/instance) to the VM identity (compute section).
 * Missing values are "". Throws ImdsResponseError when the body is not JSON or has no compute object.
 */
export function parseInstanceMetadata(body: string): VmIdentity {
  const json = parseJsonBody(body, 'instance metadata');
  if (!isRecord(json) || !isRecord(json.compute)) {
    throw new ImdsResponseError('IMDS instance metadata answer has no "compute" object', body);
  }
  const c = json.compute;
  const osProfile = isRecord(c.osProfile) ? c.osProfile : {};
  return {
    name: text(c.name),
    vmId: text(c.vmId),
    resourceId: text(c.resourceId),
    subscriptionId: text(c.subscriptionId),
    resourceGroupName: text(c.resourceGroupName),
    location: text(c.location),
    zone: text(c.zone),
    vmScaleSetName: text(c.vmScaleSetName),
    vmSize: text(c.vmSize),
    osType: text(c.osType),
    computerName: text(osProfile.computerName),
  };
}

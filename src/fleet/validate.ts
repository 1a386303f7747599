/**
 * Validation of an incoming fleet record (an Event Hubs body) before anything of it reaches SQL or the fold.
 * Every field the fold reads or the store binds is checked for type AND size with a zod schema (loose objects:
 * unknown fields are allowed and kept), no string anywhere may hold a NUL character (PostgreSQL text cannot
 * store it) or an unpaired surrogate, nesting is bounded (so JSON.stringify of the record cannot overflow the
 * stack), and the whole body is at most MAX_BODY_BYTES of UTF-8 text. A record that passes can be bound and
 * folded without throwing; one that fails gets a one-line reason naming the field, e.g.
 * `data.vm.name: expected a string, got an object`, so one poison record never freezes a partition.
 */
import { z } from 'zod';
import {
  HEARTBEAT_SINK_STATES,
  HEARTBEAT_TRIGGERS,
  HEARTBEAT_TYPE,
  type HeartbeatRecord,
  type LifecycleRecord,
  RECORD_TYPE_PREFIX,
  TRANSITIONS,
  type Transition,
} from '../domain/index.ts';
import { errorMessage } from '../errors.ts';

/** Largest accepted body: UTF-8 size of its JSON text form. */
export const MAX_BODY_BYTES = 256 * 1024;
/** Larger text/bytes bodies are rejected without even being parsed (bounds the work per poison body). */
export const MAX_PARSE_BYTES = 4 * 1024 * 1024;
/** Deepest nesting of objects/arrays anywhere in the record (real records nest 4 levels). */
export const MAX_DEPTH = 32;
/** CloudEvents `id` (a UUID in practice). */
export const MAX_ID_LENGTH = 256;
/** CloudEvents `source` (an ARM resource ID or a URN). */
export const MAX_SOURCE_LENGTH = 1024;
/** CloudEvents `subject` (the EventId). */
export const MAX_SUBJECT_LENGTH = 256;
/** Names and identifiers: VM name, vmId, location, zone, scale set, EventType, EventStatus, rule, ... */
export const MAX_NAME_LENGTH = 256;
/** ARM resource IDs (data.vm.resourceId). */
export const MAX_RESOURCE_ID_LENGTH = 1024;
/** Timestamps (ISO 8601, RFC 1123). */
export const MAX_TIMESTAMP_LENGTH = 64;
/** data.Description (and data.previous.Description). */
export const MAX_DESCRIPTION_LENGTH = 16 * 1024;
/** Entries of data.Resources. */
export const MAX_RESOURCES = 10_000;
/** Length of one entry of data.Resources. */
export const MAX_RESOURCE_NAME_LENGTH = 256;
/** data.DurationInSeconds range (-1 = unknown). */
export const MIN_DURATION_SECONDS = -1;
export const MAX_DURATION_SECONDS = 10_000_000;
/** data.occurrence (and data.updateSequence) range. */
export const MAX_OCCURRENCE = 1_000_000;
/** |data.timing.noticeSeconds| (negative when first seen after NotBefore); about 31 years. */
export const MAX_ABS_NOTICE_SECONDS = 1_000_000_000;
/** data.observedImpact.downtimeSeconds. */
export const MAX_IMPACT_SECONDS = 1_000_000_000;
/** data.observedImpact.longestStallMs / longestObservationGapMs. */
export const MAX_IMPACT_MS = 1_000_000_000_000;
/** Entries of data.changed. */
export const MAX_CHANGED = 16;
/** Entries of data.approval.hooks. */
export const MAX_HOOKS = 100;
/** Longest rejection reason. */
export const MAX_REASON_LENGTH = 300;
/** Entries of a heartbeat's data.sinks. */
export const MAX_HEARTBEAT_SINKS = 100;
/** A heartbeat's sinks[].lastError (the forwarder cuts it at 300). */
export const MAX_HEARTBEAT_ERROR_LENGTH = 1000;
/** data.intervalSeconds of a heartbeat: at most a week. */
export const MAX_HEARTBEAT_INTERVAL_SECONDS = 7 * 24 * 3600;
/** Counts in a heartbeat (sequence, pending, dead letters, failures). */
export const MAX_HEARTBEAT_COUNT = 1_000_000_000_000;

const name = z.string().max(MAX_NAME_LENGTH);
const nonEmpty = (max: number) => z.string().min(1).max(max);
const isTimestamp = (s: string) => !Number.isNaN(Date.parse(s));
/** A parseable timestamp. */
const timestamp = z.string().min(1).max(MAX_TIMESTAMP_LENGTH).refine(isTimestamp, 'not a timestamp');
/** A parseable timestamp, '' or null (the fold treats '' and null as unknown). */
const optionalTimestamp = z
  .string()
  .max(MAX_TIMESTAMP_LENGTH)
  .refine((s) => s === '' || isTimestamp(s), 'not a timestamp')
  .nullable()
  .optional();
const duration = z.number().min(MIN_DURATION_SECONDS).max(MAX_DURATION_SECONDS);
const resources = z.array(z.string().max(MAX_RESOURCE_NAME_LENGTH)).max(MAX_RESOURCES);
const description = z.string().max(MAX_DESCRIPTION_LENGTH);

const recordType = z
  .string()
  .min(1)
  .max(MAX_NAME_LENGTH)
  .superRefine((type, ctx) => {
    if (!type.startsWith(`${RECORD_TYPE_PREFIX}.`))
      ctx.addIssue({ code: 'custom', message: `unknown type ${quote(type)}` });
    else if (!(TRANSITIONS as readonly string[]).includes(type.slice(RECORD_TYPE_PREFIX.length + 1)))
      ctx.addIssue({
        code: 'custom',
        message: `unknown transition ${quote(type.slice(RECORD_TYPE_PREFIX.length + 1))}`,
      });
  });

const vmSchema = z.looseObject({
  name: name.optional(),
  vmId: name.optional(),
  resourceId: z.string().max(MAX_RESOURCE_ID_LENGTH).optional(),
  subscriptionId: name.optional(),
  resourceGroup: name.optional(),
  location: name.optional(),
  zone: name.optional(),
  vmScaleSetName: name.optional(),
  vmSize: name.optional(),
  computerName: name.optional(),
});

const timingSchema = z.looseObject({
  firstSeenAt: optionalTimestamp,
  startedAt: optionalTimestamp,
  endedAt: optionalTimestamp,
  noticeSeconds: z.number().min(-MAX_ABS_NOTICE_SECONDS).max(MAX_ABS_NOTICE_SECONDS).nullable().optional(),
});

const impactMs = z.number().min(0).max(MAX_IMPACT_MS).nullable().optional();
const observedImpactSchema = z.looseObject({
  expectedDurationSeconds: duration.nullable().optional(),
  hostRebooted: z.boolean().nullable().optional(),
  downtimeSeconds: z.number().min(0).max(MAX_IMPACT_SECONDS).nullable().optional(),
  downtimeFrom: optionalTimestamp,
  downtimeTo: optionalTimestamp,
  longestStallMs: impactMs,
  longestObservationGapMs: impactMs,
});

const approvalSchema = z.looseObject({
  approvedAt: optionalTimestamp,
  rule: name.nullable().optional(),
  leader: z.boolean().optional(),
  posted: z.boolean().optional(),
  dryRun: z.boolean().optional(),
  hooks: z
    .array(z.looseObject({ name: name.optional() }))
    .max(MAX_HOOKS)
    .optional(),
});

const previousSchema = z.looseObject({
  NotBefore: name.optional(),
  notBeforeUtc: optionalTimestamp,
  Resources: resources.optional(),
  DurationInSeconds: duration.optional(),
  Description: description.optional(),
});

const dataSchema = z.looseObject({
  EventId: z.string().max(MAX_SUBJECT_LENGTH).optional(),
  EventType: name.optional(),
  EventStatus: name.optional(),
  ResourceType: name.optional(),
  Resources: resources.optional(),
  NotBefore: name.optional(),
  Description: description.optional(),
  EventSource: name.optional(),
  DurationInSeconds: duration.optional(),
  DocumentIncarnation: z.int().min(-1).optional(),
  notBeforeUtc: optionalTimestamp,
  affectsThisVm: z.boolean().optional(),
  vm: vmSchema,
  timing: timingSchema,
  firstSeenStatus: name.optional(),
  occurrence: z.int().min(1).max(MAX_OCCURRENCE).optional(),
  inferred: z.boolean().optional(),
  reason: name.optional(),
  observedImpact: observedImpactSchema.optional(),
  changed: z.array(name).max(MAX_CHANGED).optional(),
  previous: previousSchema.optional(),
  updateSequence: z.int().min(1).max(MAX_OCCURRENCE).optional(),
  approval: approvalSchema.optional(),
  eventKnown: z.boolean().optional(),
});

/** The checked part of a lifecycle record (docs/record-format.md); every other field passes unchanged. */
export const fleetRecordSchema = z.looseObject({
  specversion: z.literal('1.0'),
  id: nonEmpty(MAX_ID_LENGTH),
  source: nonEmpty(MAX_SOURCE_LENGTH),
  type: recordType,
  subject: nonEmpty(MAX_SUBJECT_LENGTH),
  time: timestamp,
  datacontenttype: name.optional(),
  maintenancetype: name.optional(),
  vmid: name.optional(),
  data: dataSchema,
});

const count = z.int().min(0).max(MAX_HEARTBEAT_COUNT);
const heartbeatSinkSchema = z.looseObject({
  name: nonEmpty(MAX_NAME_LENGTH),
  type: nonEmpty(MAX_NAME_LENGTH),
  state: z.enum(HEARTBEAT_SINK_STATES),
  pending: count,
  oldestPendingAgeSeconds: z.number().min(0).max(MAX_HEARTBEAT_COUNT),
  deadLetters: count,
  lastError: z.string().max(MAX_HEARTBEAT_ERROR_LENGTH).optional(),
});

/** The checked part of a heartbeat (docs/record-format.md, Heartbeats); other fields pass unchanged. */
export const fleetHeartbeatSchema = z.looseObject({
  specversion: z.literal('1.0'),
  id: nonEmpty(MAX_ID_LENGTH),
  source: nonEmpty(MAX_SOURCE_LENGTH),
  type: z.literal(HEARTBEAT_TYPE),
  time: timestamp,
  vmid: name.optional(),
  data: z.looseObject({
    trigger: z.enum(HEARTBEAT_TRIGGERS),
    sequence: z.int().min(1).max(MAX_HEARTBEAT_COUNT),
    intervalSeconds: z.int().min(1).max(MAX_HEARTBEAT_INTERVAL_SECONDS),
    vm: vmSchema,
    kubernetes: z.looseObject({ nodeName: name, clusterName: name.optional() }).optional(),
    forwarder: z.looseObject({
      version: nonEmpty(MAX_NAME_LENGTH),
      configDigest: name,
      startedAt: timestamp,
      platform: name,
      source: name,
    }),
    imds: z.looseObject({
      ok: z.boolean(),
      lastSuccessAt: optionalTimestamp,
      consecutiveFailures: count,
      lastFailure: z.looseObject({ reason: name, at: timestamp }).optional(),
    }),
    store: z.looseObject({ ok: z.boolean() }),
    sinks: z.array(heartbeatSinkSchema).max(MAX_HEARTBEAT_SINKS),
    approval: z.looseObject({
      policy: z.boolean(),
      rules: count,
      dryRun: z.boolean(),
      leader: name,
      hooks: count,
    }),
  }),
});

/**
 * Checks that `value` (an event body: object, JSON text or bytes) is a lifecycle record this consumer can store
 * and fold. Returns the record (with `transition` set from `type`), or the reason it is rejected. Never throws.
 * A heartbeat is rejected here: parseFleetEvent takes both.
 */
export function parseRecord(value: unknown): { record: LifecycleRecord } | { error: string } {
  const parsed = parseFleetEvent(value);
  if ('heartbeat' in parsed) return { error: 'body is a heartbeat, not a lifecycle record' };
  return parsed;
}

/**
 * Checks that `value` is a lifecycle record (as parseRecord) or a heartbeat this consumer can keep (type and size
 * of every field it reads, under the same bounds). Never throws.
 */
export function parseFleetEvent(
  value: unknown,
): { record: LifecycleRecord } | { heartbeat: HeartbeatRecord } | { error: string } {
  try {
    return check(value);
  } catch (error) {
    // Not expected (every input is plain JSON by now); a validator must still never throw.
    return {
      error: cut(`body could not be checked: ${errorMessage(error)}`),
    };
  }
}

function check(
  value: unknown,
): { record: LifecycleRecord } | { heartbeat: HeartbeatRecord } | { error: string } {
  let text: string;
  let bytes: number;
  if (value instanceof Uint8Array || typeof value === 'string') {
    bytes = typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : value.byteLength;
    if (bytes > MAX_PARSE_BYTES) return { error: tooLarge(bytes) };
    text =
      typeof value === 'string'
        ? value
        : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
  } else {
    // Validate (and store) exactly the JSON form: no getters, Dates, undefined or cycles left.
    try {
      const json = JSON.stringify(value) as string | undefined;
      if (json === undefined) return { error: 'body is not an object' };
      text = json;
    } catch {
      return { error: 'body is not serialisable as JSON' };
    }
    bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_PARSE_BYTES) return { error: tooLarge(bytes) };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: 'body is not JSON' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { error: 'body is not an object' };

  const structure = checkStructure(body, [], 0);
  if (structure !== undefined) return { error: cut(structure) };
  if ((body as { type?: unknown }).type === HEARTBEAT_TYPE) {
    const beat = fleetHeartbeatSchema.safeParse(body);
    if (!beat.success) return { error: describeIssues(beat.error.issues, body, 'a heartbeat') };
    if (bytes > MAX_BODY_BYTES) return { error: tooLarge(bytes) };
    return { heartbeat: body as HeartbeatRecord };
  }
  const parsed = fleetRecordSchema.safeParse(body);
  if (!parsed.success) return { error: describeIssues(parsed.error.issues, body) };
  if (bytes > MAX_BODY_BYTES) return { error: tooLarge(bytes) };

  const record = body as LifecycleRecord;
  const transition = record.type.slice(RECORD_TYPE_PREFIX.length + 1) as Transition;
  return { record: { ...record, transition } };
}

function tooLarge(bytes: number): string {
  return `body: ${bytes} bytes of UTF-8, more than ${MAX_BODY_BYTES}`;
}

/**
 * Walks every value: bounded nesting, and no string (value or key) holding NUL or an unpaired surrogate.
 * Returns the first problem, or undefined.
 */
function checkStructure(value: unknown, path: PropertyKey[], depth: number): string | undefined {
  if (typeof value === 'string') return stringProblem(value, path);
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= MAX_DEPTH) return `${formatPath(path)}: nested deeper than ${MAX_DEPTH} levels`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const problem = checkStructure(value[i], path, depth + 1);
      path.pop();
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    path.push(key);
    const problem = stringProblem(key, path, 'its key') ?? checkStructure(item, path, depth + 1);
    path.pop();
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function stringProblem(s: string, path: readonly PropertyKey[], what = ''): string | undefined {
  const subject = what === '' ? '' : ` (${what})`;
  if (s.includes('\u0000')) return `${formatPath(path)}${subject}: contains a NUL character`;
  if (!s.isWellFormed())
    return `${formatPath(path)}${subject}: contains an unpaired surrogate (not valid Unicode)`;
  return undefined;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `['data', 'Resources', 3]` → `data.Resources[3]`; odd keys quoted and cut. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && IDENTIFIER.test(segment) && segment.length <= 64)
      out += out === '' ? segment : `.${segment}`;
    else out += `[${quote(String(segment))}]`;
  }
  return out === '' ? 'body' : out;
}

/** A string shown in a reason: JSON-quoted, at most 40 characters of it. */
function quote(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

function cut(reason: string): string {
  return reason.length <= MAX_REASON_LENGTH ? reason : `${reason.slice(0, MAX_REASON_LENGTH - 1)}…`;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number')
    return Number.isFinite(value) ? `a number (${value})` : `non-finite ${value}`;
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string';
  return `a ${typeof value}`;
}

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let at = body;
  for (const segment of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<PropertyKey, unknown>)[segment];
  }
  return at;
}

function describeIssue(issue: z.core.$ZodIssue, body: unknown): string {
  const where = formatPath(issue.path);
  const value = valueAt(body, issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      if (value === undefined) return `${where}: missing (expected ${expected})`;
      return `${where}: expected ${expected}, got ${describeValue(value)}`;
    }
    case 'too_big':
      if (issue.origin === 'string') return `${where}: longer than ${issue.maximum} characters`;
      if (issue.origin === 'array') return `${where}: more than ${issue.maximum} items`;
      return `${where}: ${String(value)} is greater than ${issue.maximum}`;
    case 'too_small':
      if (issue.origin === 'string')
        return Number(issue.minimum) === 1
          ? `${where}: empty`
          : `${where}: shorter than ${issue.minimum} characters`;
      if (issue.origin === 'array') return `${where}: fewer than ${issue.minimum} items`;
      return `${where}: ${String(value)} is less than ${issue.minimum}`;
    case 'invalid_value':
      return `${where}: expected ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
    default:
      return `${where}: ${issue.message}`;
  }
}

function describeIssues(
  issues: readonly z.core.$ZodIssue[],
  body: unknown,
  what = 'a lifecycle record',
): string {
  const first = issues[0];
  if (first === undefined) return `body is not ${what}`;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return cut(`${describeIssue(first, body)}${more}`);
}

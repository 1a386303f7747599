/**
 * Simulated Scheduled Events: the input shape accepted by the admin API, scenarios and the CLI
 * (`injectEventSchema`), and per-type defaults taken from the reference (minimum notice, descriptions).
 */
import { z } from 'zod';

/** Event statuses IMDS shows. There is no Completed: a finished event disappears. */
export type SimEventStatus = 'Scheduled' | 'Started';

/** An event held by the simulator (times are simulated epoch milliseconds). */
export interface SimEvent {
  id: string;
  type: string;
  resourceType: string;
  /** Affected VM names (IMDS `Resources`). */
  resources: string[];
  status: SimEventStatus;
  /** NotBefore while Scheduled (whole seconds); null when unknown. */
  notBeforeMs: number | null;
  description: string;
  eventSource: string;
  durationInSeconds: number;
  /** How long the event stays Started before it disappears (is completed). */
  startedForMs: number;
  /** Start automatically when NotBefore passes (Azure's approval timeout). */
  autoStart: boolean;
  /** Availability sets whose VMs see this event (broadcast scope). */
  audienceSets: string[];
  createdAtMs: number;
  startedAtMs: number | null;
}

/** Minimum notice per EventType (reference table); Terminate uses the middle of its 5-15 min range. */
export const DEFAULT_NOTICE_MS: Record<string, number> = {
  Freeze: 15 * 60_000,
  Reboot: 15 * 60_000,
  Redeploy: 10 * 60_000,
  Terminate: 10 * 60_000,
  Preempt: 30_000,
};

/** Typical time an event stays Started before it is removed (reference: about 10 min; freeze 5 min). */
export const DEFAULT_STARTED_FOR_MS: Record<string, number> = { Freeze: 5 * 60_000 };
export const FALLBACK_STARTED_FOR_MS = 10 * 60_000;

/** Descriptions seen in real documents. */
export const DEFAULT_DESCRIPTION: Record<string, string> = {
  Freeze: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
  Reboot: 'Host server is undergoing maintenance.',
  Redeploy: 'Host server is undergoing maintenance.',
  Preempt: '',
  Terminate: '',
};

const durationLike = z.union([z.number().nonnegative(), z.string().min(1)]);

/** Azure's PascalCase field names accepted as aliases, so a document's event can be injected verbatim. */
const PASCAL_ALIASES: Record<string, string> = {
  EventId: 'id',
  EventType: 'type',
  ResourceType: 'resourceType',
  Resources: 'resources',
  targets: 'resources',
  EventStatus: 'status',
  NotBefore: 'notBefore',
  Description: 'description',
  EventSource: 'eventSource',
  DurationInSeconds: 'durationInSeconds',
};

function normaliseKeys(input: unknown): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) out[PASCAL_ALIASES[key] ?? key] = value;
  return out;
}

/**
 * An event to inject. Everything is optional: the defaults give a platform Reboot for the primary VM with
 * the type's minimum notice. `notBefore` is an absolute time (RFC 1123, ISO 8601 or epoch ms);
 * `noticeSeconds` is relative to now (a number of seconds or a duration such as "15m").
 */
export const injectEventSchema = z.preprocess(
  normaliseKeys,
  z.strictObject({
    id: z.string().min(1).optional(),
    type: z.string().min(1).default('Reboot'),
    resourceType: z.string().min(1).default('VirtualMachine'),
    resources: z.array(z.string().min(1)).optional(),
    status: z.enum(['Scheduled', 'Started']).default('Scheduled'),
    notBefore: z.union([z.string(), z.number()]).optional(),
    noticeSeconds: durationLike.optional(),
    description: z.string().optional(),
    eventSource: z.string().min(1).default('Platform'),
    durationInSeconds: z.number().int().min(-1).default(-1),
    startedFor: durationLike.optional(),
    autoStart: z.boolean().default(true),
    availabilitySet: z.string().min(1).optional(),
  }),
);

export type InjectEventInput = z.input<typeof injectEventSchema>;
export type InjectEvent = z.output<typeof injectEventSchema>;

/** Formats simulated time as IMDS does for NotBefore (RFC 1123, e.g. "Mon, 11 Apr 2022 22:26:58 GMT"). */
export function rfc1123(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Parses an absolute time given as epoch ms, RFC 1123 or ISO 8601. */
export function parseInstant(value: string | number, what = 'notBefore'): number {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms))
    throw new RangeError(`${what} "${String(value)}" is not a time (RFC 1123, ISO 8601 or epoch ms)`);
  return ms;
}

/** Rounds down to a whole second, as NotBefore has second resolution. */
export function floorToSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

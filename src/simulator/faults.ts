/**
 * Fault injection: how the simulated IMDS misbehaves (latency, slow first call, 429/5xx, connection reset,
 * hang, HTML from a proxy, truncated JSON, empty body, 5 req/s rate limiting, a UTF-8 byte order mark before the
 * real answer, an arbitrary raw body given as base64 — invalid UTF-8, absurd nesting). Faults apply globally or to
 * one VM, to one endpoint or all, optionally for the next N matching requests only.
 */
import { z } from 'zod';
import { type Clock, systemClock } from '../clock.ts';
import { errorMessage } from '../errors.ts';

export const FAULT_KINDS = [
  'latency',
  'slow-first-call',
  'status',
  'reset',
  'hang',
  'html',
  'truncated-json',
  'empty-body',
  'rate-limit',
  'bom',
  'raw-body',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const FAULT_ENDPOINTS = ['scheduledevents', 'instance', 'token', 'any'] as const;
export type FaultEndpoint = (typeof FAULT_ENDPOINTS)[number];

/** A fault. `ms` for latency/slow-first-call; `status` (default 500) and `retryAfterSeconds` for status. */
export const faultSchema = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  /** Delay for latency and slow-first-call (real milliseconds). */
  ms: z.number().int().nonnegative().default(1000),
  /** HTTP status for kind "status" (e.g. 429, 410, 500, 503). */
  status: z.number().int().min(400).max(599).default(500),
  /** Retry-After header in seconds (kind "status", and the 429s of "rate-limit"). */
  retryAfterSeconds: z.number().int().nonnegative().optional(),
  /** Requests per second allowed per VM by "rate-limit" (IMDS: 5). */
  perSecond: z.number().int().positive().default(5),
  /** Exact bytes (base64) that kind "raw-body" answers with, status 200, Content-Type application/json. */
  bodyBase64: z.string().default(''),
  /** Only requests of this VM identity (default: every VM). */
  vm: z.string().min(1).optional(),
  /** Only this endpoint (default: any). */
  endpoint: z.enum(FAULT_ENDPOINTS).default('any'),
  /** Only this method (default: any). */
  method: z.enum(['GET', 'POST', 'any']).default('any'),
  /** Apply to the next N matching requests only (default: until cleared). */
  count: z.number().int().positive().optional(),
});
export type FaultInput = z.input<typeof faultSchema>;
export type Fault = z.output<typeof faultSchema>;

/** What a request is, for fault matching. */
export interface RequestKey {
  vm: string;
  endpoint: Exclude<FaultEndpoint, 'any'>;
  method: string;
}

/** The faults decided for one request. */
export interface FaultDecision {
  /** Real milliseconds to wait before answering. */
  delayMs: number;
  /** The fault that replaces or spoils the answer, if any. */
  terminal?: Fault;
  /** Kinds applied (for the request log). */
  applied: FaultKind[];
}

interface ActiveFault {
  fault: Fault;
  remaining: number;
  /** VMs that already had their first call (slow-first-call). */
  served: Set<string>;
}

/**
 * Parses a fault given on the command line: JSON (`{"kind":"status","status":503}`) or the compact form
 * `kind[:name=value,...]`, e.g. `status:status=429,retryAfterSeconds=2,count=3`, `rate-limit`, `latency:ms=200`.
 */
export function parseFaultSpec(spec: string): Fault {
  const text = spec.trim();
  let fields: Record<string, unknown>;
  if (text.startsWith('{')) {
    try {
      fields = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new RangeError(`not valid JSON (${errorMessage(error)}). ${FAULT_SPEC_FORM}`);
    }
  } else {
    const [kind, rest] = text.split(/:(.*)/s, 2);
    fields = { kind };
    for (const pair of (rest ?? '').split(',').filter(Boolean)) {
      const [key, value] = pair.split('=', 2);
      if (!key || value === undefined)
        throw new RangeError(`fault option "${pair}" must be key=value. ${FAULT_SPEC_FORM}`);
      fields[key.trim()] = /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value.trim()) : value.trim();
    }
  }
  const result = faultSchema.safeParse(fields);
  if (result.success) return result.data;
  throw new RangeError(
    `${result.error.issues.map((i) => describeFaultIssue(i, fields)).join('; ')}. ${FAULT_SPEC_FORM}`,
  );
}

/** The accepted form of a fault, for error messages and --help. */
export const FAULT_SPEC_FORM =
  `Form: kind[:name=value,...] or JSON; kinds: ${FAULT_KINDS.join(', ')}; parameters: ms (integer >= 0), ` +
  'status (400-599), retryAfterSeconds (integer >= 0), perSecond (integer > 0), vm (name), ' +
  `endpoint (${FAULT_ENDPOINTS.join('|')}), method (GET|POST|any), count (integer > 0); ` +
  'e.g. status:status=503,count=2';

/** One zod issue of a fault as a short phrase naming the key (never a raw issue object). */
function describeFaultIssue(issue: z.core.$ZodIssue, fields: Record<string, unknown>): string {
  const key = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    return `unknown key${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  if (key === 'kind') {
    return fields.kind === undefined || fields.kind === ''
      ? 'missing fault kind'
      : `unknown fault kind ${JSON.stringify(fields.kind)}`;
  }
  const value = fields[key];
  const shown = value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
  if (issue.code === 'invalid_value') return `${key} must be one of ${issue.values.join('|')}${shown}`;
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    return `${key} must be ${issue.code === 'too_small' ? '>=' : '<='} ${String(issue.code === 'too_small' ? issue.minimum : issue.maximum)}${shown}`;
  }
  if (issue.code === 'invalid_type')
    return `${key} must be ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}${shown}`;
  return `${key}: ${issue.message}${shown}`;
}

/** The active faults and the per-VM rate-limit windows. */
export class FaultController {
  #active: ActiveFault[] = [];
  readonly #windows = new Map<string, number[]>();
  readonly #realClock: Clock;

  /** `realClock` measures the rate-limit window (real time, not simulated). */
  constructor(realClock: Clock = systemClock) {
    this.#realClock = realClock;
  }

  /** Replaces every fault with `faults`. */
  set(faults: FaultInput[]): Fault[] {
    const parsed = faults.map((f) => faultSchema.parse(f));
    this.#active = parsed.map((fault) => ({
      fault,
      remaining: fault.count ?? Number.POSITIVE_INFINITY,
      served: new Set(),
    }));
    return parsed;
  }

  /** Adds one fault. */
  add(fault: FaultInput): Fault {
    const parsed = faultSchema.parse(fault);
    this.#active.push({
      fault: parsed,
      remaining: parsed.count ?? Number.POSITIVE_INFINITY,
      served: new Set(),
    });
    return parsed;
  }

  clear(): void {
    this.#active = [];
    this.#windows.clear();
  }

  list(): Array<Fault & { remaining: number | null }> {
    return this.#active.map((a) => ({
      ...a.fault,
      remaining: Number.isFinite(a.remaining) ? a.remaining : null,
    }));
  }

  /** Decides (and consumes) the faults for one request. */
  decide(request: RequestKey): FaultDecision {
    const decision: FaultDecision = { delayMs: 0, applied: [] };
    for (const active of this.#active) {
      const f = active.fault;
      if (active.remaining <= 0) continue;
      if (f.vm !== undefined && f.vm !== request.vm) continue;
      if (f.endpoint !== 'any' && f.endpoint !== request.endpoint) continue;
      if (f.method !== 'any' && f.method !== request.method) continue;
      if (f.kind === 'latency') {
        decision.delayMs += f.ms;
      } else if (f.kind === 'slow-first-call') {
        if (active.served.has(request.vm)) continue;
        active.served.add(request.vm);
        decision.delayMs += f.ms;
      } else if (f.kind === 'rate-limit') {
        if (decision.terminal || this.#withinRate(request.vm, f.perSecond)) continue;
        decision.terminal = {
          ...f,
          kind: 'status',
          status: 429,
          retryAfterSeconds: f.retryAfterSeconds ?? 1,
        };
      } else {
        if (decision.terminal) continue;
        decision.terminal = f;
      }
      active.remaining--;
      decision.applied.push(f.kind);
    }
    this.#active = this.#active.filter((a) => a.remaining > 0);
    return decision;
  }

  /** Sliding one-second window per VM; true when this request is within the allowed rate. */
  #withinRate(vm: string, perSecond: number): boolean {
    const now = this.#realClock.monotonic();
    const window = (this.#windows.get(vm) ?? []).filter((t) => now - t < 1000);
    const allowed = window.length < perSecond;
    if (allowed) window.push(now);
    this.#windows.set(vm, window);
    return allowed;
  }
}

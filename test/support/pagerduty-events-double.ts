/**
 * A PagerDuty Events API v2 receiver on 127.0.0.1 (POST /v2/enqueue) for the pagerduty sink's tests: it checks
 * each event against the documented contract (routing_key of 32 characters; event_action trigger, acknowledge or
 * resolve; dedup_key of at most 255 characters, required to acknowledge or resolve; a trigger's payload with
 * summary of 1 to 1024 characters, source, severity critical/error/warning/info, an ISO 8601 timestamp,
 * string component/group/class, object custom_details; at most 512 KB) and answers like PagerDuty:
 * 202 {"status":"success","message":"Event processed","dedup_key":…}, or
 * 400 {"status":"invalid event","message":"Event object is invalid","errors":[…]}. With `integrationKeys` set,
 * a well-formed routing key that is none of them is refused as PagerDuty refuses an unknown integration key:
 * 400 with errors ["Invalid routing key"]. Faults (429 with or without Retry-After, 5xx, a hang, a rejection by
 * content) are scripted with `fault`.
 */
import { HttpSinkServer, type RecordedRequest, type ScriptedResponse } from './http-sink-server.ts';
import type { ServerTls } from './tls-certs.ts';

export interface PagerDutyEventRecord {
  routing_key: string;
  event_action: 'trigger' | 'acknowledge' | 'resolve';
  dedup_key: string;
  payload?: {
    summary: string;
    source: string;
    severity: 'critical' | 'error' | 'warning' | 'info';
    timestamp?: string;
    component?: string;
    group?: string;
    class?: string;
    custom_details?: Record<string, unknown>;
  };
  [key: string]: unknown;
}

const ACTIONS = ['trigger', 'acknowledge', 'resolve'];
const SEVERITIES = ['critical', 'error', 'warning', 'info'];
const MAX_EVENT_BYTES = 512 * 1024;

/** The documented contract's violations in `body` (empty: a valid event). */
export function pagerDutyEventProblems(body: string): string[] {
  if (Buffer.byteLength(body) > MAX_EVENT_BYTES) return ['Event object is larger than 512 KB'];
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    return ['Event object is not valid JSON'];
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) return ['Event must be an object'];
  const e = event as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof e.routing_key !== 'string' || e.routing_key.length !== 32) {
    problems.push("Length of 'routing_key' is incorrect (should be 32 characters)");
  }
  if (typeof e.event_action !== 'string' || !ACTIONS.includes(e.event_action)) {
    problems.push("'event_action' is missing or blank");
  }
  if (e.dedup_key !== undefined && (typeof e.dedup_key !== 'string' || e.dedup_key.length > 255)) {
    problems.push("'dedup_key' must be a string of at most 255 characters");
  }
  if ((e.event_action === 'resolve' || e.event_action === 'acknowledge') && typeof e.dedup_key !== 'string') {
    problems.push("'dedup_key' is required to acknowledge or resolve");
  }
  if (e.event_action === 'trigger') {
    const p = e.payload as Record<string, unknown> | undefined;
    if (p === undefined || p === null || typeof p !== 'object')
      problems.push("'payload' is missing or blank");
    else {
      if (typeof p.summary !== 'string' || p.summary.length === 0)
        problems.push("'payload.summary' is missing or blank");
      else if (p.summary.length > 1024) problems.push("'payload.summary' is longer than 1024 characters");
      if (typeof p.source !== 'string' || p.source.length === 0)
        problems.push("'payload.source' is missing or blank");
      if (typeof p.severity !== 'string' || !SEVERITIES.includes(p.severity)) {
        problems.push("'payload.severity' must be one of critical, error, warning or info");
      }
      if (
        p.timestamp !== undefined &&
        (typeof p.timestamp !== 'string' || Number.isNaN(Date.parse(p.timestamp)))
      ) {
        problems.push("'payload.timestamp' is not a valid ISO 8601 timestamp");
      }
      for (const key of ['component', 'group', 'class']) {
        if (p[key] !== undefined && typeof p[key] !== 'string')
          problems.push(`'payload.${key}' must be a string`);
      }
      if (
        p.custom_details !== undefined &&
        (p.custom_details === null || typeof p.custom_details !== 'object' || Array.isArray(p.custom_details))
      ) {
        problems.push("'payload.custom_details' must be an object");
      }
    }
  }
  return problems;
}

export class PagerDutyEventsDouble {
  readonly #server: HttpSinkServer;
  /** Events answered 202, in arrival order. */
  readonly accepted: PagerDutyEventRecord[] = [];
  #fault: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined;
  #integrationKeys: ReadonlySet<string> | undefined;
  #generated = 0;

  private constructor(server: HttpSinkServer) {
    this.#server = server;
    server.setResponder((request) => this.#answer(request));
  }

  /** With `options.tls`: over HTTPS (test/support/tls-certs.ts). */
  static async start(options: { tls?: ServerTls } = {}): Promise<PagerDutyEventsDouble> {
    return new PagerDutyEventsDouble(await HttpSinkServer.start(undefined, options));
  }

  /** http://127.0.0.1:<port>/v2/enqueue */
  get url(): string {
    return this.#server.url('/v2/enqueue');
  }

  /** Every request, answered or not. */
  get requests(): readonly RecordedRequest[] {
    return this.#server.requests;
  }

  /**
   * Answers requests with what `fault` returns instead of processing them (undefined: process normally), e.g.
   * `() => ({ status: 429 })`, `(r) => (r.body.includes(id) ? { status: 400, body } : undefined)`. Undefined
   * lifts it.
   */
  fault(fault: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined): void {
    this.#fault = fault;
  }

  /**
   * The routing keys of the integrations that exist (undefined, the default: any well-formed key is accepted).
   * An event with another key is refused with 400 "Invalid routing key".
   */
  integrationKeys(keys: readonly string[] | undefined): void {
    this.#integrationKeys = keys === undefined ? undefined : new Set(keys);
  }

  #answer(request: RecordedRequest): ScriptedResponse {
    const json = { 'content-type': 'application/json' };
    const faulted = this.#fault?.(request);
    if (faulted !== undefined) return faulted;
    if (request.method !== 'POST' || request.url !== '/v2/enqueue') {
      return { status: 404, headers: json, body: JSON.stringify({ status: 'not found' }) };
    }
    const problems = pagerDutyEventProblems(request.body);
    if (problems.length === 0 && this.#integrationKeys !== undefined) {
      const key = (JSON.parse(request.body) as PagerDutyEventRecord).routing_key;
      if (!this.#integrationKeys.has(key)) problems.push('Invalid routing key');
    }
    if (problems.length > 0) {
      return {
        status: 400,
        headers: json,
        body: JSON.stringify({
          status: 'invalid event',
          message: 'Event object is invalid',
          errors: problems,
        }),
      };
    }
    const event = JSON.parse(request.body) as PagerDutyEventRecord;
    this.#generated += 1;
    const dedupKey = event.dedup_key ?? `generated-${this.#generated}`;
    this.accepted.push({ ...event, dedup_key: dedupKey });
    return {
      status: 202,
      headers: json,
      body: JSON.stringify({ status: 'success', message: 'Event processed', dedup_key: dedupKey }),
    };
  }

  close(): Promise<void> {
    return this.#server.close();
  }
}

/**
 * A faithful local double of Alertmanager's alert-receiving API (`POST /api/v2/alerts`, API v2 as in
 * Alertmanager 0.25) for the npm test tier, where the real binary is not installed (the real Alertmanager is
 * tested in the observability tier: test/observability/alertmanager.test.ts). Like Alertmanager it
 * validates every alert of a batch (at least one label, label names [a-zA-Z_][a-zA-Z0-9_]*, a startsAt, endsAt
 * not before startsAt), drops empty label values, stores the valid alerts by label set (a later alert with the
 * same labels replaces the earlier one), and answers 200 with an empty body, or 400 with its validation errors as
 * a JSON string ("start time must be before end time") after storing the valid ones. Optional basic auth:
 * 401 without it. Faults (503, a hang, a rejection by content) are scripted with `fault`. Like Alertmanager it
 * keeps alerts in memory only: `restart()` loses them all, and `active()` is what GET /api/v2/alerts lists (the
 * alerts whose endsAt has not passed).
 */
import { HttpSinkServer, type RecordedRequest, type ScriptedResponse } from './http-sink-server.ts';
import type { ServerTls } from './tls-certs.ts';

export interface StoredAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Alertmanager's validation of one alert (types.Alert.Validate): the error text, or undefined when valid. */
export function alertProblem(alert: StoredAlert): string | undefined {
  if (alert.startsAt === '' || Number.isNaN(Date.parse(alert.startsAt))) return 'start time missing';
  if (alert.endsAt !== '' && Date.parse(alert.endsAt) < Date.parse(alert.startsAt)) {
    return 'start time must be before end time';
  }
  for (const name of Object.keys(alert.labels)) {
    if (!LABEL_NAME.test(name)) return `invalid label set: invalid name "${name}"`;
  }
  if (Object.keys(alert.labels).length === 0) return 'at least one label pair required';
  return undefined;
}

/** The label set as Alertmanager identifies an alert (its fingerprint, here the sorted pairs). */
export function labelKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
}

export class AlertmanagerDouble {
  readonly #server: HttpSinkServer;
  readonly #alerts = new Map<string, StoredAlert>();
  /** Bodies of the POSTs answered 200, in arrival order. */
  readonly acceptedBodies: string[] = [];
  #fault: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined;
  #answerDelayMs = 0;
  readonly #authorization: string | undefined;

  private constructor(server: HttpSinkServer, basicAuth: { user: string; password: string } | undefined) {
    this.#server = server;
    this.#authorization =
      basicAuth === undefined
        ? undefined
        : `Basic ${Buffer.from(`${basicAuth.user}:${basicAuth.password}`).toString('base64')}`;
    server.setResponder((request) => this.#answer(request));
  }

  /** With `options.tls`: over HTTPS (test/support/tls-certs.ts). */
  static async start(
    basicAuth?: { user: string; password: string },
    options: { tls?: ServerTls } = {},
  ): Promise<AlertmanagerDouble> {
    return new AlertmanagerDouble(await HttpSinkServer.start(undefined, options), basicAuth);
  }

  /** http://127.0.0.1:<port> (the base URL the sink is configured with). */
  get baseUrl(): string {
    return this.#server.url('');
  }

  get requests(): readonly RecordedRequest[] {
    return this.#server.requests;
  }

  /** Every stored alert (firing and resolved). */
  alerts(): StoredAlert[] {
    return [...this.#alerts.values()];
  }

  /** The alerts still firing at `nowMs` (endsAt not passed), as GET /api/v2/alerts lists them. */
  active(nowMs = Date.now()): StoredAlert[] {
    return this.alerts().filter((alert) => alert.endsAt === '' || Date.parse(alert.endsAt) > nowMs);
  }

  /** A restart: Alertmanager keeps alerts in memory only, so every stored alert is gone. */
  restart(): void {
    this.#alerts.clear();
  }

  /** Stores the alerts of a request at once but answers it `ms` later (a slow Alertmanager); 0 lifts it. */
  delayAnswers(ms: number): void {
    this.#answerDelayMs = ms;
  }

  /** Answers with what `fault` returns instead of processing (undefined: process); undefined lifts it. */
  fault(fault: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined): void {
    this.#fault = fault;
  }

  #answer(request: RecordedRequest): ScriptedResponse {
    const faulted = this.#fault?.(request);
    if (faulted !== undefined) return faulted;
    if (request.method !== 'POST' || request.url !== '/api/v2/alerts') return { status: 404, body: '' };
    if (this.#authorization !== undefined && request.headers.authorization !== this.#authorization) {
      return { status: 401, body: 'Unauthorized' };
    }
    let alerts: unknown;
    try {
      alerts = JSON.parse(request.body);
    } catch {
      return {
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: '{"code":400,"message":"parsing alerts body failed"}',
      };
    }
    if (!Array.isArray(alerts)) {
      return {
        status: 422,
        headers: { 'content-type': 'application/json' },
        body: '{"code":602,"message":"alerts in body must be of type array"}',
      };
    }
    const errors: string[] = [];
    for (const raw of alerts as Array<Partial<StoredAlert>>) {
      const labels = Object.fromEntries(Object.entries(raw.labels ?? {}).filter(([, v]) => v !== ''));
      const alert: StoredAlert = {
        labels,
        annotations: raw.annotations ?? {},
        startsAt: raw.startsAt ?? '',
        endsAt: raw.endsAt ?? '',
      };
      const problem = alertProblem(alert);
      if (problem !== undefined) errors.push(problem);
      else this.#alerts.set(labelKey(labels), alert);
    }
    if (errors.length > 0) {
      return {
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(errors.join('; ')),
      };
    }
    this.acceptedBodies.push(request.body);
    return { status: 200, body: '', ...(this.#answerDelayMs > 0 ? { delayMs: this.#answerDelayMs } : {}) };
  }

  close(): Promise<void> {
    return this.#server.close();
  }
}

/**
 * The fleet dashboard: a small HTTP server (127.0.0.1 by default) serving one page with bundled assets (no CDN;
 * page.ts, sources in web/)
 * and a read-only JSON API over the fleet history (`FleetHistory`, SQLite or PostgreSQL): summary, pending now,
 * maintenance events, per-VM observations, one event's detail, per-VM timelines, distinct filter values,
 * coverage (./coverage.ts: which VMs' forwarders report) and CSV/JSON exports streamed page by page.
 *
 * Lists are paged with the history's keyset cursor: the body stays a JSON array (as before paging existed) and
 * the next page is in the headers — `Link: <…&cursor=…>; rel="next"` and `X-Next-Cursor` (absent on the last
 * page); /api/pending also sends `X-Total-Count`. A bad parameter is a 400 `{error, parameter}` naming it.
 *
 * The same server answers /metrics (Prometheus text, the fleet's private registry: src/fleet/metrics.ts),
 * /healthz (process alive) and /readyz (200, or 503 with the reason). Access (./access.ts): a credential when
 * one is configured (required off loopback), and only this server's names in `Host` (421 otherwise); /healthz
 * and /readyz stay open for probes.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { errorMessage } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { LIVENESS_BODY } from '../../probes.ts';
import { sendPrometheusMetrics } from '../../prometheus.ts';
import { redactText } from '../../redact.ts';
import {
  DEFAULT_PAGE_SIZE,
  type EventFilter,
  type FleetHistory,
  InvalidCursorError,
  MAX_PAGE_SIZE,
  type Page,
  type PageRequest,
  VALUE_FIELDS,
  type ValueField,
} from '../history/index.ts';
import {
  allowedHostList,
  assertDashboardAccess,
  authChallenge,
  checkCredential,
  type DashboardAccess,
  hostAllowed,
} from './access.ts';
import { sendCoverage } from './coverage.ts';
import { ClientGoneError, EXPORT_VIEWS, type ExportView, streamExport } from './export.ts';
import { type DashboardAssets, dashboardAssets } from './page.ts';
import { sendView } from './views.ts';

const { createServer } = process.getBuiltinModule('node:http');

export interface DashboardOptions {
  history: FleetHistory;
  host?: string;
  port?: number;
  logger: Logger;
  /** Live consumer counters shown in the header. */
  status?: () => Record<string, unknown>;
  /** The server's clock: /api/status reports it, and the page's default window (the last 30 days) ends at it. */
  now?: () => Date;
  /** Served at /metrics (404 without). */
  metrics?: Pick<Registry, 'metrics' | 'contentType'> | undefined;
  /** Readiness for /readyz; default: the history answers a query. */
  ready?: (() => Promise<Readiness>) | undefined;
  /**
   * Credential and extra Host names. startDashboard adds the bind address and loopback names with the port to
   * the accepted hosts; dashboardHandler alone checks Host only when `allowedHosts` is given.
   */
  access?: DashboardAccess | undefined;
  /** `dashboard.blastRadiusThreshold` (VMs): blast-radius rows above it are flagged (views.ts). */
  blastRadiusThreshold?: number | undefined;
}

/** The body of /readyz: 200 when ready, 503 with the reason otherwise. */
export interface Readiness {
  ready: boolean;
  reason?: string;
  [detail: string]: unknown;
}

/** How long /readyz waits for the history to answer. */
const READY_TIMEOUT_MS = 5_000;

/** Whether the history answers a trivial query in time; the reason (redacted) when it does not. */
export async function historyReachable(history: FleetHistory): Promise<{ ok: boolean; error?: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      history.db.all('SELECT 1 AS ok'),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${READY_TIMEOUT_MS / 1000} s`)),
          READY_TIMEOUT_MS,
        );
      }),
    ]);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: redactText(errorMessage(error)) };
  } finally {
    clearTimeout(timer);
  }
}

/** Readiness of a dashboard without a consumer: the history is reachable. */
async function historyReadiness(history: FleetHistory): Promise<Readiness> {
  const reachable = await historyReachable(history);
  return reachable.ok
    ? { ready: true, history: reachable }
    : { ready: false, reason: `history unreachable: ${reachable.error}`, history: reachable };
}

export interface RunningDashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The page's paths: its content type and which asset (page.ts) answers. */
const ASSETS: Record<string, { type: string; asset: keyof DashboardAssets }> = {
  '/': { type: 'text/html; charset=utf-8', asset: 'html' },
  '/index.html': { type: 'text/html; charset=utf-8', asset: 'html' },
  '/assets/app.js': { type: 'text/javascript; charset=utf-8', asset: 'js' },
  '/assets/app.css': { type: 'text/css; charset=utf-8', asset: 'css' },
};

const SECURITY_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
};

const JSON_TYPE = 'application/json; charset=utf-8';

/** A request the client got wrong: a 400 naming the parameter. */
export class BadRequest extends Error {
  readonly parameter: string;
  constructor(parameter: string, message: string) {
    super(message);
    this.name = 'BadRequest';
    this.parameter = parameter;
  }
}

/** ISO 8601: a date, or a date and time with an optional offset (none means UTC). */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

function isoParameter(key: string, value: string): string {
  const match = ISO_TIME.exec(value.trim());
  const time = match
    ? Date.parse(
        match[2] === undefined ? `${match[1]}T00:00:00Z` : `${match[1]}T${match[2]}${match[3] ?? 'Z'}`,
      )
    : Number.NaN;
  if (Number.isNaN(time))
    throw new BadRequest(key, `${key} is not an ISO 8601 time (e.g. 2025-01-31T00:00:00Z): ${value}`);
  return new Date(time).toISOString();
}

/** Reads the shared filter query parameters; an invalid time is a 400 naming the parameter. */
export function filterFromQuery(params: URLSearchParams): EventFilter {
  const filter: EventFilter = {};
  for (const key of ['since', 'until'] as const) {
    const value = params.get(key);
    if (value) filter[key] = isoParameter(key, value);
  }
  const text = (key: string) => params.get(key) || undefined;
  filter.eventType = text('type');
  filter.location = text('location');
  filter.zone = text('zone');
  filter.scaleSet = text('scaleSet');
  filter.status = text('status');
  filter.vm = text('vm');
  const affectsOnly = params.get('affectsOnly');
  if (affectsOnly !== null && affectsOnly !== '' && affectsOnly !== 'true' && affectsOnly !== 'false')
    throw new BadRequest('affectsOnly', `affectsOnly must be true or false: ${affectsOnly}`);
  if (affectsOnly === 'true') filter.affectsOnly = true;
  return filter;
}

function integerParameter(
  params: URLSearchParams,
  key: string,
  min: number,
  max: number,
): number | undefined {
  const value = params.get(key);
  if (value === null || value === '') return undefined;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new BadRequest(key, `${key} must be an integer from ${min} to ${max}: ${value}`);
  return n;
}

/** Reads `limit` (1..1000, default 100) and `cursor`. */
export function pageFromQuery(params: URLSearchParams): PageRequest {
  const limit = integerParameter(params, 'limit', 1, MAX_PAGE_SIZE) ?? DEFAULT_PAGE_SIZE;
  const cursor = params.get('cursor') || undefined;
  return { limit, cursor };
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': type, ...SECURITY_HEADERS, ...extra });
  res.end(body);
}

function json(res: ServerResponse, value: unknown, extra: Record<string, string> = {}, status = 200): void {
  send(res, status, JSON_TYPE, JSON.stringify(value), extra);
}

/** The page's items as the body, the next page in the headers. */
function sendPage<T>(res: ServerResponse, url: URL, page: Page<T>, extra: Record<string, string> = {}): void {
  const headers: Record<string, string> = { ...extra };
  if (page.nextCursor !== null) {
    const next = new URLSearchParams(url.searchParams);
    next.set('cursor', page.nextCursor);
    headers.link = `<${url.pathname}?${next.toString()}>; rel="next"`;
    headers['x-next-cursor'] = page.nextCursor;
  }
  json(res, page.items, headers);
}

function exportView(params: URLSearchParams): ExportView {
  const view = params.get('view') || 'events';
  if (!(EXPORT_VIEWS as readonly string[]).includes(view))
    throw new BadRequest('view', `view must be one of ${EXPORT_VIEWS.join(', ')}: ${view}`);
  return view as ExportView;
}

async function sendExport(
  req: IncomingMessage,
  res: ServerResponse,
  options: DashboardOptions,
  url: URL,
  format: 'csv' | 'json',
): Promise<void> {
  const filter = filterFromQuery(url.searchParams);
  const view = exportView(url.searchParams);
  const name = view === 'observations' ? 'fleet-observations' : 'fleet-events';
  const head = () =>
    res.writeHead(200, {
      'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : JSON_TYPE,
      ...SECURITY_HEADERS,
      'content-disposition': `attachment; filename="${name}.${format}"`,
    });
  if (req.method === 'HEAD') {
    head();
    res.end();
    return;
  }
  await streamExport(res, options.history, { view, format, filter }, head);
  res.end();
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  options: DashboardOptions,
  now: () => Date,
): Promise<void> {
  const { history } = options;
  const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
  const asset = ASSETS[url.pathname];
  if (asset) {
    send(res, 200, asset.type, (await dashboardAssets())[asset.asset]);
    return;
  }
  const params = url.searchParams;
  switch (url.pathname) {
    case '/metrics':
      if (options.metrics === undefined) break;
      await sendPrometheusMetrics(res, options.metrics, SECURITY_HEADERS);
      return;
    case '/api/status':
      json(res, { now: now().toISOString(), ...(options.status?.() ?? {}) });
      return;
    case '/api/summary':
      json(res, await history.summary(filterFromQuery(params)));
      return;
    case '/api/pending': {
      const page = await history.pending(filterFromQuery(params), pageFromQuery(params));
      sendPage(res, url, page, { 'x-total-count': String(page.total) });
      return;
    }
    case '/api/events':
      sendPage(res, url, await history.events(filterFromQuery(params), pageFromQuery(params)));
      return;
    case '/api/observations':
      sendPage(res, url, await history.observations(filterFromQuery(params), pageFromQuery(params)));
      return;
    case '/api/vms':
      sendPage(res, url, await history.vms(pageFromQuery(params)));
      return;
    case '/api/event': {
      const id = params.get('id');
      if (!id) throw new BadRequest('id', 'id (the EventId) is required');
      const occurrence = integerParameter(params, 'occurrence', 1, 1_000_000) ?? 1;
      const detail = await history.event(id, occurrence);
      if (detail === undefined) {
        json(res, { error: `no maintenance event ${id} (occurrence ${occurrence})` }, {}, 404);
        return;
      }
      json(res, detail);
      return;
    }
    case '/api/values': {
      const field = params.get('field') ?? '';
      if (!(VALUE_FIELDS as readonly string[]).includes(field))
        throw new BadRequest('field', `field must be one of ${VALUE_FIELDS.join(', ')}: ${field}`);
      sendPage(res, url, await history.values(field as ValueField, pageFromQuery(params)));
      return;
    }
    case '/api/timeline': {
      const vm = params.get('vm');
      if (!vm) throw new BadRequest('vm', 'vm (a VM name or CloudEvent source) is required');
      json(res, await history.timeline(vm, integerParameter(params, 'limit', 1, 5000)));
      return;
    }
    case '/api/timeseries':
    case '/api/blast-radius':
    case '/api/lead-time':
    case '/api/event/records':
    case '/api/event/approvals':
      await sendView(req, res, url, options, { json, sendPage, filterFromQuery, pageFromQuery, BadRequest });
      return;
    case '/api/coverage':
    case '/api/coverage/vms':
    case '/api/coverage/days':
    case '/api/coverage/covered':
      await sendCoverage(res, url, history, { json, sendPage, filterFromQuery, pageFromQuery, BadRequest });
      return;
    case '/api/export.json':
      await sendExport(req, res, options, url, 'json');
      return;
    case '/api/export.csv':
      await sendExport(req, res, options, url, 'csv');
      return;
  }
  send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
}

/** /healthz and /readyz: open to probes (no Host check, no credential); true when answered. */
async function probe(res: ServerResponse, options: DashboardOptions, path: string): Promise<boolean> {
  if (path === '/healthz') {
    json(res, LIVENESS_BODY);
    return true;
  }
  if (path === '/readyz') {
    const state = await (options.ready ?? (() => historyReadiness(options.history)))();
    send(res, state.ready ? 200 : 503, JSON_TYPE, redactText(JSON.stringify(state)));
    return true;
  }
  return false;
}

/** Host and credential checks; true when the request may go on (otherwise it was answered 421 or 401). */
function admitted(req: IncomingMessage, res: ServerResponse, options: DashboardOptions): boolean {
  const access = options.access;
  if (access?.allowedHosts !== undefined && !hostAllowed(req.headers.host, access.allowedHosts)) {
    json(res, { error: 'misdirected request: this server does not answer for that Host' }, {}, 421);
    return false;
  }
  const verdict = checkCredential(req, access?.auth);
  if (verdict !== 'ok' && access?.auth !== undefined) {
    // Never log the Authorization header: only that a request was refused.
    options.logger.debug(
      { path: req.url?.split('?')[0], verdict },
      'dashboard request without a valid credential',
    );
    json(
      res,
      { error: verdict === 'missing' ? 'authentication required' : 'invalid credentials' },
      { 'www-authenticate': authChallenge(access.auth, verdict) },
      401,
    );
    return false;
  }
  return true;
}

/** The request handler (exported for tests without a socket). It never rejects: every error is answered. */
export function dashboardHandler(
  options: DashboardOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const now = options.now ?? (() => new Date());
  return async (req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
        return;
      }
      const path = new URL(req.url ?? '/', 'http://dashboard.invalid').pathname;
      if (await probe(res, options, path)) return;
      if (!admitted(req, res, options)) return;
      await route(req, res, options, now);
    } catch (error) {
      try {
        if (error instanceof ClientGoneError) {
          res.destroy();
          return;
        }
        if (res.headersSent) {
          // A stream (an export) failed part way: cut the response so the client cannot take it as complete.
          options.logger.error({ err: errorMessage(error), url: req.url }, 'dashboard export failed');
          res.destroy();
          return;
        }
        if (error instanceof BadRequest) {
          json(res, { error: error.message, parameter: error.parameter }, {}, 400);
          return;
        }
        if (error instanceof InvalidCursorError) {
          json(res, { error: error.message, parameter: 'cursor' }, {}, 400);
          return;
        }
        options.logger.error({ err: errorMessage(error), url: req.url }, 'dashboard request failed');
        json(res, { error: 'internal error' }, {}, 500);
      } catch {
        res.destroy();
      }
    }
  };
}

/**
 * Starts the dashboard; resolves once it listens. Refuses (DashboardAccessError, before binding) to listen on a
 * non-loopback address without a credential.
 */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const bindHost = options.host ?? '127.0.0.1';
  assertDashboardAccess(bindHost, options.access?.auth);
  let handler: ReturnType<typeof dashboardHandler> | undefined;
  const server: Server = createServer((req, res) => {
    if (handler === undefined) {
      res.destroy(); // not yet configured (a request racing the listening event)
      return;
    }
    handler(req, res).catch(() => res.destroy());
  });
  server.listen(options.port ?? 0, bindHost);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]);
  const address = server.address() as AddressInfo;
  // The accepted Host names need the port, known only now (port 0 = any free port).
  handler = dashboardHandler({
    ...options,
    access: {
      auth: options.access?.auth,
      allowedHosts: allowedHostList(bindHost, address.port, options.access?.allowedHosts ?? []),
    },
  });
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The fleet dashboard: a small HTTP server (127.0.0.1 by default) serving one page with bundled assets (no CDN)
 * and a read-only JSON API over the fleet history (`FleetHistory`, SQLite or PostgreSQL): summary, pending now,
 * maintenance events, per-VM observations, one event's detail, per-VM timelines, distinct filter values, and
 * CSV/JSON exports streamed page by page.
 *
 * Lists are paged with the history's keyset cursor: the body stays a JSON array (as before paging existed) and
 * the next page is in the headers — `Link: <…&cursor=…>; rel="next"` and `X-Next-Cursor` (absent on the last
 * page); /api/pending also sends `X-Total-Count`. A bad parameter is a 400 `{error, parameter}` naming it.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../log.ts';
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
import { APP_CSS, APP_JS, INDEX_HTML } from './assets.ts';
import { ClientGoneError, EXPORT_VIEWS, type ExportView, streamExport } from './export.ts';

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
}

export interface RunningDashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

const ASSETS: Record<string, { type: string; body: string }> = {
  '/': { type: 'text/html; charset=utf-8', body: INDEX_HTML },
  '/index.html': { type: 'text/html; charset=utf-8', body: INDEX_HTML },
  '/assets/app.js': { type: 'text/javascript; charset=utf-8', body: APP_JS },
  '/assets/app.css': { type: 'text/css; charset=utf-8', body: APP_CSS },
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
    send(res, 200, asset.type, asset.body);
    return;
  }
  const params = url.searchParams;
  switch (url.pathname) {
    case '/healthz':
      json(res, { ok: true });
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
      json(res, await history.values(field as ValueField));
      return;
    }
    case '/api/timeline': {
      const vm = params.get('vm');
      if (!vm) throw new BadRequest('vm', 'vm (a VM name or CloudEvent source) is required');
      json(res, await history.timeline(vm, integerParameter(params, 'limit', 1, 5000)));
      return;
    }
    case '/api/export.json':
      await sendExport(req, res, options, url, 'json');
      return;
    case '/api/export.csv':
      await sendExport(req, res, options, url, 'csv');
      return;
    default:
      send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  }
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
      await route(req, res, options, now);
    } catch (error) {
      try {
        if (error instanceof ClientGoneError) {
          res.destroy();
          return;
        }
        if (res.headersSent) {
          // A stream (an export) failed part way: cut the response so the client cannot take it as complete.
          options.logger.error({ err: (error as Error).message, url: req.url }, 'dashboard export failed');
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
        options.logger.error({ err: (error as Error).message, url: req.url }, 'dashboard request failed');
        json(res, { error: 'internal error' }, {}, 500);
      } catch {
        res.destroy();
      }
    }
  };
}

/** Starts the dashboard; resolves once it listens. */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const handler = dashboardHandler(options);
  const server: Server = createServer((req, res) => {
    handler(req, res).catch(() => res.destroy());
  });
  server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
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

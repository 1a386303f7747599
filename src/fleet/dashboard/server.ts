/**
 * The fleet dashboard: a small HTTP server (127.0.0.1 by default) serving one page with bundled assets (no CDN)
 * and a JSON API over the fleet history: summary, pending now, events with filters, per-VM timelines, CSV/JSON
 * export. Read-only; every query opens no transaction that could block ingestion (WAL readers).
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DatabaseSync } from 'node:sqlite';
import type { Logger } from '../../log.ts';
import {
  type EventFilter,
  eventsToCsv,
  listEvents,
  listVms,
  pendingEvents,
  summarize,
  vmTimeline,
} from '../queries.ts';
import { APP_CSS, APP_JS, INDEX_HTML } from './assets.ts';

const { createServer } = process.getBuiltinModule('node:http');

export interface DashboardOptions {
  db: DatabaseSync;
  host?: string;
  port?: number;
  logger: Logger;
  /** Live consumer counters shown in the header. */
  status?: () => Record<string, unknown>;
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

/** Reads the shared filter query parameters; an invalid time is a 400 naming the parameter. */
export function filterFromQuery(params: URLSearchParams): EventFilter {
  const filter: EventFilter = {};
  for (const key of ['since', 'until'] as const) {
    const value = params.get(key);
    if (value) {
      if (Number.isNaN(Date.parse(value))) throw new BadRequest(`${key} is not an ISO 8601 time: ${value}`);
      filter[key] = value;
    }
  }
  const text = (key: string) => params.get(key) || undefined;
  filter.eventType = text('type');
  filter.location = text('location');
  filter.zone = text('zone');
  filter.scaleSet = text('scaleSet');
  filter.status = text('status');
  filter.vm = text('vm');
  if (params.get('affectsOnly') === 'true') filter.affectsOnly = true;
  return filter;
}

class BadRequest extends Error {}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {},
) {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy':
      "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'",
    ...extra,
  });
  res.end(body);
}

function json(res: ServerResponse, value: unknown, extra: Record<string, string> = {}) {
  send(res, 200, 'application/json; charset=utf-8', JSON.stringify(value), extra);
}

/** The request handler (exported for tests without a socket). */
export function dashboardHandler(options: DashboardOptions) {
  const { db } = options;
  const now = options.now ?? (() => new Date());
  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
        return;
      }
      const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
      const asset = ASSETS[url.pathname];
      if (asset) {
        send(res, 200, asset.type, asset.body);
        return;
      }
      const filter = () => filterFromQuery(url.searchParams);
      switch (url.pathname) {
        case '/healthz':
          json(res, { ok: true });
          return;
        case '/api/status':
          json(res, { now: now().toISOString(), ...(options.status?.() ?? {}) });
          return;
        case '/api/summary':
          json(res, summarize(db, filter(), now()));
          return;
        case '/api/pending':
          json(res, pendingEvents(db, filter()));
          return;
        case '/api/events':
          json(res, listEvents(db, filter()));
          return;
        case '/api/vms':
          json(res, listVms(db));
          return;
        case '/api/timeline': {
          const vm = url.searchParams.get('vm');
          if (!vm) throw new BadRequest('vm (a VM name or CloudEvent source) is required');
          json(res, vmTimeline(db, vm));
          return;
        }
        case '/api/export.json':
          json(res, listEvents(db, filter()), {
            'content-disposition': 'attachment; filename="fleet-events.json"',
          });
          return;
        case '/api/export.csv':
          send(res, 200, 'text/csv; charset=utf-8', eventsToCsv(listEvents(db, filter())), {
            'content-disposition': 'attachment; filename="fleet-events.csv"',
          });
          return;
        default:
          send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
      }
    } catch (error) {
      if (error instanceof BadRequest) {
        send(res, 400, 'application/json; charset=utf-8', JSON.stringify({ error: error.message }));
        return;
      }
      options.logger.error({ err: (error as Error).message, url: req.url }, 'dashboard request failed');
      send(res, 500, 'application/json; charset=utf-8', JSON.stringify({ error: 'internal error' }));
    }
  };
}

/** Starts the dashboard; resolves once it listens. */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const server: Server = createServer(dashboardHandler(options));
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

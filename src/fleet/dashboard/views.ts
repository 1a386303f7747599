/**
 * The dashboard API of the operator views (src/fleet/history/views.ts), routed from server.ts's switch. Every
 * route honours the shared filter query parameters (since, until, type, location, zone, scaleSet, status, vm):
 *
 * - `/api/timeseries`: maintenance events per UTC day by type, with the day's impact (TimeSeries).
 * - `/api/blast-radius`: per scale set, zone and region, the VMs pending now and the most VMs impacted at once,
 *   flagged over the threshold (`dashboard.blastRadiusThreshold`; `threshold=N` overrides it per request;
 *   `scope=scaleSet|zone|location` keeps one kind). Paged like every list: the body is the page's rows, the next
 *   page in `Link` / `X-Next-Cursor`; `X-Total-Count`, `X-Over-Threshold-Count`, `X-Blast-Radius-Threshold` and
 *   `X-Covered-VMs` (the VMs that sent a heartbeat in the window).
 * - `/api/lead-time`: notice lead time and observed impact per type and region (count, p50, p90, max).
 * - `/api/event/records?id=…&occurrence=…`: the records of one event per VM (each VM's timeline), affected VMs
 *   only unless `affectsOnly=false`; paged.
 * - `/api/event/approvals?id=…&occurrence=…`: the event's approvals (every VM's approved record: rule, leader,
 *   posted, dry run; the VMs whose approval lapsed); 404 for an unknown event.
 *
 * server.ts hands its own helpers in (`ViewTools`): this module never imports it, so there is no import cycle.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  BLAST_SCOPES,
  type BlastScope,
  DEFAULT_BLAST_RADIUS_THRESHOLD,
  type EventFilter,
  type FleetHistory,
  type Page,
  type PageRequest,
} from '../history/index.ts';

/** The routes of this module. */
export const VIEW_ROUTES = [
  '/api/timeseries',
  '/api/blast-radius',
  '/api/lead-time',
  '/api/event/records',
  '/api/event/approvals',
] as const;

/** What the views need of the dashboard's options. */
export interface ViewOptions {
  history: FleetHistory;
  /** `dashboard.blastRadiusThreshold` (VMs); DEFAULT_BLAST_RADIUS_THRESHOLD when not given. */
  blastRadiusThreshold?: number | undefined;
}

/** The dashboard server's helpers (server.ts), so that the views answer exactly like its other routes. */
export interface ViewTools {
  json(res: ServerResponse, value: unknown, extra?: Record<string, string>, status?: number): void;
  sendPage<T>(res: ServerResponse, url: URL, page: Page<T>, extra?: Record<string, string>): void;
  filterFromQuery(params: URLSearchParams): EventFilter;
  pageFromQuery(params: URLSearchParams): PageRequest;
  /** server.ts's 400 error naming the parameter. */
  BadRequest: new (
    parameter: string,
    message: string,
  ) => Error;
}

function eventKey(params: URLSearchParams, tools: ViewTools): { id: string; occurrence: number } {
  const id = params.get('id');
  if (!id) throw new tools.BadRequest('id', 'id (the EventId) is required');
  const value = params.get('occurrence');
  if (value === null || value === '') return { id, occurrence: 1 };
  const occurrence = /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(occurrence >= 1 && occurrence <= 1_000_000))
    throw new tools.BadRequest('occurrence', `occurrence must be an integer from 1 to 1000000: ${value}`);
  return { id, occurrence };
}

function threshold(params: URLSearchParams, options: ViewOptions, tools: ViewTools): number {
  const value = params.get('threshold');
  if (value === null || value === '') return options.blastRadiusThreshold ?? DEFAULT_BLAST_RADIUS_THRESHOLD;
  if (!/^\d{1,9}$/.test(value))
    throw new tools.BadRequest('threshold', `threshold must be a whole number of VMs: ${value}`);
  return Number(value);
}

function scope(params: URLSearchParams, tools: ViewTools): BlastScope | undefined {
  const value = params.get('scope');
  if (value === null || value === '') return undefined;
  if (!(BLAST_SCOPES as readonly string[]).includes(value))
    throw new tools.BadRequest('scope', `scope must be one of ${BLAST_SCOPES.join(', ')}: ${value}`);
  return value as BlastScope;
}

function affectsOnly(params: URLSearchParams, tools: ViewTools): boolean {
  const value = params.get('affectsOnly');
  if (value === null || value === '' || value === 'true') return true;
  if (value === 'false') return false;
  throw new tools.BadRequest('affectsOnly', `affectsOnly must be true or false: ${value}`);
}

/** Answers one of VIEW_ROUTES (`url.pathname`). */
export async function sendView(
  _req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  options: ViewOptions,
  tools: ViewTools,
): Promise<void> {
  const { history } = options;
  const params = url.searchParams;
  switch (url.pathname as (typeof VIEW_ROUTES)[number]) {
    case '/api/timeseries':
      tools.json(res, await history.timeSeries(tools.filterFromQuery(params)));
      return;
    case '/api/lead-time':
      tools.json(res, await history.leadTimeAndImpact(tools.filterFromQuery(params)));
      return;
    case '/api/blast-radius': {
      const page = await history.blastRadius(
        tools.filterFromQuery(params),
        threshold(params, options, tools),
        tools.pageFromQuery(params),
        scope(params, tools),
      );
      tools.sendPage(res, url, page, {
        'x-total-count': String(page.total),
        'x-over-threshold-count': String(page.overThreshold),
        'x-blast-radius-threshold': String(page.threshold),
        'x-covered-vms': String(page.coveredVms),
      });
      return;
    }
    case '/api/event/records': {
      const { id, occurrence } = eventKey(params, tools);
      const page = await history.eventRecords(
        id,
        occurrence,
        { affectsOnly: affectsOnly(params, tools) },
        tools.pageFromQuery(params),
      );
      tools.sendPage(res, url, page);
      return;
    }
    case '/api/event/approvals': {
      const { id, occurrence } = eventKey(params, tools);
      const approvals = await history.eventApprovals(id, occurrence);
      if (approvals === undefined) {
        tools.json(res, { error: `no maintenance event ${id} (occurrence ${occurrence})` }, {}, 404);
        return;
      }
      tools.json(res, approvals);
      return;
    }
  }
  tools.json(res, { error: 'not found' }, {}, 404);
}

/**
 * The dashboard's JSON API (src/fleet/dashboard/server.ts and views.ts). The response types are the server's
 * own (type-only imports: erased from the bundle), so the browser code is checked against what it receives.
 */
import type { FleetHistory } from '../../history/index.ts';

export type {
  BlastRadiusRow,
  CoverageReport,
  CoverageVm,
  EventApprovals,
  EventRecord,
  FleetSummary,
  LeadTimeAndImpact,
  LeadTimeRow,
  MaintenanceView,
  TimelineEntry,
  TimeSeries,
  TimeSeriesDay,
  VmView,
} from '../../history/index.ts';

/** /api/event: the maintenance event and every VM's observation of it. */
export type EventDetail = NonNullable<Awaited<ReturnType<FleetHistory['event']>>>;

/** A page of a list endpoint: its items, the next page's cursor and the headers (totals). */
export interface ListPage<T> {
  items: T[];
  next: string | null;
  total: number | null;
  headers: Headers;
}

/** /api/status: the server's clock and, under `fleet run`, the consumer's counters. */
export interface Status {
  now: string;
  partitions?: string[];
}

async function failure(res: Response): Promise<never> {
  const body = (await res.json().catch(() => ({}))) as { error?: string };
  throw new Error(body.error || res.statusText);
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path);
  return res.ok ? ((await res.json()) as T) : failure(res);
}

/** A page of a list endpoint: the body is the items, the next page's cursor is in X-Next-Cursor. */
export async function getPage<T>(path: string): Promise<ListPage<T>> {
  const res = await fetch(path);
  if (!res.ok) return failure(res);
  const items = (await res.json()) as T[];
  const total = res.headers.get('x-total-count');
  return {
    items,
    next: res.headers.get('x-next-cursor'),
    total: total === null ? null : Number(total),
    headers: res.headers,
  };
}

/**
 * The dashboard's exports: the CSV columns of the two views (maintenance events, counted once fleet-wide, and
 * per-VM observations) and the streaming writers that page through the history with its keyset cursor, so an
 * export of any size is written in constant memory (one page at a time, waiting for 'drain' when the socket's
 * buffer is full).
 */
import type { ServerResponse } from 'node:http';
import { csvLine } from '../csv.ts';
import type { EventFilter, FleetHistory, MaintenanceView, ObservationView, Page } from '../history/index.ts';

/** Items read from the history per page of an export. */
export const EXPORT_PAGE_SIZE = 500;

/** The two things an export can hold: `view=events` (the default) or `view=observations`. */
export const EXPORT_VIEWS = ['events', 'observations'] as const;
export type ExportView = (typeof EXPORT_VIEWS)[number];

/** CSV columns of `view=events`: one row per maintenance event (EventId + occurrence). */
export const MAINTENANCE_COLUMNS: ReadonlyArray<keyof MaintenanceView> = [
  'eventId',
  'occurrence',
  'eventType',
  'status',
  'pending',
  'firstSeenAt',
  'notBefore',
  'noticeSeconds',
  'advertisedSeconds',
  'observedSeconds',
  'startedAt',
  'endedAt',
  'inferred',
  'reason',
  'approval',
  'approvedAt',
  'approvalRule',
  'updates',
  'missing',
  'vmDeleted',
  'affectedVms',
  'affectedNames',
  'reportingVms',
  'observers',
  'location',
  'zone',
  'scaleSet',
  'eventSource',
  'records',
  'lastRecordAt',
  'description',
];

/** CSV columns of `view=observations`: one row per VM and maintenance event (what that VM reported). */
export const OBSERVATION_COLUMNS: ReadonlyArray<keyof ObservationView> = [
  'vmName',
  'eventId',
  'occurrence',
  'eventType',
  'status',
  'location',
  'zone',
  'scaleSet',
  'affectsVm',
  'firstSeenStatus',
  'firstSeenAt',
  'notBefore',
  'noticeSeconds',
  'advertisedSeconds',
  'observedSeconds',
  'startedAt',
  'endedAt',
  'inferred',
  'reason',
  'approval',
  'approvedAt',
  'updates',
  'missing',
  'vmDeleted',
  'records',
  'vmId',
  'source',
  'description',
];

/** The client went away during an export: stop reading the history, nothing to report. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientGoneError';
  }
}

/** Writes `chunk`; when the socket's buffer is full, waits until it drains (or the client goes away). */
export async function writeChunk(res: ServerResponse, chunk: string): Promise<void> {
  if (res.destroyed) throw new ClientGoneError();
  if (res.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new ClientGoneError());
    res.on('drain', onDrain);
    res.on('close', onClose);
    if (res.destroyed) done(new ClientGoneError());
  });
}

function reader(
  history: FleetHistory,
  view: ExportView,
  filter: EventFilter,
): (cursor: string | undefined) => Promise<Page<MaintenanceView | ObservationView>> {
  return view === 'observations'
    ? (cursor) => history.observations(filter, { limit: EXPORT_PAGE_SIZE, cursor })
    : (cursor) => history.events(filter, { limit: EXPORT_PAGE_SIZE, cursor });
}

/** What to export and how. */
export interface ExportRequest {
  view: ExportView;
  format: 'csv' | 'json';
  filter: EventFilter;
}

/**
 * Streams the export: CSV (header row, CRLF, formulas neutralised by csvLine) or a JSON array (valid once the
 * response ends), one page of the history at a time. `begin` (which writes the response head) is called once
 * the first page is read, so a history that fails at once still gets a clean error response; a failure later
 * rejects with the response begun (the caller cuts it).
 */
export async function streamExport(
  res: ServerResponse,
  history: FleetHistory,
  request: ExportRequest,
  begin: () => void,
): Promise<void> {
  const read = reader(history, request.view, request.filter);
  const csv = request.format === 'csv';
  const columns: readonly string[] =
    request.view === 'observations' ? OBSERVATION_COLUMNS : MAINTENANCE_COLUMNS;
  let page = await read(undefined);
  begin();
  let first = true;
  await writeChunk(res, csv ? csvLine(columns) : '[');
  for (;;) {
    let chunk = '';
    for (const item of page.items) {
      if (csv) {
        const row = item as unknown as Record<string, unknown>;
        chunk += csvLine(columns.map((c) => row[c]));
      } else {
        chunk += `${first ? '\n' : ',\n'}${JSON.stringify(item)}`;
        first = false;
      }
    }
    if (chunk !== '') await writeChunk(res, chunk);
    if (page.nextCursor === null) break;
    page = await read(page.nextCursor);
  }
  if (!csv) await writeChunk(res, first ? ']\n' : '\n]\n');
}

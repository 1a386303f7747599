/**
 * Record → Log Analytics row: the column list of the `ScheduledEvents_CL` table and how each column is filled
 * from a lifecycle record. Pure; the one source of truth for the columns: docs/sinks-azure-monitor.md, the
 * shipped table and DCR (packaging/azure-monitor/) and the Logs Ingestion API test double follow it (a test
 * checks the shipped definitions against LOG_COLUMNS).
 *
 * The columns are those of the ADX table in docs/fleet-adx.md, with four differences: `TimeGenerated` (the
 * record time; every Log Analytics table needs it), `Id` and `Type` renamed `RecordId` and `RecordType` (both
 * names are reserved in Log Analytics), no `EnqueuedTime` (an Event Hubs property), and `Data` holds only the
 * fields of the record's `data` that have no column of their own (the Kubernetes node, IMDS fields Azure added,
 * ResourceType, ...): every value is in the row once, so a row is about the size of the record (ingestion is
 * billed by size), and nothing is lost (the record can be put back together from its row).
 */
import type { LifecycleRecord } from '../../domain/index.ts';

/** Column types, spelled as DCR stream declarations and Log Analytics tables both accept them. */
export type LogColumnType = 'string' | 'int' | 'long' | 'boolean' | 'datetime' | 'dynamic';

export interface LogColumn {
  name: string;
  type: LogColumnType;
  /** Where the value comes from, for docs (a JSON path into the record). */
  from: string;
  value(record: LifecycleRecord): unknown;
}

type Data = LifecycleRecord['data'];

/** `record.data[key]`, or null when the record does not carry it. */
function field(data: Data, key: string): unknown {
  return data[key] ?? null;
}

function column(
  name: string,
  type: LogColumnType,
  from: string,
  value: (r: LifecycleRecord) => unknown,
): LogColumn {
  return { name, type, from, value };
}

/** Every column of the table, in table order. */
export const LOG_COLUMNS: readonly LogColumn[] = [
  column('TimeGenerated', 'datetime', '$.time', (r) => r.time),
  column('RecordId', 'string', '$.id', (r) => r.id),
  column('Source', 'string', '$.source', (r) => r.source),
  column('RecordType', 'string', '$.type', (r) => r.type),
  column('Subject', 'string', '$.subject', (r) => r.subject),
  column('Time', 'datetime', '$.time', (r) => r.time),
  column('Transition', 'string', '$.transition', (r) => r.transition),
  column('MaintenanceType', 'string', '$.maintenancetype', (r) => r.maintenancetype),
  column('VmId', 'string', '$.vmid', (r) => r.vmid),
  column('EventId', 'string', '$.data.EventId', (r) => r.data.EventId),
  column('EventType', 'string', '$.data.EventType', (r) => r.data.EventType),
  column('EventStatus', 'string', '$.data.EventStatus', (r) => r.data.EventStatus),
  column('Resources', 'dynamic', '$.data.Resources', (r) => r.data.Resources),
  column('NotBefore', 'string', '$.data.NotBefore', (r) => r.data.NotBefore),
  column('NotBeforeUtc', 'datetime', '$.data.notBeforeUtc', (r) => r.data.notBeforeUtc ?? null),
  column('DurationInSeconds', 'int', '$.data.DurationInSeconds', (r) => r.data.DurationInSeconds),
  column('Description', 'string', '$.data.Description', (r) => r.data.Description),
  column('EventSource', 'string', '$.data.EventSource', (r) => r.data.EventSource),
  column('DocumentIncarnation', 'long', '$.data.DocumentIncarnation', (r) => r.data.DocumentIncarnation),
  column('AffectsThisVm', 'boolean', '$.data.affectsThisVm', (r) => r.data.affectsThisVm),
  column('Occurrence', 'int', '$.data.occurrence', (r) => r.data.occurrence ?? null),
  column('FirstSeenStatus', 'string', '$.data.firstSeenStatus', (r) => r.data.firstSeenStatus ?? null),
  column('VmName', 'string', '$.data.vm.name', (r) => r.data.vm?.name ?? null),
  column('ResourceId', 'string', '$.data.vm.resourceId', (r) => r.data.vm?.resourceId ?? null),
  column('SubscriptionId', 'string', '$.data.vm.subscriptionId', (r) => r.data.vm?.subscriptionId ?? null),
  column('ResourceGroup', 'string', '$.data.vm.resourceGroup', (r) => r.data.vm?.resourceGroup ?? null),
  column('Location', 'string', '$.data.vm.location', (r) => r.data.vm?.location ?? null),
  column('Zone', 'string', '$.data.vm.zone', (r) => r.data.vm?.zone ?? null),
  column('VmScaleSetName', 'string', '$.data.vm.vmScaleSetName', (r) => r.data.vm?.vmScaleSetName ?? null),
  column('VmSize', 'string', '$.data.vm.vmSize', (r) => r.data.vm?.vmSize ?? null),
  column('FirstSeenAt', 'datetime', '$.data.timing.firstSeenAt', (r) => r.data.timing?.firstSeenAt ?? null),
  column('StartedAt', 'datetime', '$.data.timing.startedAt', (r) => r.data.timing?.startedAt ?? null),
  column('EndedAt', 'datetime', '$.data.timing.endedAt', (r) => r.data.timing?.endedAt ?? null),
  column('NoticeSeconds', 'long', '$.data.timing.noticeSeconds', (r) => r.data.timing?.noticeSeconds ?? null),
  column('Inferred', 'boolean', '$.data.inferred', (r) => field(r.data, 'inferred')),
  column('Reason', 'string', '$.data.reason', (r) => field(r.data, 'reason')),
  column('ObservedImpact', 'dynamic', '$.data.observedImpact', (r) => field(r.data, 'observedImpact')),
  column('Approval', 'dynamic', '$.data.approval', (r) => field(r.data, 'approval')),
  column('Changed', 'dynamic', '$.data.changed', (r) => field(r.data, 'changed')),
  column('Previous', 'dynamic', '$.data.previous', (r) => field(r.data, 'previous')),
  column('Data', 'dynamic', '$.data', (r) => dataRemainder(r.data)),
];

/** The `$.data` paths the columns other than Data fill, as key paths (['vm', 'name'], ...). */
const COVERED_DATA_PATHS: readonly string[][] = LOG_COLUMNS.filter((c) => c.from.startsWith('$.data.')).map(
  (c) => c.from.slice('$.data.'.length).split('.'),
);

/**
 * `data` without the fields a column of their own holds (Data's value): a copy, with objects that end up empty
 * left out; null when nothing is left.
 */
export function dataRemainder(data: Data): Record<string, unknown> | null {
  const rest = structuredClone(data) as Record<string, unknown>;
  for (const path of COVERED_DATA_PATHS) deletePath(rest, path);
  return Object.keys(rest).length === 0 ? null : rest;
}

function deletePath(target: Record<string, unknown>, path: readonly string[]): void {
  const [key, ...more] = path;
  if (key === undefined || !Object.hasOwn(target, key)) return;
  if (more.length === 0) {
    delete target[key];
    return;
  }
  const inner = target[key];
  if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) return;
  deletePath(inner as Record<string, unknown>, more);
  if (Object.keys(inner).length === 0) delete target[key];
}

/**
 * The row for one record: every column of LOG_COLUMNS the record has a value for, in table order. A column
 * without a value (null) is left out of the row: Log Analytics stores it as empty all the same, and the row
 * stays small.
 */
export function toLogRow(record: LifecycleRecord): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const c of LOG_COLUMNS) {
    const value = c.value(record);
    if (value !== null && value !== undefined) row[c.name] = value;
  }
  return row;
}

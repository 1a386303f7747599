/**
 * Pure mapping from a lifecycle record to the fields of an OpenTelemetry LogRecord and its Resource.
 * Documented in docs/observability.md ("OpenTelemetry sink"); the tests pin these exact values.
 */
import type { Attributes, AttributeValue, SeverityNumber } from '@opentelemetry/api';
import type { LifecycleRecord, Transition, VmIdentity } from '../../domain/index.ts';

/**
 * The OpenTelemetry log data model's severity numbers used here (SeverityNumber.INFO and .WARN of
 * @opentelemetry/api), as constants: building a record must not load the API package while nothing is exported.
 */
const SEVERITY_INFO = 9 as SeverityNumber.INFO;
const SEVERITY_WARN = 13 as SeverityNumber.WARN;

/** Every record attribute taken from `data` is flattened under this prefix (keys in snake_case). */
export const ATTRIBUTE_PREFIX = 'scheduledevent.';

/** Default `service.name` resource attribute. */
export const DEFAULT_SERVICE_NAME = 'scheduled-events-forwarder';

/** Instrumentation scope name of the emitted log records. */
export const SCOPE_NAME = 'scheduled-events-forwarder';

/** Maintenance types that take the VM away (reboot, move, eviction, deletion): WARN when pending or running. */
export const DISRUPTIVE_EVENT_TYPES: readonly string[] = ['Reboot', 'Redeploy', 'Preempt', 'Terminate'];

/** The fields of one OTel LogRecord derived from a lifecycle record. */
export interface LogRecordFields {
  eventName: string;
  /** Epoch milliseconds of the record's `time` (observation time). */
  timestampMs: number;
  severityNumber: SeverityNumber;
  severityText: 'INFO' | 'WARN';
  body: string;
  attributes: Attributes;
}

/**
 * EventName: one fixed name per transition (6 values), equal to the CloudEvents `type`, e.g.
 * `io.github.scheduledeventsforwarder.azure.scheduledevent.scheduled`.
 */
export function eventNameFor(record: LifecycleRecord): string {
  return record.type;
}

/**
 * Severity by transition and maintenance type:
 * - scheduled, started, updated: WARN for Reboot/Redeploy/Preempt/Terminate and for unknown types
 *   (an unknown maintenance type may be disruptive); INFO for Freeze.
 * - completed, canceled, approved: INFO.
 */
export function severityFor(
  transition: Transition,
  eventType: string,
): Pick<LogRecordFields, 'severityNumber' | 'severityText'> {
  const pendingOrRunning = transition === 'scheduled' || transition === 'started' || transition === 'updated';
  if (pendingOrRunning && eventType !== 'Freeze') {
    return { severityNumber: SEVERITY_WARN, severityText: 'WARN' };
  }
  return { severityNumber: SEVERITY_INFO, severityText: 'INFO' };
}

/**
 * Body: one human sentence, e.g. "Reboot of vm-web-01 scheduled, not before 2025-09-19T18:29:47.000Z."
 * The not-before clause appears for scheduled and updated records when NotBefore is known.
 */
export function bodyFor(record: LifecycleRecord): string {
  const data = record.data;
  const type = data.EventType || record.maintenancetype || 'Maintenance';
  const resources =
    data.Resources.length > 0 ? data.Resources.join(', ') : data.vm?.name || 'unknown resources';
  const showNotBefore = record.transition === 'scheduled' || record.transition === 'updated';
  const notBefore = showNotBefore && data.notBeforeUtc ? `, not before ${data.notBeforeUtc}` : '';
  return `${type} of ${resources} ${record.transition}${notBefore}.`;
}

/** camelCase / PascalCase → snake_case ("DurationInSeconds" → "duration_in_seconds", "vmId" → "vm_id"). */
export function snakeCase(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

/**
 * Flatten `value` into OTel attributes under `prefix`: nested objects become dotted keys, keys become
 * snake_case, arrays of primitives of one kind stay arrays, other arrays become JSON strings,
 * null/undefined values are omitted.
 */
export function flattenAttributes(
  value: Record<string, unknown>,
  prefix: string,
  out: Attributes = {},
): Attributes {
  for (const [rawKey, v] of Object.entries(value)) {
    const key = `${prefix}${snakeCase(rawKey)}`;
    if (v === null || v === undefined) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out[key] = v;
    } else if (Array.isArray(v)) {
      out[key] = homogeneousArray(v) ?? JSON.stringify(v);
    } else if (typeof v === 'object') {
      flattenAttributes(v as Record<string, unknown>, `${key}.`, out);
    } else {
      out[key] = String(v);
    }
  }
  return out;
}

function homogeneousArray(values: unknown[]): AttributeValue | undefined {
  if (values.every((x) => typeof x === 'string')) return values as string[];
  if (values.every((x) => typeof x === 'number')) return values as number[];
  if (values.every((x) => typeof x === 'boolean')) return values as boolean[];
  return undefined;
}

/**
 * Attributes: the CloudEvents context (semconv `cloudevents.*`, the id is the de-duplication key),
 * `scheduledevent.transition`, and the record's `data` flattened under ATTRIBUTE_PREFIX.
 */
export function attributesFor(record: LifecycleRecord): Attributes {
  const attributes: Attributes = {
    'cloudevents.event_id': record.id,
    'cloudevents.event_source': record.source,
    'cloudevents.event_spec_version': record.specversion,
    'cloudevents.event_type': record.type,
    'cloudevents.event_subject': record.subject,
    [`${ATTRIBUTE_PREFIX}transition`]: record.transition,
  };
  return flattenAttributes(record.data as Record<string, unknown>, ATTRIBUTE_PREFIX, attributes);
}

/** All LogRecord fields for one lifecycle record. */
export function toLogRecordFields(record: LifecycleRecord): LogRecordFields {
  const timestampMs = Date.parse(record.time);
  return {
    eventName: eventNameFor(record),
    timestampMs: Number.isFinite(timestampMs) ? timestampMs : 0,
    ...severityFor(record.transition, record.data.EventType),
    body: bodyFor(record),
    attributes: attributesFor(record),
  };
}

/** The VM fields the resource needs; a record's `data.vm` or the SinkContext's VmIdentity both map to it. */
export type ResourceVm = Omit<LifecycleRecord['data']['vm'], 'computerName'>;

/** Prefer the record's own `data.vm`; fill empty fields from the live VmIdentity (never a second IMDS call). */
export function resourceVmFor(record: LifecycleRecord, live: VmIdentity | undefined): ResourceVm {
  const v = record.data.vm as Partial<LifecycleRecord['data']['vm']> | undefined;
  const pick = (a: string | undefined, b: string | undefined): string => a || b || '';
  return {
    name: pick(v?.name, live?.name),
    vmId: pick(v?.vmId, live?.vmId),
    resourceId: pick(v?.resourceId, live?.resourceId),
    subscriptionId: pick(v?.subscriptionId, live?.subscriptionId),
    resourceGroup: pick(v?.resourceGroup, live?.resourceGroupName),
    location: pick(v?.location, live?.location),
    zone: pick(v?.zone, live?.zone),
    vmScaleSetName: pick(v?.vmScaleSetName, live?.vmScaleSetName),
    vmSize: pick(v?.vmSize, live?.vmSize),
  };
}

/**
 * Resource attributes (semconv for an Azure VM). Attributes whose value is unknown ("") are omitted;
 * service.*, cloud.provider and cloud.platform are always present.
 */
export function resourceAttributesFor(
  vm: ResourceVm,
  service: { name: string; version: string },
): Record<string, string> {
  const attributes: Record<string, string> = {
    'service.name': service.name,
    'service.version': service.version,
    'cloud.provider': 'azure',
    'cloud.platform': 'azure.vm',
  };
  const optional: [string, string][] = [
    ['cloud.region', vm.location],
    ['cloud.availability_zone', vm.zone],
    ['cloud.account.id', vm.subscriptionId],
    ['cloud.resource_id', vm.resourceId],
    ['azure.resource_group.name', vm.resourceGroup],
    ['azure.vm.scaleset.name', vm.vmScaleSetName],
    ['host.id', vm.vmId],
    ['host.name', vm.name],
    ['host.type', vm.vmSize],
  ];
  for (const [key, value] of optional) if (value) attributes[key] = value;
  return attributes;
}

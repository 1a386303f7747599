/**
 * Pure mapping of lifecycle records to PagerDuty Events API v2 events (docs/sinks-alerting.md): trigger while the
 * event is pending or in progress, resolve when it completed or was canceled, one alert per event occurrence on
 * one VM through a stable dedup_key.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { summaryLine, truncateText, vmDisplayName } from '../format.ts';
import { DEFAULT_SEVERITY_BY_EVENT_TYPE, type PagerDutySeverity } from './options.ts';

const { createHash } = process.getBuiltinModule('node:crypto');

/** The Events API's limits. */
export const PAGERDUTY_LIMITS = { dedupKey: 255, summary: 1024, eventBytes: 512 * 1024 } as const;

/** What identifies the client in PagerDuty's alert view. */
export const PAGERDUTY_CLIENT = 'scheduled-events-forwarder';

export interface PagerDutyEvent {
  routing_key: string;
  event_action: 'trigger' | 'resolve';
  dedup_key: string;
  client?: string;
  payload?: {
    summary: string;
    source: string;
    severity: PagerDutySeverity;
    timestamp: string;
    component?: string;
    group?: string;
    class: string;
    custom_details: Record<string, unknown>;
  };
}

export interface SeverityMap {
  byEventType: Readonly<Record<string, PagerDutySeverity>>;
  fallback: PagerDutySeverity;
}

/**
 * `<source>|<EventId>|<occurrence>`: the same for every record of one event occurrence on one VM (so retries,
 * updates and the resolve all address the same alert), different for a reappearing EventId and for every VM
 * that reports it. Longer than PagerDuty's 255 characters (an unusually long resource ID): `sha256:` and its hex.
 */
export function dedupKey(record: LifecycleRecord): string {
  const key = `${record.source}|${record.data.EventId}|${record.data.occurrence ?? 1}`;
  if (key.length <= PAGERDUTY_LIMITS.dedupKey) return key;
  return `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** completed and canceled resolve the alert; scheduled, started, updated and approved (re-)trigger it. */
export function eventAction(record: LifecycleRecord): 'trigger' | 'resolve' {
  return record.transition === 'completed' || record.transition === 'canceled' ? 'resolve' : 'trigger';
}

/** The configured severity of the record's EventType, over the defaults. */
export function severityOf(record: LifecycleRecord, map: SeverityMap): PagerDutySeverity {
  const type = record.data.EventType;
  return map.byEventType[type] ?? DEFAULT_SEVERITY_BY_EVENT_TYPE[type] ?? map.fallback;
}

/** The Events API v2 event for a record (a resolve carries no payload: PagerDuty needs only the dedup_key). */
export function toPagerDutyEvent(
  record: LifecycleRecord,
  routingKey: string,
  severities: SeverityMap,
): PagerDutyEvent {
  const action = eventAction(record);
  const base = { routing_key: routingKey, event_action: action, dedup_key: dedupKey(record) };
  if (action === 'resolve') return base;
  const d = record.data;
  const group = d.vm.vmScaleSetName || d.vm.resourceGroup;
  return {
    ...base,
    client: PAGERDUTY_CLIENT,
    payload: {
      summary: truncateText(summaryLine(record), PAGERDUTY_LIMITS.summary),
      source: vmDisplayName(record),
      severity: severityOf(record, severities),
      timestamp: record.time,
      ...(d.ResourceType === '' ? {} : { component: d.ResourceType }),
      ...(group === '' ? {} : { group }),
      class: d.EventType || 'unknown',
      custom_details: { transition: record.transition, recordId: record.id, ...d },
    },
  };
}

/**
 * A 400 whose errors are about the routing key ("Invalid routing key", "Length of 'routing_key' is incorrect",
 * "'routing_key' cannot contain non-alphanumeric characters"): PagerDuty refuses every event sent with this key,
 * so the sink pauses instead of dead-lettering them. What it means and the fix, or undefined.
 */
export function pagerDutyRefusal(status: number, errorText: string): string | undefined {
  if (status !== 400 || !/\binvalid routing key\b|'routing_key'/i.test(errorText)) return undefined;
  return 'PagerDuty refuses the routing key; fix: set routingKey to the Integration Key of an Events API v2 integration (Service → Integrations), not a REST API key';
}

/**
 * PagerDuty's error text of a failed response (`{"status":"invalid event","message":"Event object is invalid",
 * "errors":["…"]}`): "invalid event: Event object is invalid: …"; undefined when the body is not such JSON.
 */
export function pagerDutyErrorText(body: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const { status, message, errors } = parsed as { status?: unknown; message?: unknown; errors?: unknown };
  const parts = [status, message].filter((p): p is string => typeof p === 'string' && p !== '');
  if (Array.isArray(errors)) {
    const texts = errors.filter((e): e is string => typeof e === 'string');
    if (texts.length > 0) parts.push(texts.join('; '));
  }
  return parts.length === 0 ? undefined : parts.join(': ');
}

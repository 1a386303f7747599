/**
 * Record → Event Hubs event mapping (structured-mode CloudEvent plus CloudEvents application properties) and
 * partition-key selection. Pure functions; documented in docs/sinks-event-hubs.md.
 */
import type { EventData } from '@azure/event-hubs';
import { type ForwarderEvent, isHeartbeat } from '../../domain/index.ts';

/** How the partition key is chosen for a record. */
export const PARTITION_KEY_MODES = ['vmId', 'none', 'eventId', 'vmScaleSetName'] as const;
export type PartitionKeyMode = (typeof PARTITION_KEY_MODES)[number];

/** AMQP content-type of every event: the body is the whole CloudEvent (structured mode). */
export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

/**
 * The partition key for a record, or undefined for round-robin.
 * - vmId: record.vmid (falls back to data.vm.vmId) — per-VM ordering.
 * - eventId: the EventId (record.subject) — all VMs' records of one maintenance event together; a heartbeat
 *   (no EventId) goes by its vmId.
 * - vmScaleSetName: data.vm.vmScaleSetName; VMs outside a scale set fall back to their vmId.
 * - none: round-robin across partitions (no ordering guarantee).
 */
export function partitionKeyFor(record: ForwarderEvent, mode: PartitionKeyMode): string | undefined {
  const vmId = record.vmid || record.data?.vm?.vmId || undefined;
  switch (mode) {
    case 'none':
      return undefined;
    case 'eventId':
      return isHeartbeat(record) ? vmId : record.subject || record.data?.EventId || vmId;
    case 'vmScaleSetName':
      return record.data?.vm?.vmScaleSetName || vmId;
    default:
      return vmId;
  }
}

/**
 * The cloudEvents:* application properties of a record or heartbeat (a heartbeat has no subject, transition or
 * maintenancetype). cloudEvents:time is a Date (an AMQP timestamp) when it parses, else the text.
 */
export function cloudEventsProperties(record: ForwarderEvent): Record<string, string | Date> {
  const properties: Record<string, string | Date> = {
    'cloudEvents:specversion': record.specversion,
    'cloudEvents:id': record.id,
    'cloudEvents:source': record.source,
    'cloudEvents:type': record.type,
  };
  if (!isHeartbeat(record)) properties['cloudEvents:subject'] = record.subject;
  const time = new Date(record.time);
  // AMQP binding: a CloudEvents Timestamp is an AMQP timestamp; keep the text if it does not parse.
  properties['cloudEvents:time'] = Number.isNaN(time.getTime()) ? record.time : time;
  if (!isHeartbeat(record)) {
    if (record.transition) properties['cloudEvents:transition'] = record.transition;
    if (record.maintenancetype) properties['cloudEvents:maintenancetype'] = record.maintenancetype;
  }
  if (record.vmid) properties['cloudEvents:vmid'] = record.vmid;
  return properties;
}

/** The Event Hubs event for one record or heartbeat: body = the CloudEvent, messageId = its id, cloudEvents:* properties. */
export function toEventData(record: ForwarderEvent): EventData {
  return {
    body: record,
    contentType: CLOUDEVENTS_CONTENT_TYPE,
    messageId: record.id,
    properties: cloudEventsProperties(record),
  };
}

/**
 * The Event Hubs sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation, the Azure SDKs included (client.ts).
 */

export { createProducerClient } from './client.ts';
export { classifyEventHubsError, describeError } from './errors.ts';
export {
  CLOUDEVENTS_CONTENT_TYPE,
  cloudEventsProperties,
  PARTITION_KEY_MODES,
  partitionKeyFor,
  toEventData,
} from './event.ts';
export { eventHubsSinkFactory } from './factory.ts';
export { type EventHubsSinkOptions, eventHubsOptionsSchema } from './options.ts';
export { EventHubsSink, type HeartbeatTransport } from './sink.ts';

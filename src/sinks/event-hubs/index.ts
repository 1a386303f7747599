/**
 * The Event Hubs sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation (sink.ts) and with it the Azure SDKs.
 */
export { classifyEventHubsError, describeError } from './errors.ts';
export { CLOUDEVENTS_CONTENT_TYPE, PARTITION_KEY_MODES, partitionKeyFor, toEventData } from './event.ts';
export { eventHubsSinkFactory } from './factory.ts';
export { type EventHubsSinkOptions, eventHubsOptionsSchema } from './options.ts';
export { createProducerClient, EventHubsSink } from './sink.ts';

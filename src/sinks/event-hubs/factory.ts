/**
 * The Event Hubs sink's registry entry. Light on purpose: the options schema needs only zod; the sink loads in
 * create(), i.e. only when a sink of this type is configured, and the SDKs (@azure/event-hubs, @azure/identity)
 * at its first delivery (./client.ts).
 */
import { lazy } from '../../lazy.ts';
import type { SinkContext, SinkFactory } from '../types.ts';
import { type EventHubsSinkOptions, eventHubsOptionsSchema } from './options.ts';

/** Built on first use (a config without an eventhubs sink never builds it: src/lazy.ts). */
const optionsSchema = lazy(() => eventHubsOptionsSchema());

/** Registered in src/sinks/registry.ts as type 'eventhubs'. */
export const eventHubsSinkFactory: SinkFactory<ReturnType<typeof optionsSchema>> = {
  type: 'eventhubs',
  description:
    'Azure Event Hubs: one CloudEvent per record (managed identity, workload identity or connection string)',
  get optionsSchema() {
    return optionsSchema();
  },
  // The fleet's path (docs/fleet.md, Coverage): every forwarder that sends to a hub says it is alive there.
  heartbeats: { default: true },
  async create(name: string, options: EventHubsSinkOptions, context: SinkContext) {
    const { EventHubsSink } = await import('./sink.ts');
    return new EventHubsSink(
      name,
      options,
      context.logger, // already carries component: sink and the sink name
      undefined,
      { imdsEndpoint: context.imdsEndpoint },
    );
  },
};

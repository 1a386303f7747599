/**
 * The Event Hubs producer client, built from the sink's options. Loaded by the sink at its first delivery (with
 * the Azure SDKs it imports), never at start-up.
 */
import { type EventHubClientOptions, EventHubProducerClient, RetryMode } from '@azure/event-hubs';
import type { TokenCredential } from '@azure/identity';
import { createCredential } from '../../azure/credentials.ts';
import type { EventHubsSinkOptions } from './options.ts';

/** Builds the producer client for the options (does not connect: the SDK connects on first use). */
export function createProducerClient(
  options: EventHubsSinkOptions,
  credentialFactory: (c: EventHubsSinkOptions['credential']) => TokenCredential = createCredential,
): EventHubProducerClient {
  const clientOptions: EventHubClientOptions = {
    retryOptions: {
      mode: RetryMode.Exponential,
      maxRetries: options.retry.maxRetries,
      retryDelayInMs: options.retry.retryDelayMs,
      maxRetryDelayInMs: options.retry.maxRetryDelayMs,
      timeoutInMs: options.retry.timeoutMs,
    },
    userAgent: 'scheduled-events-forwarder',
    ...(options.customEndpointAddress === undefined
      ? {}
      : { customEndpointAddress: options.customEndpointAddress }),
  };
  if (options.connectionString !== undefined) {
    const cs = options.connectionString.reveal();
    return options.eventHubName === undefined
      ? new EventHubProducerClient(cs, clientOptions)
      : new EventHubProducerClient(cs, options.eventHubName, clientOptions);
  }
  return new EventHubProducerClient(
    options.fullyQualifiedNamespace!,
    options.eventHubName!,
    credentialFactory(options.credential),
    clientOptions,
  );
}

/** Shared setup for the Event Hubs integration tests: sink options against the test double. */
import { silentLogger } from '../../../../src/log.ts';
import {
  EventHubsSink,
  type EventHubsSinkOptions,
  eventHubsOptionsSchema,
} from '../../../../src/sinks/event-hubs/index.ts';
import type { EventHubsDouble } from '../../../support/event-hubs-double/index.ts';

/** Parsed sink options using the double's connection string (through an env var, as in production). */
export function doubleSinkOptions(
  double: EventHubsDouble,
  hub: string,
  overrides: Record<string, unknown> = {},
): EventHubsSinkOptions {
  const env = { SEF_TEST_EH_CONN: double.connectionString(hub) };
  return eventHubsOptionsSchema(() => env).parse({
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} secret syntax
    connectionString: '${SEF_TEST_EH_CONN}',
    retry: { maxRetries: 1, retryDelayMs: 20, maxRetryDelayMs: 50, timeoutMs: 2000 },
    ...overrides,
  });
}

export function doubleSink(
  double: EventHubsDouble,
  hub: string,
  overrides: Record<string, unknown> = {},
): EventHubsSink {
  return new EventHubsSink('eh-test', doubleSinkOptions(double, hub, overrides), silentLogger());
}

/** A never-aborted signal for deliver(). */
export const live = (): AbortSignal => new AbortController().signal;

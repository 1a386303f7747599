/**
 * IMDS latency without touching the poller: a decorator around the poller's ScheduledEventsReader that
 * observes every request's duration (success or failure; aborted requests are not counted) into
 * `sef_imds_latency_seconds`. Wire: `new ImdsPoller({ client: timedScheduledEventsReader(client, metrics), … })`.
 */
import type { ScheduledEventsReader } from '../sources/imds/poller.ts';
import type { ForwarderMetrics } from './metrics.ts';

export function timedScheduledEventsReader(
  reader: ScheduledEventsReader,
  metrics: ForwarderMetrics,
  monotonicMs: () => number = () => performance.now(),
): ScheduledEventsReader {
  return {
    getScheduledEvents: async (signal, previous) => {
      const start = monotonicMs();
      try {
        return await reader.getScheduledEvents(signal, previous);
      } finally {
        if (!signal?.aborted) metrics.imdsLatency.observe(Math.max(0, monotonicMs() - start) / 1000);
      }
    },
  };
}

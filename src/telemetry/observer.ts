/**
 * Connects the telemetry to the `run` pipeline: a PipelineObserver (src/pipeline/observer.ts) that feeds the
 * metrics and the HealthTracker, and subscribes to the DeliveryEngine once the pipeline is ready.
 */
import type { PipelineObserver } from '../pipeline/observer.ts';
import type { HealthTracker } from './health.ts';
import {
  type DeliveryEventSource,
  type ForwarderMetrics,
  observeDeliveryEvent,
  observePollOutcome,
  observeRecords,
  onDeliveryEvents,
} from './metrics.ts';

export interface TelemetryObserverOptions {
  metrics: ForwarderMetrics;
  health: HealthTracker;
  /** The running DeliveryEngine, read when the pipeline reports ready (e.g. `() => forwarder.engine`). */
  engine?: () => DeliveryEventSource | undefined;
}

/** A PipelineObserver feeding metrics and health; `detach()` unsubscribes from the engine. */
export function createTelemetryObserver(
  options: TelemetryObserverOptions,
): PipelineObserver & { detach(): void } {
  const { metrics, health } = options;
  let unsubscribe: (() => void) | undefined;
  const detach = (): void => {
    unsubscribe?.();
    unsubscribe = undefined;
  };
  return {
    ready: ({ sinks, storeDamage }) => {
      health.addSinks(sinks);
      health.recordStoreWrite(true); // the store is open (it may have waited for the disk)
      health.recordStoreDamage(storeDamage ?? []);
      for (const d of storeDamage ?? []) {
        const at = Date.parse(d.at);
        if (Number.isFinite(at)) metrics.storeDamage.set({ kind: d.kind }, at / 1000);
      }
      const engine = options.engine?.();
      if (engine && !unsubscribe) {
        unsubscribe = onDeliveryEvents(engine, (event) => {
          observeDeliveryEvent(metrics, event);
          health.recordDeliveryEvent(event);
        });
      }
    },
    outcome: (outcome) => {
      observePollOutcome(metrics, outcome);
      health.recordPoll(outcome);
    },
    committed: ({ records }) => {
      observeRecords(metrics, records);
      health.recordStoreWrite(true);
    },
    storeUnavailable: ({ message }) => {
      health.recordStoreWrite(false, `cannot open the state store: ${message}`);
    },
    commitFailed: ({ message, full }) => {
      health.recordStoreWrite(false, full ? `disk full: ${message}` : message);
    },
    stopping: detach,
    detach,
  };
}

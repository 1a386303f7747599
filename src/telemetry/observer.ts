/**
 * Connects the telemetry to the `run` pipeline: a PipelineObserver (src/pipeline/observer.ts) that feeds the
 * metrics and the HealthTracker, delivery events included (the pipeline forwards the engine's events to it).
 */
import type { PipelineObserver } from '../pipeline/observer.ts';
import type { HealthTracker } from './health.ts';
import {
  addSinks,
  type ForwarderMetrics,
  observeDeliveryEvent,
  observePollOutcome,
  observeRecords,
  observeReload,
} from './metrics.ts';

export interface TelemetryObserverOptions {
  metrics: ForwarderMetrics;
  health: HealthTracker;
}

/** A PipelineObserver feeding metrics and health. */
export function createTelemetryObserver(options: TelemetryObserverOptions): PipelineObserver {
  const { metrics, health } = options;
  return {
    sourceBuilt: ({ pollIntervalMs }) => health.recordPollInterval(pollIntervalMs),
    ready: ({ sinks, storeDamage }) => {
      health.addSinks(sinks);
      addSinks(metrics, sinks); // every per-sink series at 0 (usually declared already by createMetrics)
      health.recordStoreWrite(true); // the store is open (it may have waited for the disk)
      health.recordStoreDamage(storeDamage ?? []);
      for (const d of storeDamage ?? []) {
        const at = Date.parse(d.at);
        if (Number.isFinite(at)) metrics.storeDamage.set({ kind: d.kind }, at / 1000);
      }
    },
    delivery: (event) => {
      observeDeliveryEvent(metrics, event);
      health.recordDeliveryEvent(event);
    },
    outcome: (outcome) => {
      observePollOutcome(metrics, outcome, outcome.requestMs);
      health.recordPoll(outcome);
    },
    committed: ({ records }) => {
      observeRecords(metrics, records);
      health.recordStoreWrite(true);
    },
    reloaded: (report) => {
      observeReload(metrics, report);
      // A removed sink no longer counts for readiness; a rebuilt one starts afresh (its old failures were the old
      // settings').
      health.removeSinks([...report.removed, ...report.rebuilt]);
      health.addSinks(report.sinks);
    },
    storeUnavailable: ({ message }) => {
      health.recordStoreWrite(false, `cannot open the state store: ${message}`);
    },
    commitFailed: ({ message, full }) => {
      health.recordStoreWrite(false, full ? `disk full: ${message}` : message);
    },
  };
}

/**
 * Connects the telemetry to the `run` pipeline: a PipelineObserver (src/pipeline/observer.ts) that feeds the
 * metrics and the HealthTracker (healthObserver), delivery events and periodic sends included (the pipeline
 * forwards the engine's events to it).
 */
import type { PipelineObserver } from '../pipeline/observer.ts';
import { type HealthTracker, healthObserver } from './health.ts';
import {
  addSinks,
  type ForwarderMetrics,
  observeDeliveryEvent,
  observePeriodicSend,
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
  const feedHealth = healthObserver(health);
  return {
    ...feedHealth,
    ready: (info) => {
      feedHealth.ready?.(info);
      addSinks(metrics, info.sinks); // every per-sink series at 0 (usually declared already by createMetrics)
      for (const d of info.storeDamage ?? []) {
        const at = Date.parse(d.at);
        if (Number.isFinite(at)) metrics.storeDamage.set({ kind: d.kind }, at / 1000);
      }
    },
    delivery: (event) => {
      observeDeliveryEvent(metrics, event);
      feedHealth.delivery?.(event);
    },
    outcome: (outcome) => {
      observePollOutcome(metrics, outcome, outcome.requestMs);
      feedHealth.outcome?.(outcome);
    },
    committed: (info) => {
      observeRecords(metrics, info.records);
      feedHealth.committed?.(info);
    },
    reloaded: (report) => {
      observeReload(metrics, report);
      feedHealth.reloaded?.(report);
    },
    periodic: (event) => observePeriodicSend(metrics, event),
  };
}

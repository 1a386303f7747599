/**
 * The forwarder's self-telemetry: Prometheus metrics, readiness tracking, the /healthz /readyz /metrics
 * listener, and the PipelineObserver that wires them into `run`. See docs/observability.md.
 */

export { DEFAULT_SINK_READINESS, SINK_READINESS, type SinkReadiness } from '../config/readiness.ts';
export {
  evaluateHealth,
  type HealthFacts,
  type HealthState,
  type HealthThresholds,
  HealthTracker,
  type HealthTrackerOptions,
  healthObserver,
  type SinkState,
} from './health.ts';
export { configDigest, type HeartbeatOptions, heartbeatSends, heartbeatSinkNames } from './heartbeat.ts';
export { timedScheduledEventsReader } from './imds-latency.ts';
export {
  addPeriodicSends,
  addSinks,
  bindOutboxStats,
  type CreateMetricsOptions,
  createMetrics,
  type ForwarderMetrics,
  METRIC_PREFIX,
  observeDeliveryEvent,
  observePeriodicSend,
  observePollOutcome,
  observeRecords,
} from './metrics.ts';
export { createTelemetryObserver, type TelemetryObserverOptions } from './observer.ts';
export { routeOtelDiagnostics } from './otel-diag.ts';
export { startTelemetryServer, type TelemetryServer, type TelemetryServerOptions } from './server.ts';

/**
 * How /readyz counts the sinks (config `telemetry.readiness.sinks`; docs/observability.md, "What ready means").
 * Its own module, without imports: the config schema and the telemetry (src/telemetry/health.ts) both read it.
 */

/**
 * - `ignore`: sinks never make the forwarder unready (a destination's outage is not this instance's);
 * - `all-failing`: not ready when every sink is failing or paused (nothing gets delivered at all);
 * - `any-failing`: not ready when one sink is failing or paused.
 */
export const SINK_READINESS = ['ignore', 'all-failing', 'any-failing'] as const;
export type SinkReadiness = (typeof SINK_READINESS)[number];

/**
 * The default, for a DaemonSet's readiness probe: a not-ready pod counts against the rollout's maxUnavailable
 * and leaves its Service's endpoints, and one destination's outage (shared by every pod of the fleet) would turn
 * every pod unready at once, stalling the very rollout that may fix it. Sinks are watched through their metrics
 * and alerts instead (SefSinkPaused, SefOutboxOldestPendingTooOld).
 */
export const DEFAULT_SINK_READINESS: SinkReadiness = 'ignore';

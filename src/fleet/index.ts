/**
 * Fleet maintenance history: an Event Hubs consumer (shared partitions, Blob checkpoints) that folds every VM's
 * lifecycle records into the history (SQLite on one host, PostgreSQL shared by several), a dashboard over it
 * and `fleet report`. See docs/fleet.md.
 */
import type { Logger } from '../log.ts';
import type { FleetConfig } from './config.ts';
import { FleetConsumer, type FleetConsumerOptions } from './consumer.ts';
import { assertDashboardAccess } from './dashboard/access.ts';
import {
  historyReachable,
  type Readiness,
  type RunningDashboard,
  startDashboard,
} from './dashboard/server.ts';
import type { FleetHistory } from './history/index.ts';
import { createFleetMetrics, type FleetMetrics } from './metrics.ts';
import { openConfiguredHistory } from './open.ts';
import { startRetention } from './retention.ts';

export { type FleetConfig, FleetConfigError, fleetConfigSchema, loadFleetConfig } from './config.ts';
export { createBlobCheckpointStore, FleetConsumer, type FleetConsumerStats } from './consumer.ts';
export {
  assertDashboardAccess,
  type DashboardAccess,
  DashboardAccessError,
  type DashboardAuth,
} from './dashboard/access.ts';
export {
  dashboardHandler,
  type Readiness,
  type RunningDashboard,
  startDashboard,
} from './dashboard/server.ts';
export { type FleetEvent, foldEvent } from './fold.ts';
export { foldMaintenance, type MaintenanceEvent } from './fold-maintenance.ts';
export * from './history/index.ts';
export { createFleetMetrics, type FleetMetrics, readHistoryGauges } from './metrics.ts';
export { openConfiguredHistory } from './open.ts';
export { formatReport } from './report.ts';
export { applyRetention, startRetention } from './retention.ts';
export { parseRecord } from './validate.ts';

/** A running fleet consumer with its dashboard. */
export interface RunningFleet {
  history: FleetHistory;
  consumer: FleetConsumer;
  dashboard: RunningDashboard | undefined;
  /** The registry served at the dashboard's /metrics (undefined when the dashboard is disabled). */
  metrics: FleetMetrics | undefined;
  close(): Promise<void>;
}

/** `fleet run` is ready when the history answers and the consumer is subscribed. */
async function fleetReadiness(history: FleetHistory, consumer: FleetConsumer): Promise<Readiness> {
  const reachable = await historyReachable(history);
  const subscribed = consumer.subscribed;
  const reasons: string[] = [];
  if (!reachable.ok) reasons.push(`history unreachable: ${reachable.error}`);
  if (!subscribed) reasons.push('the consumer is not subscribed');
  return {
    ready: reasons.length === 0,
    ...(reasons.length === 0 ? {} : { reason: reasons.join('; ') }),
    history: reachable,
    consumer: { subscribed, partitions: consumer.stats.partitions },
  };
}

/** Opens the history, subscribes, prunes to the retention and serves the dashboard (when enabled). */
export async function startFleet(
  config: FleetConfig,
  logger: Logger,
  extra: Pick<FleetConsumerOptions, 'checkpointStore' | 'onBatch'> = {},
): Promise<RunningFleet> {
  // Refuse a non-loopback dashboard without a credential before opening anything.
  if (config.dashboard.enabled) assertDashboardAccess(config.dashboard.host, config.dashboard.auth);
  const history = await openConfiguredHistory(config);
  await history.setRetention(config.retention);
  await history.setCoverageSettings({
    silentMarginSeconds: config.coverage.silentMargin,
    goneAfterSeconds: config.coverage.goneAfter,
    backlogSeconds: config.coverage.backlogAfter,
  });
  const stopRetention = startRetention(history, config.retention, logger.child({ component: 'retention' }));
  const consumer = new FleetConsumer({
    config,
    history,
    logger: logger.child({ component: 'fleet-consumer' }),
    ...extra,
  });
  let dashboard: RunningDashboard | undefined;
  let metrics: FleetMetrics | undefined;
  try {
    await consumer.start();
    if (config.dashboard.enabled) {
      const dashboardLogger = logger.child({ component: 'dashboard' });
      metrics = createFleetMetrics({
        history,
        consumer,
        blastRadiusThreshold: config.dashboard.blastRadiusThreshold,
        logger: dashboardLogger,
      });
      dashboard = await startDashboard({
        history,
        host: config.dashboard.host,
        port: config.dashboard.port,
        logger: dashboardLogger,
        status: () => ({ ...consumer.stats, consumerGroup: config.eventHubs.consumerGroup }),
        metrics: metrics.registry,
        ready: () => fleetReadiness(history, consumer),
        access: { auth: config.dashboard.auth, allowedHosts: config.dashboard.allowedHosts },
        blastRadiusThreshold: config.dashboard.blastRadiusThreshold,
      });
    }
  } catch (error) {
    await consumer.close();
    await stopRetention();
    await history.close();
    throw error;
  }
  return {
    history,
    consumer,
    dashboard,
    metrics,
    close: async () => {
      await dashboard?.close();
      await consumer.close();
      await stopRetention();
      await history.close();
    },
  };
}

/**
 * Fleet maintenance history: an Event Hubs consumer (shared partitions, Blob checkpoints) that folds every VM's
 * lifecycle records into the history (SQLite on one host, PostgreSQL shared by several), a dashboard over it
 * and `fleet report`. See docs/fleet.md.
 */
import type { Logger } from '../log.ts';
import { parseDuration } from '../simulator/clock.ts';
import type { FleetConfig } from './config.ts';
import { FleetConsumer, type FleetConsumerOptions } from './consumer.ts';
import { type RunningDashboard, startDashboard } from './dashboard/server.ts';
import type { FleetHistory } from './history/index.ts';
import { openConfiguredHistory } from './open.ts';

export { type FleetConfig, FleetConfigError, fleetConfigSchema, loadFleetConfig } from './config.ts';
export { createBlobCheckpointStore, FleetConsumer, type FleetConsumerStats } from './consumer.ts';
export { dashboardHandler, type RunningDashboard, startDashboard } from './dashboard/server.ts';
export { type FleetEvent, foldEvent } from './fold.ts';
export { foldMaintenance, type MaintenanceEvent } from './fold-maintenance.ts';
export * from './history/index.ts';
export { openConfiguredHistory } from './open.ts';
export { formatReport } from './report.ts';
export { parseRecord } from './validate.ts';

/** How often a running consumer prunes history older than the retention. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** A running fleet consumer with its dashboard. */
export interface RunningFleet {
  history: FleetHistory;
  consumer: FleetConsumer;
  dashboard: RunningDashboard | undefined;
  close(): Promise<void>;
}

/** Prunes history older than the retention now and then every hour; returns the stop function. */
export function startRetention(
  history: FleetHistory,
  retention: string,
  logger: Logger,
): () => Promise<void> {
  const keepMs = parseDuration(retention, 'retention');
  let running: Promise<void> = Promise.resolve();
  const prune = () => {
    running = running.then(async () => {
      try {
        const removed = await history.prune(new Date(Date.now() - keepMs));
        if (removed.events + removed.rejected + removed.vms > 0)
          logger.info({ retention, ...removed }, 'pruned fleet history older than the retention');
      } catch (error) {
        logger.warn({ err: (error as Error).message }, 'pruning the fleet history failed; will try again');
      }
    });
  };
  prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/** Opens the history, subscribes, prunes to the retention and serves the dashboard (when enabled). */
export async function startFleet(
  config: FleetConfig,
  logger: Logger,
  extra: Pick<FleetConsumerOptions, 'checkpointStore' | 'onBatch'> = {},
): Promise<RunningFleet> {
  const history = await openConfiguredHistory(config);
  await history.setRetention(config.retention);
  const stopRetention = startRetention(history, config.retention, logger.child({ component: 'retention' }));
  const consumer = new FleetConsumer({
    config,
    history,
    logger: logger.child({ component: 'fleet-consumer' }),
    ...extra,
  });
  let dashboard: RunningDashboard | undefined;
  try {
    await consumer.start();
    if (config.dashboard.enabled) {
      dashboard = await startDashboard({
        history,
        host: config.dashboard.host,
        port: config.dashboard.port,
        logger: logger.child({ component: 'dashboard' }),
        status: () => ({ ...consumer.stats, consumerGroup: config.eventHubs.consumerGroup }),
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
    close: async () => {
      await dashboard?.close();
      await consumer.close();
      await stopRetention();
      await history.close();
    },
  };
}

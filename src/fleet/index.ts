/**
 * Fleet maintenance history: an Event Hubs consumer (shared partitions, Blob checkpoints) that materializes every
 * VM's lifecycle records into SQLite, a dashboard over it and `fleet report`. See docs/fleet.md.
 */
import type { Logger } from '../log.ts';
import type { FleetConfig } from './config.ts';
import { FleetConsumer, type FleetConsumerOptions } from './consumer.ts';
import { type RunningDashboard, startDashboard } from './dashboard/server.ts';
import { FleetStore } from './store.ts';

export { type FleetConfig, FleetConfigError, fleetConfigSchema, loadFleetConfig } from './config.ts';
export { createBlobCheckpointStore, FleetConsumer, type FleetConsumerStats } from './consumer.ts';
export { dashboardHandler, type RunningDashboard, startDashboard } from './dashboard/server.ts';
export { type FleetEvent, foldEvent, parseRecord } from './fold.ts';
export * from './queries.ts';
export { formatReport } from './report.ts';
export { FleetStore, type IngestResult, type IngestStats, type RawFleetEvent } from './store.ts';

/** A running fleet consumer with its dashboard. */
export interface RunningFleet {
  store: FleetStore;
  consumer: FleetConsumer;
  dashboard: RunningDashboard | undefined;
  close(): Promise<void>;
}

/** Opens the database, subscribes, and serves the dashboard (when enabled). */
export async function startFleet(
  config: FleetConfig,
  logger: Logger,
  extra: Pick<FleetConsumerOptions, 'checkpointStore' | 'onBatch'> = {},
): Promise<RunningFleet> {
  const store = new FleetStore({ path: config.database });
  const consumer = new FleetConsumer({
    config,
    store,
    logger: logger.child({ component: 'fleet-consumer' }),
    ...extra,
  });
  let dashboard: RunningDashboard | undefined;
  try {
    await consumer.start();
    if (config.dashboard.enabled) {
      dashboard = await startDashboard({
        db: store.db,
        host: config.dashboard.host,
        port: config.dashboard.port,
        logger: logger.child({ component: 'dashboard' }),
        status: () => ({ ...consumer.stats, consumerGroup: config.eventHubs.consumerGroup }),
      });
    }
  } catch (error) {
    await consumer.close();
    store.close();
    throw error;
  }
  return {
    store,
    consumer,
    dashboard,
    close: async () => {
      await dashboard?.close();
      await consumer.close();
      store.close();
    },
  };
}

/**
 * `fleet` (= `fleet run`): consume every VM's lifecycle records from Event Hubs into the SQLite fleet history
 * and serve the dashboard. `fleet report`: text or JSON summary of the history. See docs/fleet.md.
 *
 * `fleet run` prints one JSON line on stdout once it is subscribed: {"dashboard": URL|null, "database": PATH,
 * "consumerGroup": NAME}; logs go to stderr.
 */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import type { EventFilter } from '../../fleet/queries.ts';
import { parseDuration } from '../../simulator/clock.ts';
import { handleShutdownSignals } from './run.ts';

const { existsSync } = process.getBuiltinModule('node:fs');

interface FleetRunOptions {
  config?: string;
  connectionStringEnv?: string;
  namespace?: string;
  eventHub?: string;
  consumerGroup?: string;
  checkpointConnectionStringEnv?: string;
  checkpointAccountUrl?: string;
  checkpointContainer?: string;
  database?: string;
  host?: string;
  port?: string;
  dashboard?: boolean;
  startPosition?: string;
  logLevel?: string;
}

interface FleetReportOptions {
  config?: string;
  database?: string;
  since?: string;
  until?: string;
  json?: boolean;
  type?: string;
  location?: string;
  zone?: string;
  scaleSet?: string;
  vm?: string;
}

function toPort(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new UsageError(`--port must be 0..65535, got ${value}`);
  return n;
}

/** CLI options → raw config overrides (the same shape as the YAML file). */
function runOverrides(opts: FleetRunOptions): Record<string, unknown> {
  const eventHubs: Record<string, unknown> = {
    connectionString: opts.connectionStringEnv === undefined ? undefined : { env: opts.connectionStringEnv },
    fullyQualifiedNamespace: opts.namespace,
    eventHubName: opts.eventHub,
    consumerGroup: opts.consumerGroup,
    startPosition: opts.startPosition,
  };
  const checkpoints: Record<string, unknown> = {
    connectionString:
      opts.checkpointConnectionStringEnv === undefined
        ? undefined
        : { env: opts.checkpointConnectionStringEnv },
    accountUrl: opts.checkpointAccountUrl,
    containerName: opts.checkpointContainer,
  };
  return {
    eventHubs,
    checkpoints,
    database: opts.database,
    dashboard: {
      enabled: opts.dashboard === false ? false : undefined,
      host: opts.host,
      port: toPort(opts.port),
    },
    log: { level: opts.logLevel },
  };
}

async function loadOrUsage(opts: FleetRunOptions) {
  const [{ FleetConfigError, loadFleetConfig }, { SecretResolutionError }] = await Promise.all([
    import('../../fleet/config.ts'),
    import('../../secret.ts'),
  ]);
  try {
    return loadFleetConfig({ file: opts.config, overrides: runOverrides(opts) });
  } catch (error) {
    if (error instanceof FleetConfigError || error instanceof SecretResolutionError) {
      throw new UsageError(error.message);
    }
    if (error instanceof UsageError) throw error;
    throw new UsageError((error as Error).message);
  }
}

/** A time option: ISO 8601, or a duration before now ("7d", "12h"). */
export function parseTimeOption(value: string, flag: string, now: Date = new Date()): string {
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const t = Date.parse(value);
    if (Number.isNaN(t)) throw new UsageError(`${flag}: not an ISO 8601 time: ${value}`);
    return new Date(t).toISOString();
  }
  try {
    return new Date(now.getTime() - parseDuration(value, flag)).toISOString();
  } catch {
    throw new UsageError(
      `${flag}: expected an ISO 8601 time or a duration before now (30m, 12h, 7d), got ${value}`,
    );
  }
}

async function runFleet(opts: FleetRunOptions): Promise<number> {
  const config = await loadOrUsage(opts);
  const [{ createLogger }, { startFleet }] = await Promise.all([
    import('../../log.ts'),
    import('../../fleet/index.ts'),
  ]);
  const logger = createLogger({ level: config.log.level });
  const controller = new AbortController();
  return handleShutdownSignals(logger, controller, async () => {
    const fleet = await startFleet(config, logger);
    process.stdout.write(
      `${JSON.stringify({
        dashboard: fleet.dashboard?.url ?? null,
        database: fleet.store.path,
        consumerGroup: config.eventHubs.consumerGroup,
      })}\n`,
    );
    logger.info({ dashboard: fleet.dashboard?.url, database: fleet.store.path }, 'fleet consumer running');
    await new Promise<void>((resolve) => {
      if (controller.signal.aborted) resolve();
      controller.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await fleet.close();
    logger.info(fleet.consumer.stats, 'fleet consumer stopped');
    return 0;
  });
}

async function report(opts: FleetReportOptions): Promise<void> {
  // Not the fleet/index.ts barrel: a report needs SQLite only, not the Event Hubs and Storage SDKs.
  const [{ FleetStore }, { summarize }, { formatReport }] = await Promise.all([
    import('../../fleet/store.ts'),
    import('../../fleet/queries.ts'),
    import('../../fleet/report.ts'),
  ]);
  let database = opts.database;
  if (database === undefined && opts.config !== undefined) {
    // Only the database path is needed: read it from the file without resolving the hub's secrets.
    const { readConfigFile } = await import('../../config/index.ts');
    const raw = readConfigFile(opts.config);
    if (raw.database !== undefined && typeof raw.database !== 'string') {
      throw new UsageError(`${opts.config}: database must be a file path`);
    }
    database = raw.database;
  }
  database ??= 'fleet.db';
  if (!existsSync(database)) throw new UsageError(`fleet database ${database} does not exist`);
  const now = new Date();
  const filter: EventFilter = {
    since: opts.since === undefined ? undefined : parseTimeOption(opts.since, '--since', now),
    until: opts.until === undefined ? undefined : parseTimeOption(opts.until, '--until', now),
    eventType: opts.type,
    location: opts.location,
    zone: opts.zone,
    scaleSet: opts.scaleSet,
    vm: opts.vm,
  };
  const store = new FleetStore({ path: database, readOnly: true });
  try {
    const summary = summarize(store.db, filter, now);
    process.stdout.write(opts.json ? `${JSON.stringify(summary, null, 2)}\n` : formatReport(summary));
  } finally {
    store.close();
  }
}

export function register(program: Command): void {
  const fleet = program
    .command('fleet')
    .description('Fleet maintenance history: Event Hubs consumer, SQLite history, dashboard and reports.');
  fleet
    .command('run', { isDefault: true })
    .description(
      'Consume lifecycle records from Event Hubs (consumer group, Blob checkpoints, shared partitions) into the ' +
        'SQLite history and serve the dashboard.',
    )
    .option('-c, --config <file>', 'fleet YAML config (options below override it)')
    .option('--connection-string-env <name>', 'environment variable holding the Event Hubs connection string')
    .option('--namespace <host>', 'Event Hubs namespace (managed identity auth)')
    .option('--event-hub <name>', 'event hub name')
    .option('--consumer-group <name>', 'consumer group (default $Default; give the fleet its own)')
    .option(
      '--checkpoint-connection-string-env <name>',
      'environment variable holding the storage connection string',
    )
    .option('--checkpoint-account-url <url>', 'blob endpoint for checkpoints (managed identity auth)')
    .option('--checkpoint-container <name>', 'blob container for checkpoints and ownership')
    .option('--database <path>', 'SQLite history file (default fleet.db)')
    .option('--host <address>', 'dashboard listen address (default 127.0.0.1)')
    .option('--port <port>', 'dashboard port (default 8480; 0 = any free port)')
    .option('--no-dashboard', 'do not serve the dashboard')
    .option('--start-position <where>', 'earliest (default) or latest, for partitions without a checkpoint')
    .option('--log-level <level>', 'log level')
    .action(async (opts: FleetRunOptions) => {
      process.exitCode = await runFleet(opts);
    });
  fleet
    .command('report')
    .description(
      'Summary of the fleet history: counts, notice, advertised versus observed impact, approvals, pending.',
    )
    .option('--database <path>', 'SQLite history file (default: from --config, else fleet.db)')
    .option('-c, --config <file>', 'fleet YAML config (for the database path)')
    .option('--since <time>', 'events first seen at or after: ISO 8601, or a duration before now (7d)')
    .option('--until <time>', 'events first seen before: ISO 8601, or a duration before now')
    .option('--type <eventType>', 'only this EventType')
    .option('--location <region>', 'only this region')
    .option('--zone <zone>', 'only this zone')
    .option('--scale-set <name>', 'only this scale set')
    .option('--vm <text>', 'only VMs whose name contains this')
    .option('--json', 'JSON instead of text')
    .action(async (opts: FleetReportOptions) => report(opts));
}

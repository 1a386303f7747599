/**
 * `fleet` (= `fleet run`): consume every VM's lifecycle records from Event Hubs into the fleet history (SQLite
 * file or PostgreSQL URL) and serve the dashboard. `fleet report`: text or JSON summary of the history.
 * `fleet import`: backfill from JSON-lines files. `fleet dashboard`: serve an existing history without
 * consuming. `fleet migrate`: copy a SQLite history into another store. See docs/fleet.md.
 *
 * `fleet run` and `fleet dashboard` print one JSON line on stdout once running: {"dashboard": URL|null,
 * "database": PATH-or-URL-without-password, ...}; logs go to stderr.
 */
import type { Command } from 'commander';
import { errorMessage, UsageError } from '../../errors.ts';
import type { EventFilter } from '../../fleet/history/queries.ts';
import type { LogLevel } from '../../log.ts';
import { parseDuration } from '../../simulator/clock.ts';
import { exitOnceStopped, handleShutdownSignals } from './run.ts';

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
  retention?: string;
  logLevel?: string;
  authTokenEnv?: string;
}

interface HistoryOptions {
  config?: string;
  database?: string;
}

interface ImportOptions extends HistoryOptions {
  retention?: string;
}

interface FleetReportOptions extends HistoryOptions {
  since?: string;
  until?: string;
  json?: boolean;
  coverage?: boolean;
  type?: string;
  location?: string;
  zone?: string;
  scaleSet?: string;
  status?: string;
  vm?: string;
}

interface FleetDashboardOptions extends HistoryOptions {
  host?: string;
  port?: string;
  logLevel?: string;
  authTokenEnv?: string;
}

function toPort(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new UsageError(`--port must be 0..65535, got ${value}`);
  return n;
}

/** --host / --port / --auth-token-env → the raw `dashboard` overrides (the token as an env secret). */
function dashboardOverrides(opts: { host?: string; port?: string; authTokenEnv?: string }) {
  return {
    host: opts.host,
    port: toPort(opts.port),
    auth: opts.authTokenEnv === undefined ? undefined : { bearerToken: { env: opts.authTokenEnv } },
  };
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
    retention: opts.retention,
    dashboard: {
      enabled: opts.dashboard === false ? false : undefined,
      ...dashboardOverrides(opts),
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
    throw new UsageError(errorMessage(error));
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
  // What `fleet validate` refuses too (one function), before anything starts: exit code 2 naming every problem.
  const { assertFleetStartable } = await import('../../fleet/start-checks.ts');
  await assertFleetStartable(config, opts.config ?? 'command-line options');
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
        database: fleet.history.description,
        consumerGroup: config.eventHubs.consumerGroup,
      })}\n`,
    );
    logger.info(
      { dashboard: fleet.dashboard?.url, database: fleet.history.description },
      'fleet consumer running',
    );
    await new Promise<void>((resolve) => {
      if (controller.signal.aborted) resolve();
      controller.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await fleet.close();
    logger.info(fleet.consumer.stats, 'fleet consumer stopped');
    // The AMQP client can leave a timer behind (rhea's heartbeat after a close during start-up): a stop must
    // not hang on it.
    exitOnceStopped(logger, 0);
    return 0;
  });
}

/** The history settings of --config / --database (/ --retention), without the consumer's secrets. */
async function historyConfig(opts: ImportOptions) {
  const [{ FleetConfigError, loadHistoryConfig }, { SecretResolutionError }] = await Promise.all([
    import('../../fleet/config.ts'),
    import('../../secret.ts'),
  ]);
  try {
    return loadHistoryConfig({
      file: opts.config,
      overrides: { database: opts.database, retention: opts.retention },
    });
  } catch (error) {
    if (error instanceof FleetConfigError || error instanceof SecretResolutionError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

/** True for a SQLite history file written before schema migrations (tables records + events, no versions). */
async function isLegacySqliteHistory(database: string): Promise<boolean> {
  const { isPostgresUrl } = await import('../../fleet/history/index.ts');
  if (isPostgresUrl(database)) return false;
  const { DatabaseSync } = await import('node:sqlite');
  let db: import('node:sqlite').DatabaseSync | undefined;
  try {
    db = new DatabaseSync(database, { readOnly: true });
    const tables = new Set(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((row) => String(row.name)),
    );
    return tables.has('events') && tables.has('records') && !tables.has('schema_migrations');
  } catch {
    return false;
  } finally {
    db?.close();
  }
}

/** Opens the history of --config / --database; a missing file or an outdated schema is a usage error. */
async function openHistoryFor(
  opts: HistoryOptions,
  readOnly: boolean,
  loaded?: Awaited<ReturnType<typeof historyConfig>>,
) {
  const config = loaded ?? (await historyConfig(opts));
  // Not the fleet/index.ts barrel: reading the history needs neither the Event Hubs nor the Storage SDKs.
  const [
    { openConfiguredHistory },
    { LegacyHistoryError, MissingDatabaseError, SchemaOutdatedError, SchemaTooNewError },
  ] = await Promise.all([import('../../fleet/open.ts'), import('../../fleet/history/index.ts')]);
  try {
    return await openConfiguredHistory(config, { readOnly });
  } catch (error) {
    // A read-only open sees no schema_migrations in a file of the version before migrations: say how to copy it
    // (`fleet migrate`), not "run fleet run on it", which would refuse the same file.
    if (error instanceof SchemaOutdatedError && (await isLegacySqliteHistory(config.database)))
      throw new UsageError(new LegacyHistoryError().message);
    if (
      error instanceof MissingDatabaseError ||
      error instanceof SchemaOutdatedError ||
      error instanceof SchemaTooNewError ||
      error instanceof LegacyHistoryError
    )
      throw new UsageError(error.message);
    throw error;
  }
}

function filterOf(opts: FleetReportOptions, now: Date): EventFilter {
  return {
    since: opts.since === undefined ? undefined : parseTimeOption(opts.since, '--since', now),
    until: opts.until === undefined ? undefined : parseTimeOption(opts.until, '--until', now),
    eventType: opts.type,
    location: opts.location,
    zone: opts.zone,
    scaleSet: opts.scaleSet,
    status: opts.status,
    vm: opts.vm,
  };
}

async function report(opts: FleetReportOptions): Promise<void> {
  const now = new Date();
  const filter = filterOf(opts, now);
  const { formatCoverageReport, formatReport } = await import('../../fleet/report.ts');
  const history = await openHistoryFor(opts, true);
  try {
    if (opts.coverage === true) {
      const coverage = await history.coverage({
        location: filter.location,
        zone: filter.zone,
        scaleSet: filter.scaleSet,
        vm: filter.vm,
      });
      process.stdout.write(
        opts.json ? `${JSON.stringify(coverage, null, 2)}\n` : formatCoverageReport(coverage),
      );
      return;
    }
    const summary = await history.summary(filter);
    process.stdout.write(opts.json ? `${JSON.stringify(summary, null, 2)}\n` : formatReport(summary));
  } finally {
    await history.close();
  }
}

/**
 * `fleet import`: the files, then, when a retention is given (--retention, or `retention` in --config), that
 * retention as `fleet run` applies it: recorded for the report and the dashboard, and older events pruned; both
 * in the JSON line. Without one the history's settings stay as they are (a backfill of old records keeps them).
 */
async function importFiles(files: string[], opts: ImportOptions): Promise<number> {
  const [{ importJsonLines }, { applyRetention }, { readConfigFile }] = await Promise.all([
    import('../../fleet/import.ts'),
    import('../../fleet/retention.ts'),
    import('../../config/file.ts'),
  ]);
  const config = await historyConfig(opts);
  const retentionGiven =
    opts.retention !== undefined ||
    (opts.config !== undefined && readConfigFile(opts.config).retention !== undefined);
  const history = await openHistoryFor(opts, false, config);
  try {
    const result = await importJsonLines(history, files, (line) => process.stderr.write(`${line}\n`));
    const applied = retentionGiven
      ? { retention: config.retention, pruned: await applyRetention(history, config.retention) }
      : {};
    process.stdout.write(`${JSON.stringify({ ...result, ...applied })}\n`);
    return 0;
  } finally {
    await history.close();
  }
}

/** The dashboard settings of --config (its `dashboard` keys) and the CLI options (which win). */
async function dashboardServeConfig(opts: FleetDashboardOptions) {
  const [{ FleetConfigError, loadDashboardConfig }, { SecretResolutionError }] = await Promise.all([
    import('../../fleet/config.ts'),
    import('../../secret.ts'),
  ]);
  try {
    return loadDashboardConfig({
      file: opts.config,
      overrides: { database: opts.database, dashboard: dashboardOverrides(opts) },
    }).dashboard;
  } catch (error) {
    if (error instanceof FleetConfigError || error instanceof SecretResolutionError) {
      throw new UsageError(error.message);
    }
    throw error;
  }
}

async function serveDashboard(opts: FleetDashboardOptions): Promise<number> {
  const [{ createLogger }, { startDashboard }, { createFleetMetrics }] = await Promise.all([
    import('../../log.ts'),
    import('../../fleet/dashboard/server.ts'),
    import('../../fleet/metrics.ts'),
  ]);
  const logger = createLogger({ level: (opts.logLevel as LogLevel | undefined) ?? 'info' });
  // Checked before opening the history: a non-loopback --host without a credential is refused here.
  const settings = await dashboardServeConfig(opts);
  const history = await openHistoryFor(opts, true);
  const controller = new AbortController();
  return handleShutdownSignals(logger, controller, async () => {
    try {
      const dashboardLogger = logger.child({ component: 'dashboard' });
      const metrics = createFleetMetrics({
        history,
        blastRadiusThreshold: settings.blastRadiusThreshold,
        logger: dashboardLogger,
      });
      const dashboard = await startDashboard({
        history,
        host: settings.host,
        port: settings.port,
        logger: dashboardLogger,
        status: () => ({ mode: 'dashboard only (not consuming)' }),
        metrics: metrics.registry,
        access: { auth: settings.auth, allowedHosts: settings.allowedHosts },
        blastRadiusThreshold: settings.blastRadiusThreshold,
      });
      process.stdout.write(
        `${JSON.stringify({ dashboard: dashboard.url, database: history.description, consuming: false })}\n`,
      );
      logger.info({ dashboard: dashboard.url, database: history.description }, 'fleet dashboard running');
      await new Promise<void>((resolve) => {
        if (controller.signal.aborted) resolve();
        controller.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await dashboard.close();
      return 0;
    } finally {
      await history.close();
    }
  });
}

async function migrateHistory(opts: { from?: string; to?: string; config?: string }): Promise<number> {
  if (opts.from === undefined)
    throw new UsageError('fleet migrate needs --from FILE (the SQLite history to copy)');
  if (opts.to === undefined && opts.config === undefined)
    throw new UsageError('fleet migrate needs --to (a postgres:// URL or a SQLite file) or --config');
  const { copySqliteHistory } = await import('../../fleet/import.ts');
  const target = await openHistoryFor({ config: opts.config, database: opts.to }, false);
  try {
    const result = await copySqliteHistory(opts.from, target, (line) => process.stderr.write(`${line}\n`));
    process.stdout.write(`${JSON.stringify({ from: opts.from, to: target.description, ...result })}\n`);
    return 0;
  } finally {
    await target.close();
  }
}

/**
 * `fleet validate FILE`: the fleet config schema (secrets resolved, as `fleet run` resolves them) and the start
 * checks of src/fleet/start-checks.ts, the checks `fleet run` makes before it uses the network. A forwarder
 * configuration is named as such, with the command that checks it.
 */
async function validateFleetFile(fileArgument: string | undefined, opts: { config?: string }): Promise<void> {
  if (fileArgument !== undefined && opts.config !== undefined && fileArgument !== opts.config) {
    throw new UsageError(`two different config files given (${fileArgument} and --config ${opts.config})`);
  }
  const file = fileArgument ?? opts.config;
  if (file === undefined) throw new UsageError('fleet validate needs a file: fleet validate FILE');
  const [{ assertFleetStartable }, { configKindHint }] = await Promise.all([
    import('../../fleet/start-checks.ts'),
    import('../config-kind.ts'),
  ]);
  let config: Awaited<ReturnType<typeof loadOrUsage>>;
  try {
    config = await loadOrUsage({ config: file });
  } catch (error) {
    const hint = configKindHint(file, 'fleet');
    if (hint === undefined || !(error instanceof UsageError)) throw error;
    throw new UsageError(`${error.message}\n  ${hint}`);
  }
  await assertFleetStartable(config, file);
  const history = /^postgres(ql)?:\/\//i.test(config.database)
    ? (() => {
        const url = new URL(config.database);
        return `PostgreSQL ${url.host}${url.pathname}`;
      })()
    : `SQLite ${config.database}`;
  const dashboard = config.dashboard.enabled
    ? `${config.dashboard.host}:${config.dashboard.port}`
    : 'disabled';
  process.stdout.write(
    `ok: ${file} is a valid fleet configuration; history: ${history}; consumer group: ` +
      `${config.eventHubs.consumerGroup}; dashboard: ${dashboard}\n`,
  );
}

export function register(program: Command): void {
  const fleet = program
    .command('fleet')
    .description(
      'Fleet maintenance history: Event Hubs consumer, history in SQLite (one host) or PostgreSQL (shared by ' +
        'several consumers), dashboard and reports.',
    );
  fleet
    .command('run', { isDefault: true })
    .description(
      'Consume lifecycle records from Event Hubs (consumer group, Blob checkpoints, shared partitions) into the ' +
        'history (a SQLite file, or a PostgreSQL database that several consumers share) and serve the dashboard.',
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
    .option('--database <path|url>', 'SQLite history file (default fleet.db) or postgres:// URL')
    .option('--retention <duration>', 'prune history older than this (default 400d)')
    .option(
      '--host <address>',
      'dashboard listen address (default 127.0.0.1; elsewhere a credential is required: dashboard.auth)',
    )
    .option('--port <port>', 'dashboard port (default 8480; 0 = any free port)')
    .option(
      '--auth-token-env <name>',
      'environment variable holding the bearer token the dashboard and /metrics require (dashboard.auth)',
    )
    .option('--no-dashboard', 'do not serve the dashboard')
    .option('--start-position <where>', 'earliest (default) or latest, for partitions without a checkpoint')
    .option('--log-level <level>', 'log level')
    .action(async (opts: FleetRunOptions) => {
      process.exitCode = await runFleet(opts);
    });
  fleet
    .command('validate')
    .description(
      'Validate a fleet YAML config file with the checks fleet run makes before it uses the network (schema, ' +
        'secrets, dashboard access, the Storage packages, the SQLite history file); exit 0 when valid, 2 with ' +
        'every problem named otherwise.',
    )
    .argument('[file]', 'the fleet YAML config file (or --config FILE)')
    .option('-c, --config <file>', 'the fleet YAML config file (same as the argument)')
    .action(async (file: string | undefined, opts: { config?: string }) => validateFleetFile(file, opts));
  fleet
    .command('report')
    .description(
      'Summary of the fleet history: counts, notice, advertised versus observed impact, approvals, pending.',
    )
    .option(
      '--database <path|url>',
      'SQLite history file or postgres:// URL (default: from --config, else fleet.db)',
    )
    .option('-c, --config <file>', 'fleet YAML config (for database and postgres settings)')
    .option('--since <time>', 'events first seen at or after: ISO 8601, or a duration before now (7d)')
    .option('--until <time>', 'events first seen before: ISO 8601, or a duration before now')
    .option('--type <eventType>', 'only this EventType')
    .option('--location <region>', 'only this region')
    .option('--zone <zone>', 'only this zone')
    .option('--scale-set <name>', 'only this scale set')
    .option('--status <status>', 'only this status: scheduled, started, completed, canceled or vm-deleted')
    .option('--vm <text>', 'only events affecting a VM whose name contains this')
    .option(
      '--coverage',
      'coverage instead: VMs whose forwarders report, are silent, unhealthy or gone (by version, region, scale set)',
    )
    .option('--json', 'JSON instead of text')
    .action(async (opts: FleetReportOptions) => report(opts));
  fleet
    .command('import')
    .description(
      "Backfill the history from JSON-lines CloudEvents (the file sink's output; - for stdin), validated and " +
        'folded like consumed records; importing the same file again changes nothing.',
    )
    .argument('<files...>', 'JSON-lines files, or - for standard input')
    .option(
      '--database <path|url>',
      'SQLite history file or postgres:// URL (default: from --config, else fleet.db)',
    )
    .option('-c, --config <file>', 'fleet YAML config (for database, postgres and retention settings)')
    .option(
      '--retention <duration>',
      'what the history keeps, applied as fleet run applies it: recorded (fleet report, dashboard) and older ' +
        "events pruned after the import (default: --config's retention; without either, nothing is pruned)",
    )
    .action(async (files: string[], opts: ImportOptions) => {
      process.exitCode = await importFiles(files, opts);
    });
  fleet
    .command('dashboard')
    .description('Serve the dashboard and API over an existing history without consuming (read-only).')
    .option(
      '--database <path|url>',
      'SQLite history file or postgres:// URL (default: from --config, else fleet.db)',
    )
    .option('-c, --config <file>', 'fleet YAML config (for database and postgres settings)')
    .option('--host <address>', 'listen address (default 127.0.0.1; elsewhere a credential is required)')
    .option('--port <port>', 'port (default 8480; 0 = any free port)')
    .option(
      '--auth-token-env <name>',
      'environment variable holding the bearer token the dashboard and /metrics require (dashboard.auth)',
    )
    .option('--log-level <level>', 'log level')
    .action(async (opts: FleetDashboardOptions) => {
      process.exitCode = await serveDashboard(opts);
    });
  fleet
    .command('migrate')
    .description('Copy a SQLite history (this or an earlier version) into another store, e.g. PostgreSQL.')
    .option('--from <file>', 'the SQLite history file to copy')
    .option('--to <path|url>', 'the target: a postgres:// URL or a SQLite file')
    .option('-c, --config <file>', 'fleet YAML config naming the target (database, postgres)')
    .action(async (opts: { from?: string; to?: string; config?: string }) => {
      process.exitCode = await migrateHistory(opts);
    });
}

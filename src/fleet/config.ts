/**
 * Configuration of the fleet consumer (`scheduled-events-forwarder fleet`): where to read (Event Hubs consumer
 * group), where to keep checkpoints and partition ownership (Azure Blob Storage), where to materialize the
 * history (SQLite) and where to serve the dashboard. A YAML file and/or CLI options; secrets (connection
 * strings) through src/secret.ts, never logged. Documented in docs/fleet.md.
 */
import { z } from 'zod';
import { azureCredentialSchema } from '../azure/credential-options.ts';
import { checkEventHubTarget } from '../azure/event-hubs-target.ts';
import { mergeRaw, readConfigFile } from '../config/index.ts';
import { LOG_LEVELS } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { LogLevel } from '../log.ts';
import { registerUrlCredentials } from '../redact.ts';
import { type Env, readSecretValue, SecretResolutionError, secretInput, secretSchema } from '../secret.ts';
import { parseDuration } from '../simulator/clock.ts';
import { type DashboardAuth, isLoopbackAddress, missingCredentialMessage } from './dashboard/access.ts';

/** Where the history is kept and for how long: shared by `fleet run` and the commands that only read or write it. */
function historyFields(env: () => Env) {
  return {
    database: secretInput
      .default('fleet.db')
      .transform((input, ctx) => resolveDatabase(input, env, ctx))
      .describe(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
        'SQLite history file (one host), or a postgres:// URL (several hosts); a URL with a password as a secret: "${ENV}", {env: NAME} or {file: PATH}',
      ),
    postgres: z
      .object({
        password: secretSchema(env)
          .optional()
          .describe('password, when not in the URL (a secret); not with authentication: entra'),
        authentication: z
          .enum(['password', 'entra'])
          .default('password')
          .describe('entra: a Microsoft Entra access token is the password (Azure Database for PostgreSQL)'),
        credential: azureCredentialSchema().prefault({}).describe('where Entra tokens come from'),
        poolSize: z.number().int().min(1).max(50).default(4).describe('connections per consumer'),
      })
      .strict()
      .prefault({})
      .describe('PostgreSQL store options (used with a postgres:// database URL)'),
    retention: z
      .string()
      .default('400d')
      .refine((v) => {
        try {
          return parseDuration(v) > 0;
        } catch {
          return false;
        }
      }, 'a duration such as 90d, 400d or 12h')
      .describe('history older than this is pruned (newest record of an event); e.g. 90d, 400d'),
  };
}

/** A positive duration setting ("30m", "7d"), parsed to seconds. */
function durationSetting(fallback: string, what: string) {
  return z
    .string()
    .default(fallback)
    .refine((v) => {
      try {
        return parseDuration(v) > 0;
      } catch {
        return false;
      }
    }, 'a duration such as 30m, 2h or 7d')
    .transform((v) => parseDuration(v) / 1000)
    .describe(what);
}

/**
 * Coverage (docs/fleet.md, Coverage): when a VM whose forwarder sends heartbeats counts as silent, gone or
 * unhealthy. `fleet run` stores them in the history for every dashboard and report reading it.
 */
const coverageSchema = z
  .object({
    silentMargin: durationSetting(
      '30m',
      "a VM is silent when no heartbeat came for longer than its forwarder's heartbeat interval plus this",
    ),
    goneAfter: durationSetting(
      '7d',
      'a VM silent for longer than this is gone (one Azure deleted is gone at once); gone VMs are not counted as silent',
    ),
    backlogAfter: durationSetting(
      '30m',
      "a forwarder is unhealthy when a sink's oldest pending record is older than this (a stuck backlog)",
    ),
  })
  .strict();

/** A host name for `Host` (optionally name:port or [IPv6]:port), without a scheme or path. */
const allowedHost = z
  .string()
  .regex(
    /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]@]+)(:\d{1,5})?$/,
    'a host name, optionally with :port (no scheme or path)',
  );

/**
 * The dashboard server's settings (`fleet run` and `fleet dashboard`): where it listens, who may use it
 * (src/fleet/dashboard/access.ts) and the blast-radius threshold of its metrics.
 */
function dashboardSchema(env: () => Env) {
  return z
    .object({
      enabled: z
        .boolean()
        .default(true)
        .describe('serve the dashboard, its API, /metrics, /healthz and /readyz'),
      host: z.string().min(1).default('127.0.0.1').describe('listen address (loopback by default)'),
      port: z.number().int().min(0).max(65_535).default(8480).describe('listen port (0 = any free port)'),
      auth: z
        .object({
          bearerToken: secretSchema(env)
            .optional()
            .describe('requests must send Authorization: Bearer <token> (a secret)'),
          basic: z
            .object({
              username: z.string().min(1),
              password: secretSchema(env).describe('a secret'),
            })
            .strict()
            .optional()
            .describe('HTTP Basic authentication'),
        })
        .strict()
        .optional()
        .superRefine((a, ctx) => {
          if (a !== undefined && (a.bearerToken === undefined) === (a.basic === undefined))
            ctx.addIssue({ code: 'custom', message: 'give exactly one of bearerToken or basic' });
        })
        .transform((a): DashboardAuth | undefined =>
          a === undefined
            ? undefined
            : a.bearerToken !== undefined
              ? { bearerToken: a.bearerToken }
              : { basic: a.basic! },
        )
        .describe('credential every request needs (required when host is not a loopback address)'),
      allowedHosts: z
        .array(allowedHost)
        .default([])
        .describe(
          'host names accepted in the Host header besides the bind address, localhost, 127.0.0.1 and [::1] ' +
            'with the port (e.g. the name a proxy forwards); others get 421',
        ),
      blastRadiusThreshold: z
        .number()
        .int()
        .min(0)
        .default(10)
        .describe('VMs; exported as sef_fleet_blast_radius_threshold for alert rules'),
    })
    .strict()
    .superRefine((d, ctx) => {
      if (d.enabled && d.auth === undefined && !isLoopbackAddress(d.host))
        ctx.addIssue({ code: 'custom', path: ['auth'], message: missingCredentialMessage(d.host) });
    });
}

export type DashboardConfig = z.infer<ReturnType<typeof dashboardSchema>>;

/** The history part of a fleet config (`fleet report`, `import`, `dashboard`): other keys are not checked. */
export function historyConfigSchema(env: () => Env = () => process.env) {
  return z.object(historyFields(env));
}

export type HistoryConfig = z.infer<ReturnType<typeof historyConfigSchema>>;

/** The fleet consumer's config schema; `env` is injectable for tests (secret resolution). */
export function fleetConfigSchema(env: () => Env = () => process.env) {
  const eventHubs = z
    .object({
      connectionString: secretSchema(env)
        .optional()
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
        .describe('connection string as a secret: "${ENV}", {env: NAME} or {file: PATH}'),
      fullyQualifiedNamespace: z
        .string()
        .min(1)
        .optional()
        .describe('namespace host (credential auth; with eventHubName)'),
      eventHubName: z
        .string()
        .min(1)
        .optional()
        .describe('event hub name (or EntityPath of the connection string)'),
      consumerGroup: z
        .string()
        .min(1)
        .default('$Default')
        .describe('consumer group (give the fleet its own)'),
      credential: azureCredentialSchema()
        .prefault({})
        .describe('how to authenticate with fullyQualifiedNamespace'),
      startPosition: z
        .enum(['earliest', 'latest'])
        .default('earliest')
        .describe('where to start on a partition that has no checkpoint yet'),
      maxBatchSize: z.number().int().min(1).max(1000).default(100).describe('events per processEvents call'),
      maxWaitTimeMs: z
        .number()
        .int()
        .min(10)
        .max(60_000)
        .default(1000)
        .describe('longest wait to fill a batch'),
      loadBalancing: z
        .object({
          strategy: z.enum(['balanced', 'greedy']).default('balanced'),
          updateIntervalMs: z
            .number()
            .int()
            .min(100)
            .default(10_000)
            .describe('load-balancing loop interval'),
          ownershipExpirationMs: z
            .number()
            .int()
            .min(500)
            .default(60_000)
            .describe('an instance that stops renewing loses its partitions after this long'),
        })
        .strict()
        .prefault({}),
      customEndpointAddress: z
        .string()
        .url()
        .optional()
        .describe('connect here instead of the namespace host'),
    })
    .strict()
    .superRefine(checkEventHubTarget);

  const checkpoints = z
    .object({
      connectionString: secretSchema(env).optional().describe('storage account connection string (secret)'),
      accountUrl: z
        .string()
        .url()
        .optional()
        .describe('blob endpoint, e.g. https://acct.blob.core.windows.net (credential auth)'),
      containerName: z
        .string()
        .regex(
          /^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$/,
          'a blob container name (3-63 lower-case letters, digits, -)',
        )
        .default('fleet-checkpoints')
        .describe('container for checkpoints and ownership (created if missing)'),
      credential: azureCredentialSchema().prefault({}).describe('how to authenticate with accountUrl'),
    })
    .strict()
    .superRefine((o, ctx) => {
      if ((o.connectionString === undefined) === (o.accountUrl === undefined)) {
        ctx.addIssue({ code: 'custom', message: 'give exactly one of connectionString or accountUrl' });
      }
    });

  return z
    .object({
      eventHubs,
      checkpoints,
      ...historyFields(env),
      dashboard: dashboardSchema(env).prefault({}),
      coverage: coverageSchema.prefault({}).describe('when VMs count as silent, gone or unhealthy'),
      log: z
        .object({ level: z.enum(LOG_LEVELS).default('info') })
        .strict()
        .prefault({}),
    })
    .strict();
}

/** A database setting: a path or URL as written, or a secret reference resolved (URL passwords registered). */
function resolveDatabase(input: z.infer<typeof secretInput>, env: () => Env, ctx: z.RefinementCtx): string {
  let value: string;
  if (typeof input === 'string' && !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(input)) value = input;
  else {
    try {
      value = readSecretValue(input, env());
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message:
          error instanceof SecretResolutionError ? error.message : 'cannot resolve the database secret',
      });
      return z.NEVER;
    }
  }
  if (/^postgres(ql)?:\/\//i.test(value)) {
    // Only the password is secret: logs keep the host and database name readable.
    registerUrlCredentials(value);
    try {
      new URL(value);
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: 'not a valid postgres:// URL (check its characters are URL-encoded)',
      });
      return z.NEVER;
    }
  }
  return value;
}

export type FleetConfig = z.infer<ReturnType<typeof fleetConfigSchema>> & { log: { level: LogLevel } };

/** Thrown for an invalid fleet configuration; the message names every problem by key path. */
/** An invalid fleet configuration: a ConfigError (the CLI exits with code 2). */
export class FleetConfigError extends ConfigError {
  constructor(message: string) {
    super(message, []);
    this.name = 'FleetConfigError';
  }
}

function configError(issues: z.core.$ZodIssue[], origin: string): FleetConfigError {
  const lines = issues.map((issue) => {
    const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
    return `  ${path || '(top level)'}: ${issue.message}`;
  });
  return new FleetConfigError(`invalid fleet configuration (${origin}):\n${lines.join('\n')}`);
}

/**
 * Validates only the history keys (database, postgres, retention) of a fleet config file merged with CLI
 * overrides: the Event Hubs and checkpoint secrets of the consumer's service are not needed to read the history.
 */
export function loadHistoryConfig(
  options: { file?: string | undefined; overrides?: Record<string, unknown>; env?: Env } = {},
): HistoryConfig {
  const fromFile = options.file === undefined ? {} : readConfigFile(options.file);
  const raw = mergeRaw(fromFile, options.overrides ?? {});
  const picked = { database: raw.database, postgres: raw.postgres, retention: raw.retention };
  const env = options.env ?? process.env;
  const result = historyConfigSchema(() => env).safeParse(picked);
  if (!result.success) throw configError(result.error.issues, options.file ?? 'command-line options');
  return result.data;
}

/** What `fleet dashboard` reads: the history keys and the dashboard's (host, port, auth, allowedHosts, ...). */
export type DashboardServeConfig = HistoryConfig & { dashboard: DashboardConfig };

/**
 * Validates the history and dashboard keys of a fleet config file merged with CLI overrides (`fleet dashboard`):
 * the consumer's Event Hubs and checkpoint secrets are not needed to serve the history.
 */
export function loadDashboardConfig(
  options: { file?: string | undefined; overrides?: Record<string, unknown>; env?: Env } = {},
): DashboardServeConfig {
  const fromFile = options.file === undefined ? {} : readConfigFile(options.file);
  const raw = mergeRaw(fromFile, options.overrides ?? {});
  const picked = {
    database: raw.database,
    postgres: raw.postgres,
    retention: raw.retention,
    dashboard: raw.dashboard,
  };
  const env = options.env ?? process.env;
  const schema = z.object({
    ...historyFields(() => env),
    dashboard: dashboardSchema(() => env).prefault({}),
  });
  const result = schema.safeParse(picked);
  if (!result.success) throw configError(result.error.issues, options.file ?? 'command-line options');
  return result.data;
}

/** Validates a raw fleet config (YAML file contents merged with CLI overrides). */
export function loadFleetConfig(
  options: { file?: string | undefined; overrides?: Record<string, unknown>; env?: Env } = {},
): FleetConfig {
  const fromFile = options.file === undefined ? {} : readConfigFile(options.file);
  const raw = mergeRaw(fromFile, options.overrides ?? {});
  const env = options.env ?? process.env;
  const result = fleetConfigSchema(() => env).safeParse(raw);
  if (!result.success) throw configError(result.error.issues, options.file ?? 'command-line options');
  return result.data as FleetConfig;
}

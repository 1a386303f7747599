/**
 * Configuration of the fleet consumer (`scheduled-events-forwarder fleet`): where to read (Event Hubs consumer
 * group), where to keep checkpoints and partition ownership (Azure Blob Storage), where to materialize the
 * history (SQLite) and where to serve the dashboard. A YAML file and/or CLI options; secrets (connection
 * strings) through src/secret.ts, never logged. Documented in docs/fleet.md.
 */
import { z } from 'zod';
import { azureCredentialSchema } from '../azure/credential-options.ts';
import { mergeRaw, readConfigFile } from '../config/index.ts';
import { LOG_LEVELS } from '../config/schema.ts';
import type { LogLevel } from '../log.ts';
import { type Env, secretSchema } from '../secret.ts';
import { checkEventHubTarget } from '../sinks/event-hubs/options.ts';

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
      credential: azureCredentialSchema
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
      credential: azureCredentialSchema.prefault({}).describe('how to authenticate with accountUrl'),
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
      database: z.string().min(1).default('fleet.db').describe('SQLite history file (WAL)'),
      dashboard: z
        .object({
          enabled: z.boolean().default(true),
          host: z.string().min(1).default('127.0.0.1').describe('listen address (loopback by default)'),
          port: z.number().int().min(0).max(65_535).default(8480).describe('listen port (0 = any free port)'),
        })
        .strict()
        .prefault({}),
      log: z
        .object({ level: z.enum(LOG_LEVELS).default('info') })
        .strict()
        .prefault({}),
    })
    .strict();
}

export type FleetConfig = z.infer<ReturnType<typeof fleetConfigSchema>> & { log: { level: LogLevel } };

/** Thrown for an invalid fleet configuration; the message names every problem by key path. */
export class FleetConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FleetConfigError';
  }
}

/** Validates a raw fleet config (YAML file contents merged with CLI overrides). */
export function loadFleetConfig(
  options: { file?: string | undefined; overrides?: Record<string, unknown>; env?: Env } = {},
): FleetConfig {
  const fromFile = options.file === undefined ? {} : readConfigFile(options.file);
  const raw = mergeRaw(fromFile, options.overrides ?? {});
  const env = options.env ?? process.env;
  const result = fleetConfigSchema(() => env).safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
      return `  ${path || '(top level)'}: ${issue.message}`;
    });
    const origin = options.file === undefined ? 'command-line options' : options.file;
    throw new FleetConfigError(`invalid fleet configuration (${origin}):\n${lines.join('\n')}`);
  }
  return result.data as FleetConfig;
}

/**
 * Configuration of the Event Hubs sink (the `options` of a sink with `type: eventhubs`). Every key is described
 * for `config` help and docs/sinks-event-hubs.md.
 */
import { z } from 'zod';
import { azureCredentialSchema } from '../../azure/credential-options.ts';
import { checkEventHubTarget } from '../../azure/event-hubs-target.ts';
import { lazy } from '../../lazy.ts';
import { type Env, secretSchema } from '../../secret.ts';
import { PARTITION_KEY_MODES } from './event.ts';

const retrySchema = lazy(() =>
  z
    .object({
      maxRetries: z
        .number()
        .int()
        .min(0)
        .max(5)
        .default(2)
        .describe('SDK-level retries per deliver() call (the delivery engine owns long-term retries)'),
      retryDelayMs: z
        .number()
        .int()
        .min(0)
        .max(60_000)
        .default(500)
        .describe('first SDK retry delay (exponential)'),
      maxRetryDelayMs: z.number().int().min(0).max(60_000).default(5_000).describe('largest SDK retry delay'),
      timeoutMs: z
        .number()
        .int()
        .min(100)
        .max(120_000)
        .default(10_000)
        .describe('per-try timeout of one AMQP operation (connect, authenticate, send)'),
    })
    .strict(),
);

/** The sink's options schema; `env` is injectable for tests (secret resolution). */
export function eventHubsOptionsSchema(env: () => Env = () => process.env) {
  return z
    .object({
      fullyQualifiedNamespace: z
        .string()
        .min(1)
        .optional()
        .describe('namespace host, e.g. myns.servicebus.windows.net (credential auth; with eventHubName)'),
      eventHubName: z
        .string()
        .min(1)
        .optional()
        .describe(
          'event hub name (required with fullyQualifiedNamespace; optional with a connection string)',
        ),
      connectionString: secretSchema(env).optional().describe(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
        'connection string as a secret: "${ENV_VAR}", {env: NAME} or {file: PATH}; never logged. Accepts the emulator form with UseDevelopmentEmulator=true',
      ),
      credential: azureCredentialSchema()
        .prefault({})
        .describe('how to authenticate with fullyQualifiedNamespace (ignored with connectionString)'),
      partitionKey: z
        .enum(PARTITION_KEY_MODES)
        .default('vmId')
        .describe('partition key: vmId (per-VM order), eventId, vmScaleSetName (falls back to vmId) or none'),
      maxBatch: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(100)
        .describe('records per deliver() call; each call is split into as few Event Hubs batches as fit'),
      retry: retrySchema().prefault({}).describe('bounded SDK retries inside one deliver() call'),
      customEndpointAddress: z
        .string()
        .url()
        .optional()
        .describe(
          'connect to this address instead of the namespace host (private endpoints, gateways, tests)',
        ),
    })
    .strict()
    .superRefine(checkEventHubTarget);
}

export type EventHubsSinkOptions = z.infer<ReturnType<typeof eventHubsOptionsSchema>>;

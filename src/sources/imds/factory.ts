/**
 * The `imds` source entry of the source registry: polls IMDS Scheduled Events (production). Its settings stay
 * in the config's top-level `imds` section (poll interval, timeouts, capture file); the pipeline sees only the
 * gap limit and the first-outcome wait derived from them. The client and poller load in `create`.
 */
import { z } from 'zod';
import type { BuiltSource, SourceContext, SourceFactory } from '../types.ts';

/** The `imds` section of the config (src/config/schema.ts) as this source reads it. */
export interface ImdsSettings {
  endpoint: string;
  apiVersion: string;
  instanceApiVersion: string;
  pollIntervalMs: number;
  firstRequestTimeoutMs: number;
  requestTimeoutMs: number;
  identityRefreshMs: number;
  captureFile?: string | undefined;
}

const optionsSchema = z
  .object({
    type: z.literal('imds').describe('Poll IMDS (production).'),
  })
  .strict();

/**
 * The gap limit: two polls may be missed (one poll interval each) plus one request timeout before the
 * forwarder counts the time between two observations as unwatched.
 */
export function imdsMaxGapMs(settings: Pick<ImdsSettings, 'pollIntervalMs' | 'requestTimeoutMs'>): number {
  return 2 * settings.pollIntervalMs + settings.requestTimeoutMs;
}

async function create(_options: z.infer<typeof optionsSchema>, context: SourceContext): Promise<BuiltSource> {
  const settings = context.settings.imds as ImdsSettings;
  const { ImdsClient, ImdsPoller, VmIdentityCache } = await import('./index.ts');
  const { logger } = context;
  const client = new ImdsClient({
    endpoint: settings.endpoint,
    apiVersion: settings.apiVersion,
    instanceApiVersion: settings.instanceApiVersion,
    firstRequestTimeoutMs: settings.firstRequestTimeoutMs,
    requestTimeoutMs: settings.requestTimeoutMs,
    logger: logger.child({ component: 'imds' }),
  });
  const source = new ImdsPoller({
    client,
    intervalMs: settings.pollIntervalMs,
    logger: logger.child({ component: 'poller' }),
    ...(settings.captureFile === undefined
      ? {}
      : { captureFile: settings.captureFile, identity: context.vm }),
  });
  const identity = new VmIdentityCache({
    client,
    refreshIntervalMs: settings.identityRefreshMs,
    logger: logger.child({ component: 'identity' }),
  });
  return {
    source,
    identity,
    approval: {
      approve: (eventIds, signal) => client.approve(eventIds, signal),
      minIntervalMs: settings.pollIntervalMs,
    },
    maxGapMs: imdsMaxGapMs(settings),
    firstOutcomeWaitMs: settings.pollIntervalMs,
    close: () => client.close(),
  };
}

export const imdsSourceFactory = {
  type: 'imds',
  optionsSchema,
  create,
} as const satisfies SourceFactory<typeof optionsSchema>;

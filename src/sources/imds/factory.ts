/**
 * The `imds` source entry of the source registry: polls IMDS Scheduled Events (production). Its settings stay
 * in the config's top-level `imds` section (poll interval, timeouts, capture file); the pipeline sees only the
 * gap limit, the poll interval and the first-outcome wait derived from them. The client and poller load in `create`.
 */
import { z } from 'zod';
import { type ImdsSourceSettings, imdsMaxGapMs } from '../imds-protocol/imds-settings.ts';
import type { BuiltSource, SourceContext, SourceFactory } from '../types.ts';

const optionsSchema = z
  .object({
    type: z.literal('imds').describe('Poll IMDS (production).'),
  })
  .strict();

async function create(
  _options: z.infer<typeof optionsSchema>,
  context: SourceContext<ImdsSourceSettings>,
): Promise<BuiltSource> {
  const settings = context.settings.imds;
  const [{ ImdsClient }, { ImdsPoller }, { VmIdentityCache }] = await Promise.all([
    import('./client.ts'),
    import('./poller.ts'),
    import('./identity.ts'),
  ]);
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
    pollIntervalMs: settings.pollIntervalMs,
    firstOutcomeWaitMs: settings.pollIntervalMs,
    close: () => client.close(),
  };
}

export const imdsSourceFactory = {
  type: 'imds',
  optionsSchema,
  create,
} as const satisfies SourceFactory<typeof optionsSchema, ImdsSourceSettings>;

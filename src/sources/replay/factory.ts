/**
 * The `replay` source entry of the source registry: plays a JSON-lines capture (imds.captureFile / run --record)
 * instead of polling IMDS. It is also the identity source (the identity recorded in the capture) and has no
 * approval client (nothing can be POSTed). The source loads in `create`.
 */
import { z } from 'zod';
import { type ImdsSourceSettings, imdsMaxGapMs } from '../imds-protocol/imds-settings.ts';
import type { BuiltSource, SourceContext, SourceFactory } from '../types.ts';

const { accessSync, constants } = process.getBuiltinModule('node:fs');

const optionsSchema = z
  .object({
    type: z.literal('replay').describe('Play a JSON-lines capture of documents instead of polling IMDS.'),
    file: z
      .string()
      .min(1)
      .superRefine((file, ctx) => {
        if (file === '') return; // reported by min(1)
        try {
          accessSync(file, constants.R_OK);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code ?? 'error';
          ctx.addIssue({ code: 'custom', message: `cannot read the capture file ${file}: ${code}` });
        }
      })
      .describe('The capture file (written by imds.captureFile / run --record).'),
    speed: z
      .number()
      .min(0)
      .default(1)
      .describe('Playback speed factor (2 = twice as fast as recorded, 0 = as fast as possible).'),
  })
  .strict();

async function create(
  options: z.infer<typeof optionsSchema>,
  context: SourceContext<ImdsSourceSettings>,
): Promise<BuiltSource> {
  const { ReplaySource } = await import('./source.ts');
  const replay = new ReplaySource({ file: options.file, speed: options.speed, logger: context.logger });
  // The capture was recorded with the `imds` poll settings: its gaps are measured against the same limit.
  const recorded = context.settings.imds;
  return {
    source: replay,
    identity: { current: () => replay.current(), refresh: () => replay.refresh() },
    maxGapMs: imdsMaxGapMs(recorded),
    pollIntervalMs: recorded.pollIntervalMs,
    firstOutcomeWaitMs: recorded.pollIntervalMs,
  };
}

export const replaySourceFactory = {
  type: 'replay',
  optionsSchema,
  create,
} as const satisfies SourceFactory<typeof optionsSchema, ImdsSourceSettings>;

/** The exec sink's options (its registry entry is factory.ts; layout: docs/sinks.md). */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import {
  ENV_DESCRIPTION,
  envSetSchema,
  PASS_ENV_DESCRIPTION,
  passEnvSchema,
} from '../../process/env-options.ts';

const noNul = (what: string, min = 0) =>
  z
    .string()
    .min(min)
    .refine((v) => !v.includes('\0'), { error: `${what} cannot contain a NUL character` });

export const execOptionsSchema = lazy(() =>
  z
    .object({
      command: noNul('command', 1).describe('program to run (no shell)'),
      args: z
        .array(noNul('an argument'))
        .default([])
        .describe('arguments, passed as they are (no shell expansion)'),
      timeoutMs: z
        .number()
        .int()
        .positive()
        .default(30_000)
        .describe('kill the command after this many milliseconds (counts as a retryable failure)'),
      nonZeroExit: z
        .enum(['retryable', 'permanent'])
        .default('retryable')
        .describe('what a non-zero exit means: retry later, or dead-letter the record'),
      permanentExitCodes: z
        .array(z.number().int())
        .default([])
        .describe('exit codes that always mean permanent (dead letter), whatever nonZeroExit says'),
      env: envSetSchema.describe(ENV_DESCRIPTION),
      passEnv: passEnvSchema.describe(PASS_ENV_DESCRIPTION),
      cwd: noNul('cwd').optional().describe("working directory (default: the forwarder's)"),
      maxOutputBytes: z
        .number()
        .int()
        .positive()
        .default(64 * 1024)
        .describe('stdout/stderr bytes kept for logs and dead-letter errors'),
    })
    .strict(),
);

export type ExecSinkOptions = z.infer<ReturnType<typeof execOptionsSchema>>;

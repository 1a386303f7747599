/** The exec sink's options (its registry entry is factory.ts; layout: docs/sinks.md). */
import { z } from 'zod';

export const execOptionsSchema = z
  .object({
    command: z.string().min(1).describe('program to run (no shell)'),
    args: z.array(z.string()).default([]).describe('arguments, passed as they are (no shell expansion)'),
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
    env: z
      .record(z.string(), z.string())
      .default({})
      .describe("extra environment variables, added to the forwarder's environment and the SEF_* fields"),
    cwd: z.string().optional().describe("working directory (default: the forwarder's)"),
    maxOutputBytes: z
      .number()
      .int()
      .positive()
      .default(64 * 1024)
      .describe('stdout/stderr bytes kept for logs and dead-letter errors'),
  })
  .strict();

export type ExecSinkOptions = z.infer<typeof execOptionsSchema>;

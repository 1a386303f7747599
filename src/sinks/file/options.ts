/** The file sink's options (its registry entry is factory.ts; layout: docs/sinks.md). */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';

export const fileOptionsSchema = lazy(() =>
  z
    .object({
      path: z.string().min(1).describe('file to append JSON lines to'),
      maxBytes: z
        .number()
        .int()
        .positive()
        .default(100 * 1024 * 1024)
        .describe('rotate before a write would make the file larger than this many bytes'),
      maxFiles: z.number().int().min(1).default(5).describe('rotated files kept (path.1 … path.N)'),
    })
    .strict(),
);

export type FileSinkOptions = z.infer<ReturnType<typeof fileOptionsSchema>>;

/** The stdout sink's options (its registry entry is factory.ts; layout: docs/sinks.md). */
import { z } from 'zod';

export const stdoutOptionsSchema = z.object({}).strict();

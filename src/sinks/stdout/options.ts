/** The stdout sink's options (its registry entry is factory.ts; layout: docs/sinks.md). */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';

export const stdoutOptionsSchema = lazy(() => z.object({}).strict());

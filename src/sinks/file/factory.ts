/**
 * The file sink's registry entry: type, options schema and a create() that loads the implementation (sink.ts)
 * only when a sink of this type is configured. Layout: docs/sinks.md.
 */
import type { SinkFactory } from '../types.ts';
import { fileOptionsSchema } from './options.ts';

export const fileSinkFactory: SinkFactory<ReturnType<typeof fileOptionsSchema>> = {
  type: 'file',
  description:
    'Append each record as one JSON line to a file (fsync before acknowledging, size-based rotation)',
  get optionsSchema() {
    return fileOptionsSchema();
  },
  heartbeats: { default: false },
  async create(name, options) {
    const { createFileSink } = await import('./sink.ts');
    return createFileSink(name, options);
  },
};

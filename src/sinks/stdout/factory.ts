/**
 * The stdout sink's registry entry: type, options schema and a create() that loads the implementation (sink.ts)
 * only when a sink of this type is configured. Layout: docs/sinks.md.
 */
import type { SinkFactory } from '../types.ts';
import { stdoutOptionsSchema } from './options.ts';

export const stdoutSinkFactory: SinkFactory<ReturnType<typeof stdoutOptionsSchema>> = {
  type: 'stdout',
  description: 'Print each record as one JSON line on standard output',
  get optionsSchema() {
    return stdoutOptionsSchema();
  },
  heartbeats: { default: false },
  async create(name) {
    const { createStdoutSink } = await import('./sink.ts');
    return createStdoutSink(name);
  },
};

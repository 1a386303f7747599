/**
 * The exec sink's registry entry: type, options schema and a create() that loads the implementation (sink.ts)
 * only when a sink of this type is configured. Layout: docs/sinks.md.
 */
import { commandNotFoundReason } from '../../platform.ts';
import type { SinkFactory } from '../types.ts';
import { execOptionsSchema } from './options.ts';

export const execSinkFactory: SinkFactory<ReturnType<typeof execOptionsSchema>> = {
  type: 'exec',
  description: 'Run a command per record (record JSON on stdin, SEF_* env vars); exit 0 = delivered',
  get optionsSchema() {
    return execOptionsSchema();
  },
  async create(name, options) {
    const { createExecSink } = await import('./sink.ts');
    return createExecSink(name, options);
  },
  warnings(name, options) {
    const reason = commandNotFoundReason(
      options.command,
      options.cwd === undefined ? {} : { cwd: options.cwd },
    );
    if (reason === undefined) return [];
    return [
      `sink ${name} (exec): ${reason}; every delivery fails and is retried until it is installed. Checked here ` +
        'only: run `config validate` on the VM that runs the forwarder.',
    ];
  },
};

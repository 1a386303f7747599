/** The exec sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only. */
export { execSinkFactory } from './factory.ts';
export { type ExecSinkOptions, execOptionsSchema } from './options.ts';
export { createExecSink, recordEnvironment } from './sink.ts';

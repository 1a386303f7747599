/** The stdout sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only. */
export { stdoutSinkFactory } from './factory.ts';
export { stdoutOptionsSchema } from './options.ts';
export { createStdoutSink } from './sink.ts';

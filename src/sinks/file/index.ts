/** The file sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only. */
export { fileSinkFactory } from './factory.ts';
export { type FileSinkOptions, fileOptionsSchema } from './options.ts';
export { createFileSink } from './sink.ts';

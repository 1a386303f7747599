/**
 * The OpenTelemetry sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation (sink.ts) and with it the OpenTelemetry SDK.
 */
export { otelSinkFactory } from './factory.ts';
export { OtelConfigError, type OtelOptions, otelOptionsSchema, resolveOtlpSettings } from './options.ts';
export {
  CLOSE_GRACE_MS,
  createOtelSink,
  createOtlpLogExporter,
  OtelSink,
  type OtelSinkOptions,
} from './sink.ts';

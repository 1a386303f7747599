/**
 * The OpenTelemetry sink's registry entry. Light on purpose: the options schema needs only zod; the sink loads
 * in create(), i.e. only when a sink of this type is configured, and the OpenTelemetry SDK and exporters at its
 * first delivery.
 */
import { tlsWarnings } from '../http/tls.ts';
import type { SinkFactory } from '../types.ts';
import { otelOptionsSchema, resolveOtlpSettings } from './options.ts';

export const otelSinkFactory: SinkFactory<ReturnType<typeof otelOptionsSchema>> = {
  type: 'otel',
  description: 'OpenTelemetry logs over OTLP (http/protobuf, http/json or grpc); one LogRecord per record',
  get optionsSchema() {
    return otelOptionsSchema();
  },
  async create(name, options, context) {
    const { createOtelSink } = await import('./sink.ts');
    return createOtelSink(name, options, context);
  },
  warnings(name, options) {
    let endpoint: string | undefined;
    try {
      endpoint = resolveOtlpSettings(options).endpoint;
    } catch {
      endpoint = undefined; // an OTEL_EXPORTER_OTLP_* problem: already a validation error
    }
    return tlsWarnings(name, options.tls, endpoint);
  },
};

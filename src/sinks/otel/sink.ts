/**
 * OpenTelemetry logs sink: one OTLP LogRecord per lifecycle record, exported over http/protobuf (default),
 * http/json or gRPC. Acknowledgement is exact: deliver() calls the OTLP exporter's export() itself with the
 * batch it was handed (no BatchLogRecordProcessor, whose queue drops and swallows errors) and resolves only
 * on ExportResultCode.SUCCESS; any failure rejects with a DeliveryError (see errors.ts).
 */
import type { HrTime } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { LifecycleRecord } from '../../domain/index.ts';
import type { Env } from '../../secret.ts';
import { readVersion } from '../../version.ts';
import { abortedError, closedError } from '../delivery-errors.ts';
import { type TlsOptions, tlsConnectOptions, trustedCaCertificates } from '../http/tls.ts';
import { proxyFor } from '../proxy.ts';
import type { Sink, SinkContext } from '../types.ts';
import { exportFailureToDeliveryError } from './errors.ts';
import {
  DEFAULT_SERVICE_NAME,
  resourceAttributesFor,
  resourceVmFor,
  SCOPE_NAME,
  toLogRecordFields,
} from './mapping.ts';
import { type OtelOptions, type OtlpSettings, resolveOtlpSettings, safeEndpoint } from './options.ts';

/** Longest time close() waits for in-flight exports. */
export const CLOSE_GRACE_MS = 1000;

/** Build the OTLP exporter for the resolved settings (gRPC is loaded only when used). */
export async function createOtlpLogExporter(settings: OtlpSettings): Promise<LogRecordExporter> {
  const compression = settings.compression as never; // the exporters' CompressionAlgorithm enum has these values
  if (settings.protocol === 'grpc') {
    const [{ OTLPLogExporter }, grpc] = await Promise.all([
      import('@opentelemetry/exporter-logs-otlp-grpc'),
      import('@grpc/grpc-js'),
    ]);
    const metadata = new grpc.Metadata();
    for (const [key, secret] of Object.entries(settings.headers)) metadata.set(key, secret.reveal());
    // Only for https:// (an http:// endpoint is plaintext gRPC; tlsWarnings says the tls options do nothing).
    const credentials =
      settings.tls !== undefined && new URL(settings.endpoint).protocol === 'https:'
        ? grpcTlsCredentials(grpc.credentials, settings.tls)
        : undefined;
    return new OTLPLogExporter({
      url: settings.endpoint,
      metadata,
      timeoutMillis: settings.timeoutMs,
      compression,
      ...(credentials === undefined ? {} : { credentials }),
    });
  }
  const headers = async (): Promise<Record<string, string>> =>
    Object.fromEntries(Object.entries(settings.headers).map(([k, s]) => [k, s.reveal()]));
  // The proxy rule every HTTP sink shares (src/sinks/proxy.ts), applied through Node's built-in agent proxy
  // support; a direct agent has no proxy configuration at all (proxyEnv undefined, as for IMDS).
  const proxy = proxyFor(new URL(settings.endpoint));
  // The TLS options (src/sinks/http/tls.ts) go to the https.Agent: they apply to the collector's connection,
  // inside the proxy's tunnel when there is one (the exporter drops ca/cert/key for an http:// endpoint).
  const httpAgentOptions = {
    keepAlive: true,
    proxyEnv: proxy === undefined ? undefined : { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, NO_PROXY: '' },
    ...tlsConnectOptions(settings.tls),
  };
  const config = {
    url: settings.endpoint,
    headers,
    timeoutMillis: settings.timeoutMs,
    compression,
    httpAgentOptions,
  };
  if (settings.protocol === 'http/json') {
    const { OTLPLogExporter } = await import('@opentelemetry/exporter-logs-otlp-http');
    return new OTLPLogExporter(config);
  }
  const { OTLPLogExporter } = await import('@opentelemetry/exporter-logs-otlp-proto');
  return new OTLPLogExporter(config);
}

/**
 * gRPC channel credentials for the TLS options: the CA bundle (default roots plus tls.ca), the client certificate
 * and key, and the server name — verified through checkServerIdentity, because the OTLP gRPC exporter takes no
 * channel options (so no grpc.ssl_target_name_override): the SNI sent stays the endpoint's host.
 */
export function grpcTlsCredentials(
  credentials: typeof import('@grpc/grpc-js').credentials,
  tls: TlsOptions,
): import('@grpc/grpc-js').ChannelCredentials {
  const { checkServerIdentity } = process.getBuiltinModule('node:tls');
  const rootCerts = tls.ca === undefined ? null : Buffer.from(trustedCaCertificates(tls.ca).join('\n'));
  const serverName = tls.serverName;
  return credentials.createSsl(
    rootCerts,
    tls.key === undefined ? null : Buffer.from(tls.key.reveal()),
    tls.cert === undefined ? null : Buffer.from(tls.cert.reveal()),
    {
      ...(serverName === undefined
        ? {}
        : { checkServerIdentity: (_host: string, cert) => checkServerIdentity(serverName, cert) }),
      ...(tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
    },
  );
}

/**
 * What a delivery needs from the OpenTelemetry SDK: the exporter and the record-building helpers. Loaded at the
 * first delivery, not when the sink is created (the SDK packages are megabytes of heap an idle forwarder would
 * otherwise carry).
 */
export interface OtelRuntime {
  exporter: LogRecordExporter;
  millisToHrTime(ms: number): HrTime;
  resourceFromAttributes(attributes: Record<string, string>): Resource;
  /** ExportResultCode.SUCCESS */
  SUCCESS: ExportResult['code'];
}

async function loadOtelRuntime(settings: OtlpSettings): Promise<OtelRuntime> {
  const [exporter, core, resources] = await Promise.all([
    createOtlpLogExporter(settings),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  return {
    exporter,
    millisToHrTime: core.millisToHrTime,
    resourceFromAttributes: resources.resourceFromAttributes,
    SUCCESS: core.ExportResultCode.SUCCESS,
  };
}

export interface OtelSinkOptions {
  name: string;
  settings: OtlpSettings;
  serviceName: string;
  serviceVersion: string;
  context: SinkContext;
}

/** The sink. Exposed for tests and for callers that already hold resolved settings. */
export class OtelSink implements Sink {
  readonly name: string;
  readonly maxBatch: number;
  readonly #settings: OtlpSettings;
  readonly #service: { name: string; version: string };
  readonly #context: SinkContext;
  readonly #scope: { name: string; version: string };
  /** Resources by attribute set: the OTLP encoder groups records by Resource object identity. */
  readonly #resources = new Map<string, Resource>();
  /** The exporter and the OpenTelemetry SDK parts, loaded at the first delivery (see OtelRuntime). */
  #runtime: Promise<OtelRuntime> | undefined;
  #closed = false;

  constructor(options: OtelSinkOptions) {
    this.name = options.name;
    this.#settings = options.settings;
    this.maxBatch = options.settings.maxBatch;
    this.#service = { name: options.serviceName, version: options.serviceVersion };
    this.#context = options.context;
    this.#scope = { name: SCOPE_NAME, version: options.serviceVersion };
  }

  /** The ReadableLogRecord the exporter receives for one lifecycle record. */
  toReadableLogRecord(record: LifecycleRecord, runtime: OtelRuntime): ReadableLogRecord {
    const fields = toLogRecordFields(record);
    const time: HrTime = runtime.millisToHrTime(fields.timestampMs);
    return {
      hrTime: time,
      hrTimeObserved: time,
      eventName: fields.eventName,
      severityNumber: fields.severityNumber,
      severityText: fields.severityText,
      body: fields.body,
      attributes: fields.attributes,
      droppedAttributesCount: 0,
      resource: this.#resourceFor(record, runtime),
      instrumentationScope: this.#scope,
    };
  }

  #resourceFor(record: LifecycleRecord, runtime: OtelRuntime): Resource {
    const attributes = resourceAttributesFor(resourceVmFor(record, this.#context.vm()), this.#service);
    const key = JSON.stringify(attributes);
    let resource = this.#resources.get(key);
    if (!resource) {
      if (this.#resources.size > 16) this.#resources.clear();
      resource = runtime.resourceFromAttributes(attributes);
      this.#resources.set(key, resource);
    }
    return resource;
  }

  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    if (batch.length === 0) return;
    if (this.#closed) {
      throw closedError(`otel sink ${this.name} is closed`);
    }
    if (signal.aborted) throw abortedError(`otel sink ${this.name}: delivery aborted`);
    if (this.#runtime === undefined) {
      const loading = loadOtelRuntime(this.#settings);
      // A failed load (an exporter that cannot be built) is retried at the next delivery.
      loading.catch(() => {
        if (this.#runtime === loading) this.#runtime = undefined;
      });
      this.#runtime = loading;
    }
    const runtime = await this.#runtime;
    const logs = batch.map((r) => this.toReadableLogRecord(r, runtime));
    const { exporter } = runtime;
    const endpoint = safeEndpoint(this.#settings.endpoint);
    const result = await new Promise<ExportResult | 'aborted'>((resolve) => {
      const onAbort = (): void => resolve('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      exporter.export(logs, (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      });
    });
    if (result === 'aborted') {
      throw abortedError(`OTLP export to ${endpoint} aborted (shutdown); the records stay pending`);
    }
    if (result.code === runtime.SUCCESS) return;
    throw exportFailureToDeliveryError(result.error, this.#settings.protocol, endpoint, batch.length);
  }

  /**
   * Shut the exporter down. Waits at most CLOSE_GRACE_MS for in-flight exports: their records were not
   * acknowledged, so they stay pending in the outbox and are re-sent after a restart.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const runtime = this.#runtime;
    this.#runtime = undefined;
    if (!runtime) return;
    const shutdown = runtime.then((r) => r.exporter.shutdown());
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_GRACE_MS);
      timer.unref();
    });
    await Promise.race([shutdown.catch(() => undefined), grace]);
    clearTimeout(timer);
  }
}

/** Create the sink from validated options; `env` is injectable for tests. */
export function createOtelSink(
  name: string,
  options: OtelOptions,
  context: SinkContext,
  env: Env = process.env,
): OtelSink {
  const settings = resolveOtlpSettings(options, env);
  const serviceName = options.serviceName ?? (env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME);
  context.logger.info(
    {
      protocol: settings.protocol,
      endpoint: safeEndpoint(settings.endpoint),
      endpointFrom: settings.endpointOrigin,
      headers: Object.keys(settings.headers),
      timeoutMs: settings.timeoutMs,
    },
    'otel sink configured',
  );
  return new OtelSink({ name, settings, serviceName, serviceVersion: readVersion(), context });
}

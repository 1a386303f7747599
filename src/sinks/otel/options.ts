/**
 * Options of the `otel` sink and their resolution against the standard OTEL_EXPORTER_OTLP_* environment
 * variables. Sink options win over `OTEL_EXPORTER_OTLP_LOGS_*`, which win over `OTEL_EXPORTER_OTLP_*`,
 * which win over the OTLP defaults. Header values are secrets (src/secret.ts).
 */
import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import { lazy } from '../../lazy.ts';
import { registerSecret, registerUrlCredentials } from '../../redact.ts';
import { type Env, type Secret, secretSchema } from '../../secret.ts';
import { type TlsOptions, tlsOptionsSchema } from '../http/tls.ts';

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** Largest batch handed to one export() call by default. */
export const DEFAULT_MAX_BATCH = 100;

/** Options of a `type: otel` sink entry (next to the common keys name/type/filter/delivery). All optional. */
export const otelOptionsSchema = lazy(() =>
  z
    .object({
      protocol: z
        .enum(OTLP_PROTOCOLS)
        .optional()
        .describe('OTLP transport; default OTEL_EXPORTER_OTLP_[LOGS_]PROTOCOL, else http/protobuf.'),
      endpoint: z
        .url({ protocol: /^https?$/, error: 'endpoint must be an http:// or https:// URL' })
        .optional()
        .describe(
          'Collector URL. HTTP: a base URL without path gets /v1/logs appended, a URL with a path is used as-is; gRPC: http(s)://host:port. Default from OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT.',
        ),
      headers: z
        .record(z.string().min(1), secretSchema())
        .optional()
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the config syntax for an env secret
        .describe('Extra request headers / gRPC metadata; values are secrets ("${ENV}", {env}, {file}).'),
      timeoutMs: z
        .number()
        .int()
        .positive()
        .optional()
        .describe(
          "Export timeout in ms, including the exporter's own retries; default OTEL_EXPORTER_OTLP_[LOGS_]TIMEOUT or 10000.",
        ),
      compression: z.enum(['gzip', 'none']).optional().describe('Request compression; default none.'),
      serviceName: z
        .string()
        .min(1)
        .optional()
        .describe(
          'service.name resource attribute; default OTEL_SERVICE_NAME or scheduled-events-forwarder.',
        ),
      maxBatch: z
        .number()
        .int()
        .min(1)
        .max(512)
        .optional()
        .describe('Records per export request; default 100.'),
      tls: tlsOptionsSchema().optional(),
    })
    .strict()
    // The OTEL_EXPORTER_OTLP_* variables the options leave to the environment are checked with the file, so
    // that `config validate` refuses what `run` would (resolveOtlpSettings runs again when the sink is built).
    .superRefine((options, ctx) => {
      try {
        resolveOtlpSettings(options);
      } catch (error) {
        if (!(error instanceof OtelConfigError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.message });
      }
    }),
);

export type OtelOptions = z.infer<ReturnType<typeof otelOptionsSchema>>;

/** Fully resolved exporter settings. */
export interface OtlpSettings {
  protocol: OtlpProtocol;
  /** Full URL for HTTP (…/v1/logs); http(s)://host:port for gRPC. */
  endpoint: string;
  /** Where the endpoint came from, for logs ("option", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "default"). */
  endpointOrigin: string;
  headers: Record<string, Secret>;
  timeoutMs: number;
  compression: 'gzip' | 'none';
  maxBatch: number;
  /** TLS trust for an https:// endpoint (src/sinks/http/tls.ts); undefined: the defaults. */
  tls: TlsOptions | undefined;
}

/** An OTEL_EXPORTER_OTLP_* value (or option) the exporter cannot use: a ConfigError (the CLI exits with code 2). */
export class OtelConfigError extends ConfigError {
  constructor(message: string) {
    super(message, []);
    this.name = 'OtelConfigError';
  }
}

function envValue(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

function fromEnv(env: Env, suffix: string): { value: string; name: string } | undefined {
  for (const name of [`OTEL_EXPORTER_OTLP_LOGS_${suffix}`, `OTEL_EXPORTER_OTLP_${suffix}`]) {
    const value = envValue(env, name);
    if (value !== undefined) return { value, name };
  }
  return undefined;
}

/** Append `v1/logs` to an HTTP base URL that has no path of its own. */
export function httpLogsUrl(base: string): string {
  const url = new URL(base);
  if (url.pathname === '' || url.pathname === '/') url.pathname = '/v1/logs';
  return url.toString();
}

/**
 * Resolve the exporter settings from the sink options and the environment. Throws OtelConfigError naming
 * the variable when an environment value is invalid.
 */
export function resolveOtlpSettings(options: OtelOptions, env: Env = process.env): OtlpSettings {
  registerEnvCredentials(env);
  const protocolEnv = fromEnv(env, 'PROTOCOL');
  let protocol: OtlpProtocol = 'http/protobuf';
  if (options.protocol) protocol = options.protocol;
  else if (protocolEnv) {
    if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocolEnv.value)) {
      throw new OtelConfigError(
        `${protocolEnv.name}="${protocolEnv.value}" is not one of ${OTLP_PROTOCOLS.join(', ')}`,
      );
    }
    protocol = protocolEnv.value as OtlpProtocol;
  }

  let endpoint: string;
  let endpointOrigin: string;
  const specific = envValue(env, 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT');
  const generic = envValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  try {
    if (options.endpoint) {
      endpointOrigin = 'option';
      endpoint = protocol === 'grpc' ? options.endpoint : httpLogsUrl(options.endpoint);
    } else if (specific) {
      endpointOrigin = 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT';
      endpoint = new URL(specific).toString(); // used as-is
    } else if (generic) {
      endpointOrigin = 'OTEL_EXPORTER_OTLP_ENDPOINT';
      endpoint = protocol === 'grpc' ? generic : `${generic.replace(/\/+$/, '')}/v1/logs`; // spec: always append for HTTP
      new URL(endpoint);
    } else {
      endpointOrigin = 'default';
      endpoint = protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318/v1/logs';
    }
  } catch {
    throw new OtelConfigError(
      `OTLP logs endpoint from ${endpointOriginName(options, specific)} is not a valid URL`,
    );
  }

  let timeoutMs = options.timeoutMs;
  if (timeoutMs === undefined) {
    const t = fromEnv(env, 'TIMEOUT');
    if (t) {
      const n = Number(t.value);
      if (!Number.isFinite(n) || n <= 0)
        throw new OtelConfigError(`${t.name}="${t.value}" is not a positive number of ms`);
      timeoutMs = n;
    }
  }

  let compression = options.compression;
  if (compression === undefined) {
    const c = fromEnv(env, 'COMPRESSION');
    if (c) {
      if (c.value !== 'gzip' && c.value !== 'none')
        throw new OtelConfigError(`${c.name}="${c.value}" is not gzip or none`);
      compression = c.value;
    }
  }

  return {
    protocol,
    endpoint,
    endpointOrigin,
    headers: options.headers ?? {},
    timeoutMs: timeoutMs ?? 10_000,
    compression: compression ?? 'none',
    maxBatch: options.maxBatch ?? DEFAULT_MAX_BATCH,
    tls: options.tls,
  };
}

/**
 * The OTLP exporters read OTEL_EXPORTER_OTLP_[LOGS_]HEADERS themselves (W3C baggage format, k=v,k2=v2) and
 * the endpoint variables may carry userinfo: make those values known to the redactor as well.
 */
function registerEnvCredentials(env: Env): void {
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_LOGS_HEADERS']) {
    for (const pair of (envValue(env, name) ?? '').split(',')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const value = pair.slice(eq + 1).trim();
      registerSecret(value);
      try {
        registerSecret(decodeURIComponent(value));
      } catch {
        // not percent-encoded
      }
    }
  }
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT']) {
    const value = envValue(env, name);
    if (value) registerUrlCredentials(value);
  }
}

function endpointOriginName(options: OtelOptions, specific: string | undefined): string {
  if (options.endpoint) return 'the sink option "endpoint"';
  return specific ? 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
}

/** The endpoint without credentials or query, safe for logs and error messages. */
export function safeEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '[invalid url]';
  }
}

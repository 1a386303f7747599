/**
 * Maps a failed OTLP export (ExportResult.error from the OTLP exporters) to a DeliveryError.
 *
 * HTTP exporters report: OTLPExporterError with `code` = HTTP status for non-retryable statuses;
 * "Export failed with retryable status" after 429/502/503/504 exhausted the in-exporter retries;
 * "Request timed out"; or the socket error (with a string `code` such as ECONNREFUSED: code `network`).
 * The gRPC exporter reports a grpc-js ServiceError whose numeric `code` is the gRPC status. A TLS certificate
 * problem (src/sinks/http/classify.ts, classifyTlsFailure) is the permanent `tls` for every protocol.
 */
import { httpStatusError, isSocketErrorCode, networkError, timeoutError } from '../delivery-errors.ts';
import { classifyTlsFailure } from '../http/classify.ts';
import { isRetryableHttpStatus } from '../http-status.ts';
import { DeliveryError } from '../types.ts';
import type { OtlpProtocol } from './options.ts';

/** gRPC status codes that mean "the request itself is wrong": retrying cannot help (OTLP spec). */
const PERMANENT_GRPC_CODES = new Map<number, string>([
  [3, 'INVALID_ARGUMENT'],
  [5, 'NOT_FOUND'],
  [6, 'ALREADY_EXISTS'],
  [7, 'PERMISSION_DENIED'],
  [9, 'FAILED_PRECONDITION'],
  [12, 'UNIMPLEMENTED'],
  [16, 'UNAUTHENTICATED'],
]);
const GRPC_CODE_NAMES = new Map<number, string>([
  [1, 'CANCELLED'],
  [2, 'UNKNOWN'],
  [4, 'DEADLINE_EXCEEDED'],
  [8, 'RESOURCE_EXHAUSTED'],
  [10, 'ABORTED'],
  [11, 'OUT_OF_RANGE'],
  [13, 'INTERNAL'],
  [14, 'UNAVAILABLE'],
  [15, 'DATA_LOSS'],
  ...PERMANENT_GRPC_CODES,
]);

/** A short, secret-free description of what the collector/network said. */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const msg = error.message.split('\n')[0]?.slice(0, 200) ?? '';
    return msg || error.name;
  }
  return String(error).slice(0, 200);
}

/**
 * Classify an export failure. HTTP: 4xx other than 408/425/429 (src/sinks/http-status.ts) → permanent (dead letter), everything else
 * (5xx, retryable statuses, timeouts, network errors, unknown) → retryable. gRPC: INVALID_ARGUMENT,
 * NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED, FAILED_PRECONDITION, UNIMPLEMENTED, UNAUTHENTICATED →
 * permanent; other statuses → retryable.
 */
export function exportFailureToDeliveryError(
  error: unknown,
  protocol: OtlpProtocol,
  endpoint: string,
  count: number,
): DeliveryError {
  const what = `OTLP ${protocol} export of ${count} record(s) to ${endpoint} failed`;
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = describe(error);

  // A TLS certificate problem (the gRPC exporter reports it as UNAVAILABLE with OpenSSL's wording): permanent.
  const tls = classifyTlsFailure(error, what);
  if (tls !== undefined) return tls;

  if (protocol === 'grpc' && typeof code === 'number') {
    const name = GRPC_CODE_NAMES.get(code) ?? `code-${code}`;
    const permanent = PERMANENT_GRPC_CODES.has(code);
    return new DeliveryError(`${what}: gRPC ${name}: ${message}`, {
      retryable: !permanent,
      code: `grpc-${name}`,
      cause: error,
    });
  }
  if (typeof code === 'number') {
    const permanent = code >= 400 && code < 500 && !isRetryableHttpStatus(code);
    return httpStatusError(`${what}: HTTP ${code} ${message}`.trim(), code, {
      retryable: !permanent,
      cause: error,
    });
  }
  if (isSocketErrorCode(code)) {
    return networkError(`${what}: network error ${code}`, { cause: error });
  }
  if (/timed out|timeout/i.test(message)) {
    return timeoutError(`${what}: timed out`, { cause: error });
  }
  if (/retryable status/i.test(message)) {
    return new DeliveryError(`${what}: collector kept answering a retryable status (429/502/503/504)`, {
      retryable: true,
      code: 'otlp-retryable-status',
      cause: error,
    });
  }
  return new DeliveryError(`${what}: ${message}`, {
    retryable: true,
    code: 'otlp-export-failed',
    cause: error,
  });
}

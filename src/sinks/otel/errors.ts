/**
 * Maps a failed OTLP export (ExportResult.error from the OTLP exporters) to a DeliveryError.
 *
 * HTTP exporters report: OTLPExporterError with `code` = HTTP status for non-retryable statuses;
 * "Export failed with retryable status" after 429/502/503/504 exhausted the in-exporter retries;
 * "Request timed out"; or the socket error (with a string `code` such as ECONNREFUSED: code `network`).
 * The gRPC exporter reports a grpc-js ServiceError whose numeric `code` is the gRPC status. A TLS certificate
 * problem (src/sinks/http/classify.ts, classifyTlsFailure) is the permanent `tls` for every protocol.
 */

import { errorMessage } from '../../errors.ts';
import { httpStatusError, isSocketErrorCode, networkError, timeoutError } from '../delivery-errors.ts';
import { classifyNameNotResolved, classifyTlsFailure } from '../http/classify.ts';
import { httpFailureScope, isRetryableHttpStatus } from '../http-status.ts';
import { DeliveryError, type FailureScope } from '../types.ts';
import type { OtlpProtocol } from './options.ts';

/**
 * gRPC status codes that retrying cannot help (OTLP spec), and what they refuse: the request (its records) or
 * every request (the collector's credentials, authorization, or a collector without the logs service).
 */
const PERMANENT_GRPC_CODES = new Map<number, string>([
  [3, 'INVALID_ARGUMENT'],
  [5, 'NOT_FOUND'],
  [6, 'ALREADY_EXISTS'],
  [7, 'PERMISSION_DENIED'],
  [9, 'FAILED_PRECONDITION'],
  [12, 'UNIMPLEMENTED'],
  [16, 'UNAUTHENTICATED'],
]);
const DESTINATION_GRPC_FIXES = new Map<number, string>([
  [5, 'the collector has no such service or endpoint; fix: check endpoint (host, port, path)'],
  [7, 'the collector refuses this client; fix: check the credentials in headers and what they may write'],
  [
    12,
    'the collector does not take OTLP logs; fix: enable a logs pipeline with an OTLP receiver, or point endpoint at one',
  ],
  [16, 'the collector refused the credentials; fix: check the headers the sink sends (a rotated token)'],
]);
/** What an OTLP/HTTP destination status means, and the fix. */
const DESTINATION_HTTP_FIXES = new Map<number, string>([
  [401, 'the collector refused the credentials; fix: check the headers the sink sends (a rotated token)'],
  [403, 'the collector refuses this client; fix: check the credentials in headers and what they may write'],
  [404, 'no OTLP logs endpoint at this URL; fix: check endpoint (an OTLP/HTTP logs URL ends in /v1/logs)'],
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
  return errorMessage(error).slice(0, 200);
}

/** " (permanent for this record)" or " (permanent for the destination: <fix>)"; nothing when retryable. */
function permanentNote(permanent: boolean, destinationFix: string | undefined): string {
  if (!permanent) return '';
  return destinationFix === undefined
    ? ' (permanent for this record)'
    : ` (permanent for the destination: ${destinationFix})`;
}

/**
 * Classify an export failure. HTTP: 4xx other than 408/425/429 (src/sinks/http-status.ts) → permanent, for the
 * destination (401, 403, 404, …: the sink pauses) or the records (400, 413, …: dead letter); everything else (5xx,
 * retryable statuses, timeouts, network errors, unknown) → retryable. gRPC: UNAUTHENTICATED, PERMISSION_DENIED,
 * NOT_FOUND, UNIMPLEMENTED → permanent for the destination; INVALID_ARGUMENT, ALREADY_EXISTS,
 * FAILED_PRECONDITION → permanent for the records; other statuses → retryable. TLS trust and a host name that
 * does not resolve → permanent for the destination.
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

  // A TLS certificate problem (the gRPC exporter reports it as UNAVAILABLE with OpenSSL's wording), or a host
  // name that does not resolve: the destination's, so the sink pauses.
  const refused = classifyTlsFailure(error, what) ?? classifyNameNotResolved(error, what);
  if (refused !== undefined) return refused;

  if (protocol === 'grpc' && typeof code === 'number') {
    const name = GRPC_CODE_NAMES.get(code) ?? `code-${code}`;
    const permanent = PERMANENT_GRPC_CODES.has(code);
    const fix = DESTINATION_GRPC_FIXES.get(code);
    const scope: FailureScope = fix === undefined ? 'record' : 'destination';
    return new DeliveryError(`${what}: gRPC ${name}: ${message}${permanentNote(permanent, fix)}`, {
      retryable: !permanent,
      ...(permanent ? { scope } : {}),
      code: `grpc-${name}`,
      cause: error,
    });
  }
  if (typeof code === 'number') {
    const permanent = code >= 400 && code < 500 && !isRetryableHttpStatus(code);
    const scope = httpFailureScope(code);
    const fix =
      scope === 'destination'
        ? (DESTINATION_HTTP_FIXES.get(code) ?? 'the collector refuses every request; fix: check endpoint')
        : undefined;
    return httpStatusError(`${what}: HTTP ${code} ${message}`.trim() + permanentNote(permanent, fix), code, {
      retryable: !permanent,
      scope,
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

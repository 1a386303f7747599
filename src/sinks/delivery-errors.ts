/**
 * The one vocabulary of delivery error codes (DeliveryError.code): the list, and a constructor for each
 * shared code. Every sink maps its failures through these; the sink compliance suite checks that every code a
 * sink produces is on the list, and docs/sinks.md publishes it. Codes are low-cardinality: they label metrics
 * (sef_delivery_failures_total) and prefix dead-letter rows ("http-503: …").
 */
import { DeliveryError, type FailureScope } from './types.ts';

/** Codes with a fixed spelling, and what each means. */
export const DELIVERY_ERROR_CODES = {
  aborted: 'the delivery signal was aborted (shutdown or the engine timeout); retryable',
  closed: 'the sink was closed; retryable',
  timeout: 'no answer within the timeout (HTTP, OTLP, a command); retryable',
  network: 'no response: a connection/socket error (ECONNREFUSED, ECONNRESET, …); retryable',
  tls: "TLS: the server's certificate failed verification (untrusted CA, wrong name, expired) or the server refused the client certificate with a TLS alert; permanent for the destination: the sink pauses (fix tls.ca / tls.serverName / tls.cert)",
  'name-not-resolved':
    "the destination's host name does not resolve (DNS: no such name); permanent for the destination: the sink pauses (fix the host name or its DNS record)",
  'payload-too-large': 'the record cannot fit in one message/request (failedIndex names it); permanent',
  'invalid-input':
    'the record can never be handed to the destination (e.g. a command cannot start with it); permanent',
  'template-invalid-json': 'the configured template did not render to a JSON object; permanent',
  'exec-start-failed':
    'the command could not be started (not found, not executable, its cwd missing); permanent for the destination: the sink pauses (install or fix the command)',
  'exec-start-transient':
    'the command could not be started for lack of resources (EAGAIN, EMFILE, ENOMEM); retryable',
  'exec-signal': 'the command was killed by a signal',
  'stdout-write': 'writing to standard output failed (e.g. the reader went away); retryable',
  'otlp-retryable-status': 'the OTLP collector kept answering 429/502/503/504; retryable',
  'otlp-export-failed': 'an OTLP export failed for another reason; retryable',
  unknown: 'an SDK error without a code; retryable',
  CredentialUnavailable: 'Azure identity: no credential available yet; retryable',
  AuthenticationFailed: 'Azure identity: the token request failed; retryable',
  error:
    'set by the delivery engine when a sink rejects with something other than a DeliveryError; retryable',
} as const;

export type FixedDeliveryErrorCode = keyof typeof DELIVERY_ERROR_CODES;

/** Code families: a fixed prefix plus a variable part, and what each means. */
export const DELIVERY_ERROR_CODE_FAMILIES = [
  { form: 'http-<status>', pattern: /^http-\d{3}$/, meaning: 'the HTTP status a server answered' },
  {
    form: 'grpc-<STATUS>',
    pattern: /^grpc-(?:[A-Z_]+|code-\d+)$/,
    meaning: 'the gRPC status an OTLP collector answered',
  },
  { form: 'exec-exit-<n>', pattern: /^exec-exit-\d+$/, meaning: 'the exit code of an exec sink command' },
  {
    form: 'file-<errno>',
    pattern: /^file-(?:E[A-Z0-9_]+|error)$/,
    meaning: 'the errno of a failed file sink write',
  },
  {
    form: '<EventHubsCode>',
    pattern: /^[A-Z][A-Za-z]+$/,
    meaning:
      'an Event Hubs / AMQP SDK error code without its "Error" suffix (ServerBusy, MessagingEntityNotFound, …)',
  },
] as const;

/** True when `code` is on the list (a fixed code or a member of a family). */
export function isDeliveryErrorCode(code: string): boolean {
  return (
    Object.hasOwn(DELIVERY_ERROR_CODES, code) ||
    DELIVERY_ERROR_CODE_FAMILIES.some((f) => f.pattern.test(code))
  );
}

interface Extra {
  cause?: unknown;
}

/** The delivery signal was aborted: retryable (the rows stay pending). */
export function abortedError(message: string, extra: Extra = {}): DeliveryError {
  return new DeliveryError(message, { retryable: true, code: 'aborted', ...extra });
}

/** The sink was closed: retryable. */
export function closedError(message: string): DeliveryError {
  return new DeliveryError(message, { retryable: true, code: 'closed' });
}

/** No answer within the timeout: retryable. */
export function timeoutError(message: string, extra: Extra = {}): DeliveryError {
  return new DeliveryError(message, { retryable: true, code: 'timeout', ...extra });
}

/** A Node.js socket error code (ECONNREFUSED, ECONNRESET, ETIMEDOUT, …): maps to `network`. */
export function isSocketErrorCode(code: unknown): code is string {
  return typeof code === 'string' && /^E[A-Z_]+$/.test(code);
}

/** No response at all (connection or socket error): retryable. */
export function networkError(message: string, extra: Extra = {}): DeliveryError {
  return new DeliveryError(message, { retryable: true, code: 'network', ...extra });
}

/**
 * The destination refuses every record until it or its configuration is fixed (credentials, authorization, a
 * missing endpoint or stream, TLS trust, a name that does not resolve): permanent for the destination, so the
 * engine pauses the sink and keeps the records pending. `message` names the cause and its fix; `failedIndex`
 * (for a batch sent in parts) the first record not delivered.
 */
export function destinationError(
  message: string,
  code: string,
  extra: { failedIndex?: number | undefined; cause?: unknown } = {},
): DeliveryError {
  const { failedIndex, cause } = extra;
  return new DeliveryError(message, {
    retryable: false,
    scope: 'destination',
    code,
    ...(failedIndex === undefined ? {} : { failedIndex }),
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * A TLS certificate problem (the server's certificate failed verification, or the server refused the client
 * certificate): a configuration problem of the destination that retrying cannot fix, so the sink pauses.
 */
export function tlsError(message: string, extra: Extra = {}): DeliveryError {
  return destinationError(message, 'tls', extra);
}

/** The destination's host name does not exist (DNS NXDOMAIN, ENOTFOUND): the sink pauses until it resolves. */
export function nameNotResolvedError(message: string, extra: Extra = {}): DeliveryError {
  return destinationError(message, 'name-not-resolved', extra);
}

/**
 * An HTTP status (`http-<status>`), with the server's Retry-After when retryable; a permanent one is a record
 * failure unless `scope` says otherwise (src/sinks/http-status.ts: httpFailureScope).
 */
export function httpStatusError(
  message: string,
  status: number,
  options: {
    retryable: boolean;
    scope?: FailureScope;
    retryAfterMs?: number | undefined;
    failedIndex?: number | undefined;
    cause?: unknown;
  },
): DeliveryError {
  const { retryable, scope, retryAfterMs, failedIndex, cause } = options;
  return new DeliveryError(message, {
    retryable,
    ...(retryable || scope === undefined ? {} : { scope }),
    ...(failedIndex === undefined ? {} : { failedIndex }),
    code: `http-${status}`,
    ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A record too large for one message or request: permanent; `failedIndex` when the sink knows which record. */
export function payloadTooLargeError(
  message: string,
  extra: { failedIndex?: number | undefined; cause?: unknown } = {},
): DeliveryError {
  const { failedIndex, cause } = extra;
  return new DeliveryError(message, {
    retryable: false,
    code: 'payload-too-large',
    ...(failedIndex === undefined ? {} : { failedIndex }),
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A record the destination can never accept as given: permanent. */
export function invalidInputError(message: string, extra: Extra = {}): DeliveryError {
  return new DeliveryError(message, { retryable: false, code: 'invalid-input', ...extra });
}

/** The configured template does not render to a JSON object: permanent. */
export function invalidTemplateError(message: string): DeliveryError {
  return new DeliveryError(message, { retryable: false, code: 'template-invalid-json' });
}

/**
 * For sinks that deliver one record at a time: the permanent `error` of the record at `index` of a batch
 * longer than one, re-thrown naming the record (the records before it were delivered), with its scope. Anything
 * else as is.
 */
export function withFailedIndex(error: unknown, index: number, batchLength: number): unknown {
  if (error instanceof DeliveryError && !error.retryable && batchLength > 1) {
    return new DeliveryError(error.message, {
      retryable: false,
      code: error.code,
      ...(error.scope === undefined ? {} : { scope: error.scope }),
      failedIndex: index,
    });
  }
  return error;
}

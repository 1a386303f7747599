/**
 * Maps a failed Logs Ingestion upload (an @azure/core-rest-pipeline RestError, an @azure/identity error, an
 * abort) to a DeliveryError through src/sinks/delivery-errors.ts. Duck-typed, so that it loads without the SDK.
 * The table (and why) is in docs/sinks-azure-monitor.md. Messages quote the service's error code and message
 * only after redaction and never the token: a server that echoes the request's Authorization header or a bare
 * token (eyJ…) gets "[redacted]".
 */
import { IDENTITY_REFUSED, identityRefused } from '../../azure/credential-errors.ts';
import { parseRetryAfter } from '../../backoff.ts';
import { errorMessage } from '../../errors.ts';
import {
  abortedError,
  destinationError,
  httpStatusError,
  isSocketErrorCode,
  networkError,
  payloadTooLargeError,
} from '../delivery-errors.ts';
import { classifyNameNotResolved, classifyTlsFailure, sanitizeBody } from '../http/classify.ts';
import { httpFailureScope, isRetryableHttpStatus } from '../http-status.ts';
import { DeliveryError } from '../types.ts';

/** The parts of a RestError (or any SDK error) this module reads. */
interface ErrorLike {
  name?: unknown;
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  cause?: unknown;
  response?: { headers?: { get?(name: string): string | undefined } };
}

/** A JWT (header.payload.signature, base64url): a bearer token, configured or not. */
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/** One line of service text without secrets: redacted, URLs cut to their origin, no token, ≤ 200 characters. */
export function safeServiceText(text: string): string {
  return sanitizeBody(text.replace(JWT, '[redacted]'));
}

/** The HTTP status of an SDK error, when the service answered. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as ErrorLike | null)?.statusCode;
  return typeof status === 'number' && status > 0 ? status : undefined;
}

/** Where the failure happened, for messages: the sink and what it sends to. */
export interface UploadTarget {
  sink: string;
  ruleId: string;
  streamName: string;
}

function describe(error: ErrorLike): string {
  const code = typeof error.code === 'string' && error.code !== '' ? `${error.code}: ` : '';
  return safeServiceText(`${code}${errorMessage(error)}`);
}

/** The socket error code (ECONNREFUSED, …) behind a "REQUEST_SEND_ERROR", if any. */
function socketCode(error: ErrorLike): string | undefined {
  for (let e: ErrorLike | undefined = error, depth = 0; e && depth < 4; depth++) {
    if (isSocketErrorCode(e.code)) return e.code as string;
    e = e.cause as ErrorLike | undefined;
  }
  return undefined;
}

/**
 * The DeliveryError for a failed upload request whose first row is the batch's `first.index`, the row of record
 * `first.recordId`. Permanent failures name that index (the rows before it were confirmed, none after it sent).
 * A 413 for one row is payload-too-large, naming the record, and any other 4xx but 401, 403, 404 and the other
 * destination statuses (src/sinks/http-status.ts) is permanent for the record; those, TLS trust, a name that does
 * not resolve and a credential the identity provider refuses are permanent for the destination: the sink pauses.
 */
export function uploadError(
  error: unknown,
  target: UploadTarget,
  first: { index: number; recordId: string },
  nowMs: number = Date.now(),
): DeliveryError {
  const firstIndex = first.index;
  if (error instanceof DeliveryError) return error;
  const e = (error ?? {}) as ErrorLike;
  const where = `Azure Monitor sink ${target.sink} (DCR ${target.ruleId}, stream ${target.streamName})`;
  const status = statusOf(error);
  if (status !== undefined) {
    const detail = describe(e);
    if (status === 413) {
      return payloadTooLargeError(
        `${where}: HTTP 413 ${detail}: the log row of record ${first.recordId} alone is larger than the Logs Ingestion API takes in one call (1 MB)`,
        { failedIndex: firstIndex, cause: error },
      );
    }
    const retryable = isRetryableHttpStatus(status);
    if (retryable) {
      const retryAfterMs = parseRetryAfter(e.response?.headers?.get?.('retry-after'), nowMs);
      return httpStatusError(`${where}: HTTP ${status} ${detail} (retryable)`, status, {
        retryable,
        retryAfterMs,
        cause: error,
      });
    }
    const permanent = (message: string) =>
      new DeliveryError(message, {
        retryable: false,
        code: `http-${status}`,
        scope: httpFailureScope(status),
        failedIndex: firstIndex,
        cause: error,
      });
    if (status === 401) {
      return permanent(
        `${where}: HTTP 401 ${detail}: the token was refused (permanent for the destination; fix: check that the credential signs in to the tenant the DCR is in (a wrong tenantId or an identity from another tenant) and that audience matches the cloud)`,
      );
    }
    if (status === 403) {
      return permanent(
        `${where}: HTTP 403 ${detail}: the identity may not send to this DCR (permanent for the destination; fix: give it the role "Monitoring Metrics Publisher" on the data collection rule (az role assignment create --role "Monitoring Metrics Publisher" --assignee <principal id> --scope <DCR resource id>; it takes effect within about 30 minutes) and check it signs in to the DCR's tenant)`,
      );
    }
    if (status === 404) {
      return permanent(
        `${where}: HTTP 404 ${detail}: no such DCR or stream at this endpoint (permanent for the destination; fix: check ruleId (the DCR's immutableId), streamName (one of its streamDeclarations) and that endpoint is a DCE or the DCR's logs ingestion endpoint in the DCR's region)`,
      );
    }
    return permanent(
      `${where}: HTTP ${status} ${detail} (${httpFailureScope(status) === 'record' ? 'permanent for these rows' : 'permanent for the destination; fix: check endpoint'})`,
    );
  }
  if (e.name === 'AbortError') return abortedError(`${where}: delivery aborted`, { cause: error });
  // @azure/identity: no credential yet (managed identity endpoint not answering) or the token request failed.
  if (e.name === 'CredentialUnavailableError') {
    return new DeliveryError(`${where}: no Azure credential available: ${describe(e)}`, {
      retryable: true,
      code: 'CredentialUnavailable',
      cause: error,
    });
  }
  if (identityRefused(error)) {
    return destinationError(
      `${where}: the token request was refused: ${describe(e)} (permanent for the destination: ${IDENTITY_REFUSED})`,
      'AuthenticationFailed',
      { failedIndex: firstIndex, cause: error },
    );
  }
  if (e.name === 'AuthenticationError' || e.name === 'AuthenticationRequiredError') {
    return new DeliveryError(`${where}: the token request failed: ${describe(e)}`, {
      retryable: true,
      code: 'AuthenticationFailed',
      cause: error,
    });
  }
  // A certificate problem (untrusted CA, wrong name, refused client certificate): permanent, naming the fix.
  const tls = classifyTlsFailure(e.cause ?? error, where) ?? classifyTlsFailure(error, where);
  if (tls !== undefined) return tls;
  const unresolved = classifyNameNotResolved(error, where);
  if (unresolved !== undefined) return unresolved;
  const socket = socketCode(e);
  if (socket !== undefined || e.code === 'REQUEST_SEND_ERROR') {
    return networkError(`${where}: network error ${socket ?? describe(e)}`, { cause: error });
  }
  return new DeliveryError(`${where}: ${describe(e)}`, { retryable: true, code: 'unknown', cause: error });
}

/**
 * The one HTTP status policy for every HTTP sink (webhook, Slack, Teams, Alertmanager, PagerDuty, Azure Monitor,
 * OTel over HTTP): which failures are retried, and which permanent ones are the destination's rather than the
 * record's (docs/delivery.md, "Two classes of permanent failure").
 *
 * Retryable: 408 Request Timeout, 425 Too Early (RFC 8470: the server refuses early data; the same request
 * succeeds once the handshake completes), 429 Too Many Requests, and every 5xx. Every other 4xx is permanent:
 * resending the same request cannot fix a bad payload, a wrong path or a rejected credential.
 *
 * Permanent for the destination (the sink pauses, the records stay pending): a redirect (3xx: the URL must be
 * final), 401 Unauthorized (credentials), 403 Forbidden (authorization), 404 Not Found (no such endpoint,
 * stream or webhook), 405 Method Not Allowed (the URL is not the API's), 407 Proxy Authentication Required and
 * 410 Gone (a retired endpoint). Every other permanent status is about the request, that is the record.
 */
import type { FailureScope } from './types.ts';

export const RETRYABLE_4XX_STATUSES: readonly number[] = [408, 425, 429];

/** Permanent statuses that refuse every request alike: the destination (or its configuration) must change. */
export const DESTINATION_STATUSES: readonly number[] = [401, 403, 404, 405, 407, 410];

/** True when an HTTP error status is worth retrying (see above). */
export function isRetryableHttpStatus(status: number): boolean {
  return status >= 500 || RETRYABLE_4XX_STATUSES.includes(status);
}

/** For a permanent (not retryable) status: whether it refuses the record or the whole destination. */
export function httpFailureScope(status: number): FailureScope {
  return (status >= 300 && status < 400) || DESTINATION_STATUSES.includes(status) ? 'destination' : 'record';
}

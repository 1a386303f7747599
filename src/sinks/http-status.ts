/**
 * The one retryable-HTTP-status policy for every HTTP sink (webhook, Slack, Teams, OTel over HTTP).
 *
 * Retryable: 408 Request Timeout, 425 Too Early (RFC 8470: the server refuses early data; the same request
 * succeeds once the handshake completes), 429 Too Many Requests, and every 5xx. Every other 4xx is permanent:
 * resending the same request cannot fix a bad payload, a wrong path or a rejected credential.
 */
export const RETRYABLE_4XX_STATUSES: readonly number[] = [408, 425, 429];

/** True when an HTTP error status is worth retrying (see above). */
export function isRetryableHttpStatus(status: number): boolean {
  return status >= 500 || RETRYABLE_4XX_STATUSES.includes(status);
}

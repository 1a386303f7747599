/**
 * Pure classification of webhook HTTP outcomes into delivered / retryable / permanent, with the service's
 * error string (Slack's "channel_not_found", …) and the server's Retry-After. Messages name the endpoint
 * only by scheme and host: the path and query of Slack/Teams URLs are credentials.
 */
import { redactText } from '../../redact.ts';
import { httpStatusError, networkError, timeoutError } from '../delivery-errors.ts';
import { isRetryableHttpStatus } from '../http-status.ts';
import type { DeliveryError } from '../types.ts';

/** "https://hooks.slack.com" — the only part of a webhook URL that may appear in logs and errors. */
export function safeOrigin(url: URL | string): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Error strings whose meaning does not depend on the status (Slack sends channel_is_archived as 410 or 403,
 * rollup_error as 500): key on the body first, status second.
 */
const PERMANENT_BODIES = new Set([
  'invalid_payload',
  'user_not_found',
  'action_prohibited',
  'channel_not_found',
  'channel_is_archived',
  'invalid_token',
  'no_service',
  'no_team',
  'invalid_blocks',
  'invalid_blocks_format',
  'too_many_attachments',
  'no_text',
  'missing_text_or_fallback_or_attachments',
  'posting_to_general_channel_denied',
]);

/**
 * Reduces a response body to a short, single-line, printable error string (at most 200 characters), passed
 * through the redactor (configured secrets — URL parts, header values, signing keys — and credential-shaped
 * text become "[redacted]") and with any URL cut to scheme and host, in case a server echoes them.
 */
export function sanitizeBody(body: string): string {
  let text = redactText(body);
  // Any URL a server echoes is reduced to scheme and host: paths and queries of webhook URLs are credentials.
  text = text.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => safeOrigin(url));
  text = text
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  if (text.startsWith('<')) return '(HTML body)';
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

export interface HttpOutcome {
  status: number;
  /** Sanitised body (see sanitizeBody). */
  body: string;
  retryAfterMs: number | undefined;
}

/**
 * Null when delivered (2xx); otherwise the DeliveryError to throw. `where` names the endpoint safely
 * (sink name and scheme+host).
 */
export function classifyResponse(outcome: HttpOutcome, where: string): DeliveryError | null {
  const { status, body, retryAfterMs } = outcome;
  if (status >= 200 && status < 300) return null;
  const detail = body === '' ? '' : ` ${body}`;
  if (status >= 300 && status < 400) {
    return httpStatusError(
      `${where}: HTTP ${status} redirect not followed (webhook URLs must be final; update the URL)`,
      status,
      { retryable: false },
    );
  }
  const firstWord = body.split(/\s/, 1)[0] ?? '';
  const permanentBody = PERMANENT_BODIES.has(firstWord);
  const retryable = !permanentBody && isRetryableHttpStatus(status);
  const kind = retryable ? 'retryable' : 'permanent';
  return httpStatusError(`${where}: HTTP ${status}${detail} (${kind})`, status, { retryable, retryAfterMs });
}

/** Maps a transport failure (no HTTP response) to a retryable DeliveryError without any URL details. */
export function classifyNetworkError(error: unknown, where: string, timedOut: boolean): DeliveryError {
  if (timedOut) return timeoutError(`${where}: no response within the timeout`);
  const code =
    typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : '';
  const name = error instanceof Error ? error.name : 'Error';
  const label = code || name;
  return networkError(`${where}: network error ${label}`);
}

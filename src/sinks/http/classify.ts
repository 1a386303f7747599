/**
 * Pure classification of webhook HTTP outcomes into delivered / retryable / permanent for the record /
 * permanent for the destination (src/sinks/http-status.ts), with the service's error string (Slack's
 * "channel_not_found", …) and the server's Retry-After. Messages name the endpoint only by scheme and host: the
 * path and query of Slack/Teams URLs are credentials.
 */

import { errorMessage } from '../../errors.ts';
import { redactText } from '../../redact.ts';
import {
  httpStatusError,
  nameNotResolvedError,
  networkError,
  timeoutError,
  tlsError,
} from '../delivery-errors.ts';
import { httpFailureScope, isRetryableHttpStatus } from '../http-status.ts';
import type { DeliveryError, FailureScope } from '../types.ts';

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
 * rollup_error as 500): key on the body first, status second. Each is permanent, for the destination (the
 * webhook, its channel or its app: every message fails alike) or for the record (this message's content).
 */
const PERMANENT_BODIES = new Map<string, FailureScope>([
  ['invalid_payload', 'record'],
  ['invalid_blocks', 'record'],
  ['invalid_blocks_format', 'record'],
  ['too_many_attachments', 'record'],
  ['no_text', 'record'],
  ['missing_text_or_fallback_or_attachments', 'record'],
  ['user_not_found', 'destination'],
  ['action_prohibited', 'destination'],
  ['channel_not_found', 'destination'],
  ['channel_is_archived', 'destination'],
  ['invalid_token', 'destination'],
  ['no_service', 'destination'],
  ['no_team', 'destination'],
  ['team_disabled', 'destination'],
  ['posting_to_general_channel_denied', 'destination'],
]);

/** What a destination-refusing status means, and the fix (said once when the sink pauses). */
const DESTINATION_STATUS_FIXES = new Map<number, string>([
  [
    401,
    'the destination refused the credentials; fix: check the credentials the sink sends (URL, headers, token), for example a rotated token or a revoked webhook',
  ],
  [
    403,
    'the destination refuses this client; fix: give the credentials the sink sends permission to post there',
  ],
  [404, 'no such endpoint at this URL; fix: check the URL (a deleted webhook, a wrong path or host)'],
  [405, "the URL does not take POST requests; fix: check the URL's path"],
  [
    407,
    'the proxy requires authentication; fix: put its credentials in HTTPS_PROXY (http://user:password@proxy:port)',
  ],
  [410, 'the endpoint was removed; fix: create a new one and update the URL'],
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
 * (sink name and scheme+host). `refusesDestination`: set by a sink whose service answers a refusal of the
 * destination with a status that usually refuses the record (PagerDuty: 400 "Invalid routing key"): what it
 * means and the fix; the failure is then permanent for the destination.
 */
export function classifyResponse(
  outcome: HttpOutcome,
  where: string,
  refusesDestination?: string,
): DeliveryError | null {
  const { status, body, retryAfterMs } = outcome;
  if (status >= 200 && status < 300) return null;
  const detail = body === '' ? '' : ` ${body}`;
  if (status >= 300 && status < 400) {
    return httpStatusError(
      `${where}: HTTP ${status} redirect not followed (permanent for the destination; fix: the URL must be final, update it to where it redirects)`,
      status,
      { retryable: false, scope: 'destination' },
    );
  }
  const firstWord = body.split(/\s/, 1)[0] ?? '';
  const bodyScope = refusesDestination === undefined ? PERMANENT_BODIES.get(firstWord) : 'destination';
  if (bodyScope === undefined && isRetryableHttpStatus(status)) {
    return httpStatusError(`${where}: HTTP ${status}${detail} (retryable)`, status, {
      retryable: true,
      retryAfterMs,
    });
  }
  const scope = bodyScope ?? httpFailureScope(status);
  if (scope === 'record') {
    return httpStatusError(`${where}: HTTP ${status}${detail} (permanent for this record)`, status, {
      retryable: false,
      scope,
    });
  }
  const meaning =
    refusesDestination ??
    (bodyScope === undefined
      ? (DESTINATION_STATUS_FIXES.get(status) ?? 'the destination refuses every request')
      : `the service refuses every message (${firstWord}); fix: check that the webhook, its channel and its app still exist and may post`);
  return httpStatusError(
    `${where}: HTTP ${status}${detail} (permanent for the destination: ${meaning})`,
    status,
    { retryable: false, scope },
  );
}

/**
 * Maps a transport failure (no HTTP response) to a DeliveryError without any URL details: a TLS certificate
 * problem is permanent (`tls`, see classifyTlsFailure), anything else retryable. `https`: the endpoint is an
 * https:// URL, where a connection the server closes before answering may be a refused client certificate.
 */
export function classifyNetworkError(
  error: unknown,
  where: string,
  timedOut: boolean,
  https = false,
): DeliveryError {
  if (timedOut) return timeoutError(`${where}: no response within the timeout`);
  const tls = classifyTlsFailure(error, where);
  if (tls !== undefined) return tls;
  const unresolved = classifyNameNotResolved(error, where);
  if (unresolved !== undefined) return unresolved;
  const code = errorCode(error) ?? '';
  const name = error instanceof Error ? error.name : 'Error';
  const label = code || name;
  const hint = https && closedBeforeAnswer(error) ? `; ${CLOSED_BEFORE_ANSWER_HINT}` : '';
  return networkError(`${where}: network error ${label}${hint}`);
}

/**
 * Said when an https:// server closes the connection before answering: a server that rejects the client
 * certificate without a TLS alert (Node.js does this), or whose alert arrives after the request was sent (TLS
 * 1.3), looks exactly like that. Retryable, because a restarting server does the same.
 */
const CLOSED_BEFORE_ANSWER_HINT =
  'the server closed the connection before answering (if it requires a client certificate, check that ' +
  'tls.cert and tls.key are set and issued by a CA the server trusts)';

/**
 * The destination's host name does not exist (Node.js ENOTFOUND: DNS answered NXDOMAIN, or no record): permanent
 * for the destination (`name-not-resolved`), naming the fix. A DNS server that does not answer (EAI_AGAIN) is a
 * retryable network error instead. SDKs that keep only the text are matched on Node's and gRPC's wording
 * ("getaddrinfo ENOTFOUND host", "Name resolution failed for target dns:host").
 */
export function classifyNameNotResolved(error: unknown, where: string): DeliveryError | undefined {
  const code = errorCode(error);
  const text = messageChain(error);
  const host =
    /getaddrinfo enotfound (\S+)/.exec(text)?.[1] ??
    /name resolution failed for target (?:dns:)?(?:\/\/\/)?([^\s:]+)/.exec(text)?.[1];
  if (code !== 'ENOTFOUND' && host === undefined) return undefined;
  const which = host === undefined ? 'the host name' : `the host name ${host}`;
  return nameNotResolvedError(
    `${where}: ${which} does not resolve (DNS: no such name); fix: correct the host name in the URL or endpoint, or add its DNS record (this machine's resolver must know it)`,
    { cause: error },
  );
}

/** ECONNRESET, or undici's "other side closed" with no response byte read. */
function closedBeforeAnswer(error: unknown): boolean {
  const code = errorCode(error);
  if (code === 'ECONNRESET') return true;
  if (code !== 'UND_ERR_SOCKET') return false;
  const bytesRead = (error as { socket?: { bytesRead?: unknown } }).socket?.bytesRead;
  return bytesRead === undefined || bytesRead === 0;
}

/** The string `code` of an error or of its causes (undici and proxies wrap the socket's error). */
function errorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

interface TlsProblem {
  /** What Node.js/OpenSSL says (matched in messages of SDKs that keep only the text, such as gRPC). */
  text: string;
  problem: string;
  fix: string;
}

const UNTRUSTED = {
  problem: "the server's certificate is not issued by a trusted CA",
  fix: "add the CA that issued the server's certificate (PEM) as tls.ca",
};
const BAD_CERTIFICATE = {
  problem: "the server's certificate failed verification",
  fix: "fix the server's certificate (or trust the right CA with tls.ca)",
};

/** Node.js codes of a server certificate that failed verification, as OpenSSL names them. */
const SERVER_CERTIFICATE_CODES = new Map<string, TlsProblem>([
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', { text: 'unable to verify the first certificate', ...UNTRUSTED }],
  ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', { text: 'unable to get local issuer certificate', ...UNTRUSTED }],
  ['UNABLE_TO_GET_ISSUER_CERT', { text: 'unable to get issuer certificate', ...UNTRUSTED }],
  ['SELF_SIGNED_CERT_IN_CHAIN', { text: 'self-signed certificate in certificate chain', ...UNTRUSTED }],
  ['DEPTH_ZERO_SELF_SIGNED_CERT', { text: 'self-signed certificate', ...UNTRUSTED }],
  ['CERT_UNTRUSTED', { text: 'certificate not trusted', ...UNTRUSTED }],
  ['CERT_REJECTED', { text: 'certificate rejected', ...UNTRUSTED }],
  ['INVALID_CA', { text: 'invalid CA certificate', ...UNTRUSTED }],
  [
    'ERR_TLS_CERT_ALTNAME_INVALID',
    {
      text: "does not match certificate's altnames",
      problem: "the server's certificate is not valid for the host name in the URL",
      fix: 'use a URL with a name the certificate is issued for, or set tls.serverName to that name',
    },
  ],
  [
    'HOSTNAME_MISMATCH',
    {
      text: 'hostname mismatch',
      problem: "the server's certificate is not valid for the host name in the URL",
      fix: 'use a URL with a name the certificate is issued for, or set tls.serverName to that name',
    },
  ],
  [
    'CERT_HAS_EXPIRED',
    {
      text: 'certificate has expired',
      problem: "a certificate of the server's chain has expired",
      fix: "renew the server's certificate (or correct this machine's clock)",
    },
  ],
  [
    'CERT_NOT_YET_VALID',
    {
      text: 'certificate is not yet valid',
      problem: "a certificate of the server's chain is not valid yet",
      fix: "correct this machine's clock (or the server certificate's start date)",
    },
  ],
  ['CERT_REVOKED', { text: 'certificate revoked', ...BAD_CERTIFICATE }],
  ['CERT_SIGNATURE_FAILURE', { text: 'certificate signature failure', ...BAD_CERTIFICATE }],
  ['INVALID_PURPOSE', { text: 'unsupported certificate purpose', ...BAD_CERTIFICATE }],
  ['CERT_CHAIN_TOO_LONG', { text: 'certificate chain too long', ...BAD_CERTIFICATE }],
  ['PATH_LENGTH_EXCEEDED', { text: 'path length constraint exceeded', ...BAD_CERTIFICATE }],
]);

/** TLS alerts a server sends when it refuses the client's certificate (or the lack of one). */
const CLIENT_CERTIFICATE_ALERTS =
  /(bad certificate|certificate required|unknown ca|certificate unknown|certificate expired|certificate revoked|unsupported certificate|access denied|handshake failure)/;

/**
 * A TLS certificate problem as a permanent DeliveryError (code `tls`) naming the problem and the fix, or
 * undefined when `error` is not one. Recognised: the Node.js codes of a server certificate that failed
 * verification (SERVER_CERTIFICATE_CODES: untrusted CA, self-signed, wrong host name, expired, revoked, …) and
 * the certificate-related TLS alerts a server sends when it refuses the client certificate (ERR_SSL_*_ALERT_*:
 * bad certificate, certificate required, unknown CA, handshake failure, …). SDKs that keep only the text (gRPC:
 * "No connection established. Last error: …") are matched on OpenSSL's wording. Never includes certificate
 * contents: only the code and a fixed explanation.
 */
export function classifyTlsFailure(error: unknown, where: string): DeliveryError | undefined {
  const code = errorCode(error);
  const text = messageChain(error);
  let match: [string, TlsProblem] | undefined;
  if (code !== undefined && SERVER_CERTIFICATE_CODES.has(code)) {
    match = [code, SERVER_CERTIFICATE_CODES.get(code)!];
  } else {
    // The longest wording first: "self-signed certificate in certificate chain" before "self-signed certificate".
    match = [...SERVER_CERTIFICATE_CODES]
      .sort(([, a], [, b]) => b.text.length - a.text.length)
      .find(([, problem]) => text.includes(problem.text.toLowerCase()));
  }
  if (match !== undefined) {
    const [name, { problem, fix }] = match;
    return tlsError(`${where}: TLS: ${problem} (${name}); fix: ${fix}`, { cause: error });
  }
  const alert =
    code !== undefined && /^ERR_SSL_.*ALERT_/.test(code)
      ? CLIENT_CERTIFICATE_ALERTS.exec(
          code
            .replace(/^.*ALERT_/, '')
            .replaceAll('_', ' ')
            .toLowerCase(),
        )
      : /\balert\b/.test(text)
        ? CLIENT_CERTIFICATE_ALERTS.exec(text)
        : null;
  if (alert === null) return undefined;
  return tlsError(
    `${where}: TLS: the server refused the handshake (alert "${alert[1]}"): it requires a client ` +
      'certificate it trusts; fix: set tls.cert and tls.key to a certificate (and its key) issued by a CA the ' +
      'server trusts',
    { cause: error },
  );
}

/** The messages of an error and its causes, lower case (for SDKs that keep only the text). */
function messageChain(error: unknown): string {
  const parts: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (typeof e === 'string' || typeof (e as { message?: unknown }).message === 'string')
      parts.push(errorMessage(e));
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(' | ').toLowerCase();
}

/**
 * The one redactor. Every string that leaves the process or is stored — log lines, delivery errors, the
 * outbox's stored errors and dead-letter reasons, CLI output, /readyz and /metrics — goes through
 * `redactText`, which removes:
 *
 * 1. every configured secret value: each Secret registers itself when it is resolved (src/secret.ts),
 *    together with its credential parts (the token of "Bearer …"/"Basic …" header values and Basic's decoded
 *    password, SharedAccessSignature and connection-string keys, URL userinfo, credential query values and
 *    long path segments of webhook URLs) and their URL- and JSON-escaped forms — so a receiver that echoes
 *    only part of a credential is caught too; the config loader registers the userinfo of every URL in the
 *    configuration as well;
 * 2. credentials recognisable by their shape even when never configured: URL userinfo
 *    (`scheme://user:pass@host`), credential query/connection-string parameters (`sig=`, `code=`, `token=`,
 *    `key=`, `SharedAccessKey=`, `password=`, …), `Bearer`/`Basic`/`SharedAccessSignature` values and
 *    `Authorization:`/`api-key:`-style header values.
 *
 * Replacements never consume a backslash or a quote, so redacting JSON text (a log line, a --json document)
 * keeps it valid JSON. Deliberately dependency-free: `run` loads it before anything else.
 */
import { errorMessage } from './errors.ts';

export const REDACTED = '[redacted]';

/** Shorter configured values are not registered (they would blank out ordinary words). */
const MIN_SECRET_LENGTH = 6;
/** Webhook URL path segments and query values at least this long count as credentials. */
const MIN_URL_PART_LENGTH = 16;

/**
 * Object keys whose values are secrets wherever they appear in a log object (pino `redact.paths`, a second
 * line of defence besides redactText on the serialised line).
 */
export const SECRET_LOG_KEYS = [
  'connectionString',
  'url',
  'secret',
  'secrets',
  'password',
  'headers.authorization',
  'headers["api-key"]',
] as const;

const known = new Set<string>();
let ordered: string[] = [];

/** Query, connection-string and SAS parameter names whose values are credentials. */
const CREDENTIAL_PARAM =
  'sig|signature|code|token|access_token|id_token|refresh_token|key|api[-_]?key|apikey|subscription-key|password|passwd|pwd|secret|client_secret|sharedaccesskey|accountkey|sharedaccesssignature';
const CREDENTIAL_PARAM_NAME = new RegExp(`^(?:${CREDENTIAL_PARAM})$`, 'i');

/** Characters a credential value may not contain in the shape rules (never eats JSON escapes or quotes). */
const VALUE = `[^\\s"'<>\\\\&;,]`;

const SHAPE_RULES: Array<[RegExp, string]> = [
  // URL userinfo: scheme://user:pass@host → scheme://[redacted]@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>\\]+@/gi, `$1${REDACTED}@`],
  // Authorization schemes with their token
  [/\b(Bearer|Basic|SharedAccessSignature)(\s+)[^\s"'<>\\,]{4,}/gi, `$1$2${REDACTED}`],
  // key=value credentials in query strings, SAS tokens and connection strings
  [new RegExp(`(^|[^A-Za-z0-9_-])(${CREDENTIAL_PARAM})=${VALUE}+`, 'gi'), `$1$2=${REDACTED}`],
  // header-style "Authorization: x", "api-key: x", JSON "api-key":"x"
  [
    new RegExp(
      `\\b(authorization|proxy-authorization|api-key|x-api-key|ocp-apim-subscription-key|x-functions-key)((?:\\\\?["'])?\\s*[:=]\\s*(?:\\\\?["'])?)(?!${REDACTED.replace(/[[\]]/g, '\\$&')})${VALUE}+`,
      'gi',
    ),
    `$1$2${REDACTED}`,
  ],
];

/** The forms in which a value may appear in text: as is, URL-encoded, JSON-escaped. */
function forms(value: string): string[] {
  const out = [value];
  try {
    out.push(encodeURIComponent(value));
  } catch {
    // lone surrogate: no URL-encoded form
  }
  out.push(JSON.stringify(value).slice(1, -1));
  return out;
}

function add(value: string): void {
  if (value.length < MIN_SECRET_LENGTH) return;
  for (const form of forms(value)) {
    if (known.has(form)) continue;
    known.add(form);
    ordered = [];
  }
}

/** The parts of a secret value that identify it on their own (a receiver may echo just one of them). */
function credentialParts(value: string): string[] {
  const parts: string[] = [];
  const text = value.trim();
  const scheme = /^(bearer|basic|token|apikey|api-key|sharedaccesssignature|digest)\s+(.+)$/i.exec(text);
  if (scheme) {
    const credential = scheme[2]!.trim();
    parts.push(credential);
    if (scheme[1]!.toLowerCase() === 'basic') {
      const decoded = Buffer.from(credential, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) parts.push(decoded, decoded.slice(colon + 1));
    }
  }
  // Standard Webhooks signing secrets: the key is the base64 after the prefix
  if (/^whsec_/i.test(text)) parts.push(text.slice('whsec_'.length));
  // key=value pairs (SAS tokens, connection strings, query strings)
  for (const pair of text.split(/[&;?\s]/)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const name = pair.slice(0, eq).trim();
    const v = pair.slice(eq + 1);
    if (CREDENTIAL_PARAM_NAME.test(name)) {
      parts.push(v);
      try {
        parts.push(decodeURIComponent(v));
      } catch {
        // not URL-encoded
      }
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      const url = new URL(text);
      if (url.password !== '') parts.push(decodeURIComponent(url.password), url.password);
      if (url.username !== '' && url.password !== '') parts.push(`${url.username}:${url.password}`);
      const pathAndQuery = `${url.pathname}${url.search}`;
      if (pathAndQuery.length >= 8 && pathAndQuery !== '/') parts.push(pathAndQuery);
      for (const segment of url.pathname.split('/')) {
        if (segment.length < MIN_URL_PART_LENGTH) continue;
        parts.push(segment);
        try {
          parts.push(decodeURIComponent(segment));
        } catch {
          // not percent-encoded
        }
      }
      for (const [name, v] of url.searchParams) {
        if (CREDENTIAL_PARAM_NAME.test(name) || v.length >= MIN_URL_PART_LENGTH) parts.push(v);
      }
    } catch {
      // not a URL after all
    }
  }
  return parts;
}

/**
 * Make `value` (a configured secret) and its credential parts unprintable from now on. Called for every
 * resolved Secret; safe to call repeatedly.
 */
export function registerSecret(value: string): void {
  if (!isOriginWithCredentials(value)) add(value);
  for (const part of credentialParts(value)) add(part);
}

/**
 * A URL that is only scheme, host and port, with or without credentials (`http://alertmanager-1:9093`,
 * `https://user:password@alertmanager-2:9093/`): given in a secret field, its only secret is its userinfo, which
 * credentialParts registers (the password, and user:password). Registering the whole value too would redact the
 * host wherever a message names the endpoint by its origin (`urls[1] ([redacted])`): redact the credentials, not
 * the host.
 */
function isOriginWithCredentials(value: string): boolean {
  const text = value.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\/?$/i.test(text)) return false;
  try {
    const url = new URL(text);
    return url.pathname === '/' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

/** Register the credentials embedded in a non-secret configured URL (its userinfo). */
export function registerUrlCredentials(value: string): void {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(value.trim())) return;
  try {
    const url = new URL(value.trim());
    if (url.password !== '') {
      add(url.password);
      add(decodeURIComponent(url.password));
      add(`${url.username}:${url.password}`);
    }
  } catch {
    // not a URL
  }
}

/** Remove every known secret and every credential-shaped substring from `text`. */
export function redactText(text: string): string {
  if (text === '') return text;
  if (ordered.length !== known.size) ordered = [...known].sort((a, b) => b.length - a.length);
  let out = text;
  for (const secret of ordered) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const [rule, replacement] of SHAPE_RULES) out = out.replace(rule, replacement);
  return out;
}

/** An error's message, redacted (for anything that stores or prints it). */
export function redactedMessage(error: unknown): string {
  return redactText(errorMessage(error));
}

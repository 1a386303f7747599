/**
 * Standard Webhooks 1.0 signing (symmetric `v1`, HMAC-SHA256) and CloudEvents HTTP binding helpers for the
 * generic webhook sink. Pure functions over strings.
 */
import type { ForwarderEvent } from '../../domain/index.ts';

const { createHmac } = process.getBuiltinModule('node:crypto');

/**
 * Decodes a `whsec_<base64>` secret to its key bytes. Throws (without the secret) when it is not valid.
 * `label` names the secret safely (e.g. "signingSecrets[0] (env HOOK_SECRET)").
 */
export function decodeSigningSecret(secret: string, label: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!secret.startsWith('whsec_')) {
    throw new Error(`${label} must be a Standard Webhooks secret of the form whsec_<base64>`);
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    throw new Error(`${label} is not valid base64 after the whsec_ prefix`);
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < 16) throw new Error(`${label} is too short (at least 16 key bytes; 24–64 recommended)`);
  return key;
}

/** `v1,<base64 HMAC-SHA256(key, "${id}.${timestamp}.${body}")>` */
export function signV1(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers; one signature per key (rotation), space-separated. */
export function standardWebhookHeaders(
  keys: readonly Buffer[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const headers: Record<string, string> = {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
  };
  if (keys.length > 0) {
    headers['webhook-signature'] = keys.map((k) => signV1(k, id, timestampSeconds, body)).join(' ');
  }
  return headers;
}

/**
 * Percent-encodes a CloudEvents attribute value for a `ce-` header (HTTP binding 3.1.3.2: space, `"`, `%`
 * and everything outside printable ASCII, as UTF-8 bytes).
 */
export function encodeCeHeaderValue(value: string): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x21 && cp <= 0x7e && ch !== '"' && ch !== '%') {
      out += ch;
    } else {
      for (const byte of Buffer.from(ch, 'utf8'))
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

export type ContentMode = 'structured' | 'binary';

/** Body and content headers of a record in the chosen CloudEvents HTTP content mode. */
export function cloudEventRequest(
  record: ForwarderEvent,
  mode: ContentMode,
): { body: string; headers: Record<string, string> } {
  if (mode === 'structured') {
    return {
      body: JSON.stringify(record),
      headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
    };
  }
  const headers: Record<string, string> = { 'content-type': record.datacontenttype };
  for (const [key, value] of Object.entries(record)) {
    if (key === 'data' || key === 'datacontenttype' || value === undefined || value === null) continue;
    headers[`ce-${key}`] = encodeCeHeaderValue(String(value));
  }
  return { body: JSON.stringify(record.data), headers };
}

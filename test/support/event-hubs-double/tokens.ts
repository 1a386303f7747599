/**
 * Token checks the Event Hubs test double applies to `$cbs` put-token requests: SAS signatures (HMAC-SHA256
 * over `urlencode(resource) + "\n" + expiry`) and JWT audience/expiry. Pure functions, no I/O.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The token types the SDK sends in the put-token `type` application property. */
export const SAS_TOKEN_TYPE = 'servicebus.windows.net:sastoken';
export const JWT_TOKEN_TYPE = 'jwt';

/** Audiences a real Event Hubs namespace accepts in an Entra ID token. */
export const EVENT_HUBS_JWT_AUDIENCES: readonly string[] = [
  'https://eventhubs.azure.net',
  'https://eventhubs.azure.net/',
];

/** Result of a token check: `undefined` when accepted, otherwise the reason it was refused. */
export type TokenVerdict = string | undefined;

/**
 * Verifies a SAS token for `audience` (the put-token `name`). The token's `sr` must be a prefix of the audience
 * (namespace- or hub-level tokens), it must not be expired, and its signature must match the key registered for
 * its `skn`.
 */
export function verifySasToken(
  token: string,
  audience: string,
  keys: Readonly<Record<string, string>>,
  nowMs: number,
): TokenVerdict {
  const prefix = 'SharedAccessSignature ';
  if (!token.startsWith(prefix)) return 'SAS token does not start with "SharedAccessSignature "';
  const fields = new URLSearchParams(token.slice(prefix.length));
  const sr = fields.get('sr');
  const sig = fields.get('sig');
  const se = fields.get('se');
  const skn = fields.get('skn');
  if (!sr || !sig || !se || !skn) return 'SAS token lacks one of sr, sig, se, skn';
  if (!audience.toLowerCase().startsWith(sr.toLowerCase())) {
    return `SAS token resource ${sr} does not cover audience ${audience}`;
  }
  const expiry = Number(se);
  if (!Number.isFinite(expiry) || expiry * 1000 <= nowMs) return 'SAS token expired';
  const key = keys[skn];
  if (key === undefined) return `unknown SAS key name ${skn}`;
  const expected = createHmac('sha256', key)
    .update(`${encodeURIComponent(sr)}\n${se}`)
    .digest();
  const actual = Buffer.from(sig, 'base64');
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
    return 'SAS signature does not match the key';
  }
  return undefined;
}

/** Decodes the claims of a JWT without verifying its signature (the double trusts its token issuer). */
export function decodeJwtClaims(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return claims !== null && typeof claims === 'object' ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Accepts a JWT whose `aud` is one of `audiences` and whose `exp` (if present) lies in the future. */
export function verifyJwt(token: string, audiences: readonly string[], nowMs: number): TokenVerdict {
  const claims = decodeJwtClaims(token);
  if (claims === undefined) return 'token is not a JWT';
  const aud = claims.aud;
  const list = Array.isArray(aud) ? aud : [aud];
  if (!list.some((a) => typeof a === 'string' && audiences.includes(a))) {
    return `JWT audience ${JSON.stringify(aud)} is not one of ${audiences.join(', ')}`;
  }
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= nowMs) return 'JWT expired';
  return undefined;
}

/** Builds a SAS token the way the SDK does (for tests that need a hand-made AzureSASCredential). */
export function createSasToken(
  resource: string,
  keyName: string,
  key: string,
  expirySeconds: number,
): string {
  const sr = encodeURIComponent(resource);
  const se = String(expirySeconds);
  const sig = createHmac('sha256', key).update(`${sr}\n${se}`).digest('base64');
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=${se}&skn=${encodeURIComponent(keyName)}`;
}

/**
 * Who may use the fleet dashboard's HTTP server (the dashboard page, its API and /metrics).
 *
 * - Bound to a loopback address (the default, 127.0.0.1) it needs no credential; bound anywhere else it refuses
 *   to start without one (`dashboard.auth`: a bearer token or HTTP Basic, both secrets in the project's secret
 *   forms). With a credential configured every request needs it, on loopback too.
 * - The `Host` header must name this server (DNS rebinding: a page on an attacker's name resolved to this
 *   address): the bind address, localhost, 127.0.0.1 and [::1] with the port, plus `dashboard.allowedHosts`;
 *   anything else is a 421 Misdirected Request.
 * - Credentials are compared in constant time (SHA-256 of both sides, then crypto.timingSafeEqual) and never
 *   logged. /healthz and /readyz stay open for probes (they check neither Host nor credential).
 */
import type { IncomingMessage } from 'node:http';
import type { Secret } from '../../secret.ts';

const { createHash, timingSafeEqual } = process.getBuiltinModule('node:crypto');

/** A credential the dashboard requires (config `dashboard.auth`). */
export type DashboardAuth = { bearerToken: Secret } | { basic: { username: string; password: Secret } };

/** How the server is reached: the credential (if any) and extra host names accepted in `Host`. */
export interface DashboardAccess {
  auth?: DashboardAuth | undefined;
  /** Host names (optionally name:port) accepted in `Host` besides the bind address and the loopback names. */
  allowedHosts?: readonly string[] | undefined;
}

/** Thrown when the dashboard would listen beyond loopback without a credential. */
export class DashboardAccessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DashboardAccessError';
  }
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)$/i;

/** Whether a listen address (optionally in [brackets]) is on the loopback interface. */
export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK.test(host.trim().replace(/^\[|\]$/g, ''));
}

/** The refusal's message: names the setting and the option. */
export function missingCredentialMessage(host: string): string {
  return (
    `the dashboard listens on ${host}, which is not a loopback address, so it needs a credential: set ` +
    'dashboard.auth ({ bearerToken: <secret> } or { basic: { username, password: <secret> } }) or pass ' +
    '--auth-token-env NAME, or keep --host (dashboard.host) on 127.0.0.1 behind an authenticating proxy'
  );
}

/** Throws DashboardAccessError when `host` is not loopback and no credential is configured. */
export function assertDashboardAccess(host: string, auth: DashboardAuth | undefined): void {
  if (auth === undefined && !isLoopbackAddress(host))
    throw new DashboardAccessError(missingCredentialMessage(host));
}

interface HostPort {
  name: string;
  port: number | undefined;
}

/** "name", "name:port", "[v6]", "[v6]:port" → lower-case name (brackets kept for IPv6) and port. */
function parseHost(value: string): HostPort | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(value.trim());
  if (!m) return undefined;
  return {
    name: m[1]!.toLowerCase().replace(/\.$/, ''),
    port: m[2] === undefined ? undefined : Number(m[2]),
  };
}

/** How a listen address appears in a Host header (IPv6 in brackets). */
function hostName(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '');
  return bare.includes(':') ? `[${bare}]` : bare;
}

/** The Host values accepted: the bind address and the loopback names with the port, plus the configured ones. */
export function allowedHostList(
  bindHost: string,
  port: number,
  configured: readonly string[] = [],
): string[] {
  const defaults = [hostName(bindHost), 'localhost', '127.0.0.1', '[::1]'].map((h) => `${h}:${port}`);
  return [...new Set([...defaults, ...configured])];
}

/**
 * Whether a request's Host header matches one of `allowed` (an entry without a port matches any port; a
 * Host without a port is port 80). A missing Host (HTTP/1.0) does not match.
 */
export function hostAllowed(header: string | undefined, allowed: readonly string[]): boolean {
  if (header === undefined) return false;
  const got = parseHost(header);
  if (got === undefined) return false;
  const port = got.port ?? 80;
  return allowed.some((entry) => {
    const want = parseHost(entry);
    return want !== undefined && want.name === got.name && (want.port === undefined || want.port === port);
  });
}

/** Constant-time equality of two strings (their SHA-256 digests, so lengths do not leak either). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/** The outcome of checking a request's credential. */
export type AuthVerdict = 'ok' | 'missing' | 'wrong';

/** Checks the Authorization header against the configured credential ('ok' when none is configured). */
export function checkCredential(req: IncomingMessage, auth: DashboardAuth | undefined): AuthVerdict {
  if (auth === undefined) return 'ok';
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '') return 'missing';
  const m = /^(\S+)\s+(.+)$/.exec(header.trim());
  if (!m) return 'wrong';
  const scheme = m[1]!.toLowerCase();
  const value = m[2]!.trim();
  if ('bearerToken' in auth) {
    if (scheme !== 'bearer') return 'missing';
    return sameSecret(value, auth.bearerToken.reveal()) ? 'ok' : 'wrong';
  }
  if (scheme !== 'basic') return 'missing';
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'wrong';
  // Both compared every time (no short cut on a wrong user name).
  const user = sameSecret(decoded.slice(0, colon), auth.basic.username);
  const password = sameSecret(decoded.slice(colon + 1), auth.basic.password.reveal());
  return user && password ? 'ok' : 'wrong';
}

/** The WWW-Authenticate challenge of a 401. */
export function authChallenge(auth: DashboardAuth, verdict: AuthVerdict): string {
  if ('bearerToken' in auth)
    return verdict === 'wrong' ? 'Bearer realm="fleet", error="invalid_token"' : 'Bearer realm="fleet"';
  return 'Basic realm="fleet", charset="UTF-8"';
}

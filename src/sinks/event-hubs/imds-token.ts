/**
 * Managed identity tokens for Event Hubs heartbeats over REST (docs/sinks-event-hubs.md, "Heartbeat transport"),
 * without @azure/identity: GET {imds}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=
 * https://eventhubs.azure.net/ with `Metadata: true` (plus client_id or msi_res_id for a user-assigned identity)
 * from the IMDS endpoint the forwarder polls, with node:http and no proxy (IMDS is never proxied), a timeout and
 * the caller's AbortSignal. A token is reused until five minutes before it expires. Neither the token nor the
 * answer's body appear in an error.
 */
import { abortedError, httpStatusError, networkError, timeoutError } from '../delivery-errors.ts';

const http = process.getBuiltinModule('node:http');

/** The audience Event Hubs accepts in an Entra ID token. */
export const EVENT_HUBS_RESOURCE = 'https://eventhubs.azure.net/';
/** The IMDS managed identity API version. */
export const IDENTITY_API_VERSION = '2018-02-01';
/** A cached token is replaced this long before it expires. */
const REFRESH_BEFORE_MS = 5 * 60_000;
/** Largest answer read (a token response is a few KiB). */
const MAX_BODY_BYTES = 64 * 1024;

/** Which identity: the VM's system-assigned one, or a user-assigned one by client id or ARM resource id. */
export interface ManagedIdentitySelector {
  clientId?: string | undefined;
  resourceId?: string | undefined;
}

/** The token URL at `endpoint` (which may carry a path prefix, as the simulator's per-VM endpoints do). */
export function identityTokenUrl(endpoint: string, identity: ManagedIdentitySelector): URL {
  const url = new URL(endpoint);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/metadata/identity/oauth2/token`;
  url.search = '';
  url.searchParams.set('api-version', IDENTITY_API_VERSION);
  url.searchParams.set('resource', EVENT_HUBS_RESOURCE);
  if (identity.clientId !== undefined) url.searchParams.set('client_id', identity.clientId);
  if (identity.resourceId !== undefined) url.searchParams.set('msi_res_id', identity.resourceId);
  return url;
}

/** The access token and its expiry (epoch ms) from a token answer, or the problem. */
export function parseTokenAnswer(body: string): { token: string; expiresAtMs: number } | string {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    return 'the answer is not JSON';
  }
  const { access_token: token, expires_on: expiresOn } = (answer ?? {}) as Record<string, unknown>;
  if (typeof token !== 'string' || token === '') return 'the answer has no access_token';
  const seconds = Number(expiresOn);
  if (!Number.isFinite(seconds)) return 'the answer has no expires_on';
  return { token, expiresAtMs: seconds * 1000 };
}

/** Managed identity tokens for the Event Hubs audience, cached until shortly before they expire. */
export class ImdsTokenSource {
  readonly #url: URL;
  readonly #now: () => number;
  #cached: { token: string; expiresAtMs: number } | undefined;

  constructor(endpoint: string, identity: ManagedIdentitySelector, now: () => number = Date.now) {
    this.#url = identityTokenUrl(endpoint, identity);
    this.#now = now;
  }

  /** A valid token (cached, or fetched now); rejects with a DeliveryError naming the problem and the fix. */
  async token(signal: AbortSignal, timeoutMs: number): Promise<string> {
    const cached = this.#cached;
    if (cached !== undefined && cached.expiresAtMs - REFRESH_BEFORE_MS > this.#now()) return cached.token;
    const { status, body } = await this.#get(signal, timeoutMs);
    const where = `managed identity token from IMDS (${this.#url.host})`;
    if (status !== 200) {
      const fix =
        status === 400 || status === 404
          ? 'the VM has no such managed identity; fix: assign one to the VM (or the scale set), or set credential.clientId to an identity assigned to it'
          : 'IMDS could not issue a token; retried with the next heartbeat';
      const retryable = status >= 500 || status === 429;
      throw httpStatusError(`${where}: HTTP ${status} (${fix})`, status, {
        retryable,
        ...(retryable ? {} : { scope: 'destination' as const }),
      });
    }
    const parsed = parseTokenAnswer(body);
    if (typeof parsed === 'string') {
      throw httpStatusError(`${where}: ${parsed}`, status, { retryable: true });
    }
    this.#cached = parsed;
    return parsed.token;
  }

  #get(signal: AbortSignal, timeoutMs: number): Promise<{ status: number; body: string }> {
    const where = `managed identity token from IMDS (${this.#url.host})`;
    if (signal.aborted) return Promise.reject(abortedError(`${where}: aborted`));
    return new Promise((resolve, reject) => {
      let settled = false;
      const request = http.request(this.#url, {
        method: 'GET',
        headers: { Metadata: 'true', Accept: 'application/json' },
        // IMDS is never proxied, and one token an hour needs no kept-alive socket.
        agent: new http.Agent({ keepAlive: false, proxyEnv: undefined }),
      });
      const finish = (error: Error | undefined, value?: { status: number; body: string }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (error !== undefined) reject(error);
        else resolve(value!);
      };
      const timer = setTimeout(() => {
        request.destroy();
        finish(timeoutError(`${where}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = (): void => {
        request.destroy();
        finish(abortedError(`${where}: aborted`));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish(networkError(`${where}: network error ${error.code ?? error.name}`)),
      );
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY_BYTES) chunks.push(chunk);
        });
        response.on('error', (error: NodeJS.ErrnoException) =>
          finish(networkError(`${where}: network error ${error.code ?? error.name}`)),
        );
        response.on('end', () =>
          finish(undefined, {
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      });
      request.end();
    });
  }
}

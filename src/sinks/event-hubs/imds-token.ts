/**
 * Managed identity tokens for Event Hubs heartbeats over REST (docs/sinks-event-hubs.md, "Heartbeat transport"),
 * without @azure/identity: GET {imds}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=
 * https://eventhubs.azure.net/ with `Metadata: true` (plus client_id or msi_res_id for a user-assigned identity)
 * from the IMDS endpoint the forwarder polls, through the IMDS client's own exchange (src/sources/imds/exchange.ts:
 * node:http, never proxied) on a one-off connection, with a timeout and the caller's AbortSignal. A token is reused until five minutes before it expires. Neither the token nor the
 * answer's body appear in an error.
 */

import { errorMessage } from '../../errors.ts';
import { buildMetadataUrl, oneOffImdsAgent, startExchange } from '../../sources/imds/exchange.ts';
import { abortedError, httpStatusError, networkError, timeoutError } from '../delivery-errors.ts';

/** The audience Event Hubs accepts in an Entra ID token. */
export const EVENT_HUBS_RESOURCE = 'https://eventhubs.azure.net/';
/** The IMDS managed identity API version. */
export const IDENTITY_API_VERSION = '2018-02-01';
/** A cached token is replaced this long before it expires. */
const REFRESH_BEFORE_MS = 5 * 60_000;

/** Which identity: the VM's system-assigned one, or a user-assigned one by client id or ARM resource id. */
export interface ManagedIdentitySelector {
  clientId?: string | undefined;
  resourceId?: string | undefined;
}

/** The token URL at `endpoint` (which may carry a path prefix, as the simulator's per-VM endpoints do). */
export function identityTokenUrl(endpoint: string, identity: ManagedIdentitySelector): URL {
  const url = new URL(buildMetadataUrl(endpoint, 'identity/oauth2/token', IDENTITY_API_VERSION));
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
    // One token a day needs no kept-alive socket.
    const exchange = startExchange(oneOffImdsAgent(), 'GET', this.#url.href);
    return new Promise((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const timer = setTimeout(() => {
        cleanup();
        exchange.request.destroy();
        reject(timeoutError(`${where}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = (): void => {
        cleanup();
        exchange.request.destroy();
        reject(abortedError(`${where}: aborted`));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      exchange.answer.then(
        (answer) => {
          cleanup();
          resolve({ status: answer.status, body: answer.raw.toString('utf8') });
        },
        (error: unknown) => {
          cleanup();
          reject(networkError(`${where}: ${errorMessage(error)}`));
        },
      );
    });
  }
}

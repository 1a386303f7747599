/**
 * HTTP client for the Azure Instance Metadata Service (Scheduled Events, instance metadata, approvals).
 *
 * IMDS must never be reached through a proxy, so requests use node:http with a dedicated http.Agent that has
 * no proxy configuration (./exchange.ts): HTTP_PROXY / HTTPS_PROXY / ALL_PROXY / NODE_USE_ENV_PROXY are ignored
 * whatever NO_PROXY says (global fetch and http.globalAgent may honour them; this client uses neither).
 *
 * When the entry point already sent the first Scheduled Events GET for this client's URL (./first-request.ts),
 * the client takes over that exchange and its connection instead of sending the GET again.
 */
import type { Agent } from 'node:http';
import { parseRetryAfter } from '../../backoff.ts';
import type { ScheduledEventsDocument, VmIdentity } from '../../domain/index.ts';
import type { Logger } from '../../log.ts';
import { excerptOf, ImdsError } from '../imds-protocol/errors.ts';
import {
  decodeImdsBody,
  parseInstanceMetadata,
  parseScheduledEventsDocument,
} from '../imds-protocol/parse.ts';
import {
  DEFAULT_API_VERSION,
  DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
  DEFAULT_IMDS_ENDPOINT,
  DEFAULT_INSTANCE_API_VERSION,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './defaults.ts';
import {
  buildInstanceMetadataUrl,
  buildScheduledEventsUrl,
  type Exchange,
  imdsAgent,
  type RawResponse,
  StaleSocketError,
  startExchange,
} from './exchange.ts';
import { takeFirstRequest } from './first-request.ts';

export { ImdsError, ImdsResponseError } from '../imds-protocol/errors.ts';
export { buildInstanceMetadataUrl, buildScheduledEventsUrl } from './exchange.ts';

export interface ImdsClientOptions {
  /** Default http://169.254.169.254. */
  endpoint?: string;
  /** Scheduled Events api-version, default 2020-07-01. */
  apiVersion?: string;
  /** Instance metadata api-version, default 2021-02-01. */
  instanceApiVersion?: string;
  /** Timeout of Scheduled Events requests until IMDS first answered (default 120,000 ms). */
  firstRequestTimeoutMs?: number;
  /** Timeout of every later request (default 5,000 ms). */
  requestTimeoutMs?: number;
  logger?: Logger;
}

/** One Scheduled Events answer: the parsed document, its text and its bytes. */
export interface ScheduledEventsAnswer {
  document: ScheduledEventsDocument;
  body: string;
  /** The body's bytes as received (compared with the next answer before anything is decoded or parsed). */
  raw?: Buffer;
}

/** The text of an error answer's body, decoded leniently (invalid UTF-8 → U+FFFD): for messages only. */
function bodyText(raw: Buffer): string {
  return raw.toString('utf8');
}

/** Pull IMDS's own message out of an error body ({"error": "..."} or {"message": "..."}), else an excerpt. */
function imdsMessage(body: string): string {
  try {
    const json: unknown = JSON.parse(body);
    if (json && typeof json === 'object') {
      const record = json as Record<string, unknown>;
      for (const key of ['error', 'message', 'Message', 'error_description']) {
        if (typeof record[key] === 'string') return record[key] as string;
      }
    }
  } catch {
    // not JSON: fall through to the excerpt
  }
  return excerptOf(body) || '(empty body)';
}

/** Client for IMDS Scheduled Events, instance metadata and approvals. Call close() when done. */
export class ImdsClient {
  readonly scheduledEventsUrl: string;
  readonly instanceMetadataUrl: string;
  readonly #firstRequestTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #logger: Logger | undefined;
  /** Dedicated agent with no proxy configuration: env proxy variables never apply to IMDS. */
  readonly #agent: Agent;
  /** The entry point's first Scheduled Events GET, until the first getScheduledEvents() takes it. */
  #early: Exchange | undefined;
  #answeredOnce = false;

  constructor(options: ImdsClientOptions = {}) {
    const endpoint = options.endpoint ?? DEFAULT_IMDS_ENDPOINT;
    this.scheduledEventsUrl = buildScheduledEventsUrl(endpoint, options.apiVersion ?? DEFAULT_API_VERSION);
    this.instanceMetadataUrl = buildInstanceMetadataUrl(
      endpoint,
      options.instanceApiVersion ?? DEFAULT_INSTANCE_API_VERSION,
    );
    this.#firstRequestTimeoutMs = options.firstRequestTimeoutMs ?? DEFAULT_FIRST_REQUEST_TIMEOUT_MS;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#logger = options.logger;
    const early = takeFirstRequest(this.scheduledEventsUrl);
    this.#agent = early?.agent ?? imdsAgent();
    this.#early = early?.exchange;
  }

  /**
   * GET the Scheduled Events document. Until IMDS has answered once, waits up to firstRequestTimeoutMs;
   * afterwards requestTimeoutMs. Throws ImdsError for every failure (never returns an empty document).
   *
   * With `previous` (the last answer): when the body's bytes are exactly those of `previous`, returns
   * `previous` itself — the same bytes are the same document, so an unchanged answer costs only the GET
   * (nothing is decoded, parsed or compared field by field).
   */
  async getScheduledEvents(
    signal?: AbortSignal,
    previous?: ScheduledEventsAnswer,
  ): Promise<ScheduledEventsAnswer> {
    const timeoutMs = this.#answeredOnce ? this.#requestTimeoutMs : this.#firstRequestTimeoutMs;
    const response = await this.#send('GET', this.scheduledEventsUrl, undefined, timeoutMs, signal);
    this.#answeredOnce = true;
    this.#throwForStatus(response, this.scheduledEventsUrl);
    if (previous?.raw?.equals(response.raw)) return previous;
    const body = decodeImdsBody(response.raw, 'scheduled events');
    return { document: parseScheduledEventsDocument(body), body, raw: response.raw };
  }

  /** GET /metadata/instance and return the VM identity (compute section). */
  async getInstanceMetadata(signal?: AbortSignal): Promise<VmIdentity> {
    const response = await this.#send(
      'GET',
      this.instanceMetadataUrl,
      undefined,
      this.#requestTimeoutMs,
      signal,
    );
    this.#throwForStatus(response, this.instanceMetadataUrl);
    return parseInstanceMetadata(decodeImdsBody(response.raw, 'instance metadata'));
  }

  /** Approve (start) one or several events: POST {"StartRequests":[{"EventId":...}, ...]}. */
  async approve(eventIds: string[], signal?: AbortSignal): Promise<void> {
    if (eventIds.length === 0) return;
    const body = JSON.stringify({ StartRequests: eventIds.map((EventId) => ({ EventId })) });
    const response = await this.#send('POST', this.scheduledEventsUrl, body, this.#requestTimeoutMs, signal);
    this.#throwForStatus(response, this.scheduledEventsUrl);
    this.#logger?.info({ eventIds }, 'approved scheduled events');
  }

  /** Close kept-alive connections. */
  close(): void {
    this.#early?.request.destroy();
    this.#early = undefined;
    this.#agent.destroy();
  }

  #throwForStatus(response: RawResponse, url: string): void {
    const { status } = response;
    if (status >= 200 && status < 300) return;
    const body = bodyText(response.raw);
    const excerpt = excerptOf(body);
    const retryAfterMs = parseRetryAfter(headerValue(response.headers['retry-after']), Date.now());
    const common = { httpStatus: status, excerpt, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    if (status === 400) {
      throw new ImdsError(
        'bad-request',
        `IMDS rejected the request as malformed (400: ${imdsMessage(body)}); check the api-version and endpoint configuration`,
        common,
      );
    }
    if (status === 404) {
      throw new ImdsError(
        'not-found',
        `IMDS endpoint not available (404 from ${url}): not running on an Azure VM, or the endpoint is wrong`,
        common,
      );
    }
    if (status === 410) throw new ImdsError('gone', `IMDS answered 410 Gone (transient; retrying)`, common);
    if (status === 429) {
      throw new ImdsError('throttled', 'IMDS throttled the request (429; about 5 requests/s per VM)', common);
    }
    if (status >= 500) throw new ImdsError('server-error', `IMDS server error ${status}`, common);
    throw new ImdsError('unexpected-status', `IMDS answered unexpected status ${status}`, common);
  }

  async #send(
    method: 'GET' | 'POST',
    url: string,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<RawResponse> {
    try {
      return await this.#sendOnce(method, url, body, timeoutMs, signal);
    } catch (error) {
      // A kept-alive socket the server had already closed: retry a GET once on a fresh connection.
      if (error instanceof StaleSocketError && method === 'GET') {
        this.#logger?.debug({ code: error.code }, 'IMDS kept-alive connection was closed; retrying once');
        return this.#sendOnce(method, url, body, timeoutMs, signal, true);
      }
      if (error instanceof StaleSocketError) throw error.imdsError;
      throw error;
    }
  }

  #sendOnce(
    method: 'GET' | 'POST',
    url: string,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    isRetry = false,
  ): Promise<RawResponse> {
    if (signal?.aborted) return Promise.reject(new ImdsError('aborted', 'IMDS request aborted'));
    // The entry point's early first GET (./first-request.ts), when it is this request: awaited, not sent again.
    const early = method === 'GET' && url === this.scheduledEventsUrl ? this.#takeEarly() : undefined;
    const exchange = early ?? startExchange(this.#agent, method, url, body, isRetry);
    return new Promise<RawResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(new ImdsError('timeout', `IMDS did not answer within ${timeoutMs} ms (${method} ${url})`));
        exchange.request.destroy();
      }, timeoutMs);
      const onAbort = (): void => {
        cleanup();
        reject(new ImdsError('aborted', 'IMDS request aborted'));
        exchange.request.destroy();
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      exchange.answer.then(
        (answer) => {
          cleanup();
          resolve(answer);
        },
        (error: unknown) => {
          cleanup();
          reject(error);
        },
      );
    });
  }

  #takeEarly(): Exchange | undefined {
    const early = this.#early;
    this.#early = undefined;
    return early;
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

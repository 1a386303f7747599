/**
 * The HTTP delivery core shared by every HTTP sink (webhook, Slack, Teams, Alertmanager, PagerDuty): one POST per call through undici
 * with the proxy rule every HTTP sink shares (src/sinks/proxy.ts: HTTPS_PROXY / HTTP_PROXY / NO_PROXY — IMDS
 * traffic uses its own no-proxy agent and is unaffected), a timeout, no redirect following, the per-sink
 * rate limiter, and classification of the outcome into DeliveryError. undici loads at the first request, not when
 * the sink is created (several MiB of heap an idle forwarder would otherwise carry).
 */
import type { Dispatcher } from 'undici';
import { parseRetryAfter } from '../../backoff.ts';
import { type Clock, systemClock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import type { Secret } from '../../secret.ts';
import { abortedError } from '../delivery-errors.ts';
import { proxyFor } from '../proxy.ts';
import { classifyNetworkError, classifyResponse, safeOrigin, sanitizeBody } from './classify.ts';
import { RateLimiter } from './rate-limiter.ts';
import { type TlsOptions, tlsConnectOptions } from './tls.ts';
import { parseHttpSinkUrl } from './url.ts';

export { DEFAULT_TIMEOUT_MS } from './options.ts';
export { parseHttpSinkUrl } from './url.ts';

/** Largest response body read (error strings are short; the rest is discarded). */
const MAX_RESPONSE_BYTES = 4096;

export interface TransportOptions {
  /** The sink name, used in messages. */
  sinkName: string;
  /**
   * The endpoint: a configured Secret (checked here by the URL rule), or a URL the sink built from checked
   * options (PagerDuty's public endpoint; an Alertmanager's alerts path), whose secret parts are registered already.
   */
  url: Secret | URL;
  timeoutMs: number;
  /** Minimum spacing of requests (0 = unlimited). */
  minIntervalMs: number;
  logger: Logger;
  clock?: Clock;
  /**
   * TLS trust for an https:// URL (src/sinks/http/tls.ts): extra CA, client certificate, server name. Through a
   * proxy it applies to the connection to the destination (inside the CONNECT tunnel), not to the proxy.
   */
  tls?: TlsOptions | undefined;
  /** Defaults to a proxy or direct agent by the shared proxy rule (src/sinks/proxy.ts), decided at creation. */
  dispatcher?: Dispatcher;
}

/** undici's request function and the dispatcher it sends through, ready at the first request. */
interface Http {
  request: typeof import('undici').request;
  dispatcher: Dispatcher;
}

export interface OutgoingRequest {
  body: string;
  /** Called right before sending (after rate limiting), so per-attempt headers such as timestamps are fresh. */
  headers: () => Record<string, string>;
  /**
   * The service's own error text in a failed response's body (PagerDuty's `errors`, Alertmanager's validation
   * message), when the body is more than that; undefined: the body as is. Sanitised like any body (classify.ts).
   */
  errorText?: (body: string) => string | undefined;
  /**
   * For a service that refuses the destination with a status that usually refuses the record (PagerDuty's 400
   * "Invalid routing key"): given the failed status and the service's error text, what the refusal means and
   * its fix, or undefined (src/sinks/http/classify.ts, classifyResponse).
   */
  refusesDestination?: (status: number, errorText: string) => string | undefined;
}

/** Test seams of every HTTP sink: a fake clock and an explicit undici dispatcher. */
export interface HttpSinkDeps {
  clock?: Clock;
  dispatcher?: Dispatcher;
}

/** The options of an HTTP sink that shape its transport (http/options.ts: timeoutMs, minIntervalMs; tls.ts). */
export interface HttpSinkTransportOptions {
  timeoutMs: number;
  minIntervalMs: number;
  tls?: TlsOptions | undefined;
}

/** The HttpTransport of an HTTP sink to `url`: its common options, its logger and the test seams it was given. */
export function httpSinkTransport(
  sinkName: string,
  url: Secret | URL,
  options: HttpSinkTransportOptions,
  logger: Logger,
  deps: HttpSinkDeps,
): HttpTransport {
  return new HttpTransport({
    sinkName,
    url,
    timeoutMs: options.timeoutMs,
    minIntervalMs: options.minIntervalMs,
    tls: options.tls,
    logger,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
  });
}

export class HttpTransport {
  readonly #url: URL;
  readonly #where: string;
  readonly #timeoutMs: number;
  readonly #limiter: RateLimiter;
  readonly #clock: Clock;
  readonly #dispatcher: Dispatcher | undefined;
  /** The proxy to send through (the shared rule, decided at creation); undefined: direct. */
  readonly #proxy: string | undefined;
  readonly #logger: Logger;
  readonly #tls: TlsOptions | undefined;
  #http: Promise<Http> | undefined;
  #closed = false;

  constructor(options: TransportOptions) {
    this.#url = options.url instanceof URL ? options.url : parseHttpSinkUrl(options.url, options.sinkName);
    this.#where = `sink ${options.sinkName} (${safeOrigin(this.#url)})`;
    this.#timeoutMs = options.timeoutMs;
    this.#clock = options.clock ?? systemClock;
    this.#limiter = new RateLimiter(options.minIntervalMs, this.#clock);
    this.#dispatcher = options.dispatcher;
    this.#proxy = options.dispatcher === undefined ? proxyFor(this.#url) : undefined;
    this.#logger = options.logger;
    this.#tls = options.tls;
  }

  /** "sink team-alerts (https://hooks.slack.com)": how this endpoint is named in messages. */
  get where(): string {
    return this.#where;
  }

  /** The endpoint's URL (contains credentials: never log it). */
  get url(): URL {
    return this.#url;
  }

  /** The clock used for rate limiting and timestamps. */
  get clock(): Clock {
    return this.#clock;
  }

  /** POSTs once; resolves on 2xx, rejects with DeliveryError otherwise. */
  async post(outgoing: OutgoingRequest, signal: AbortSignal): Promise<void> {
    try {
      await this.#limiter.acquire(signal);
    } catch {
      throw abortedError(`${this.#where}: delivery aborted`);
    }
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    let status: number;
    let bodyText: string;
    let retryAfterHeader: string | undefined;
    const { request, dispatcher } = await this.#loadHttp();
    try {
      const response = await request(this.#url, {
        method: 'POST',
        body: outgoing.body,
        headers: outgoing.headers(),
        dispatcher,
        signal: combined,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      status = response.statusCode;
      const ra = response.headers['retry-after'];
      retryAfterHeader = Array.isArray(ra) ? ra[0] : ra;
      bodyText = await readLimited(response.body);
    } catch (error) {
      if (signal.aborted) {
        throw abortedError(`${this.#where}: delivery aborted`);
      }
      const failure = classifyNetworkError(
        error,
        this.#where,
        timeout.aborted,
        this.#url.protocol === 'https:',
      );
      this.#logger.debug({ code: failure.code }, failure.message);
      throw failure;
    }
    const retryAfterMs = parseRetryAfter(retryAfterHeader, this.#clock.now());
    const text = status >= 200 && status < 300 ? bodyText : (outgoing.errorText?.(bodyText) ?? bodyText);
    const refusal = status >= 200 && status < 300 ? undefined : outgoing.refusesDestination?.(status, text);
    const failure = classifyResponse(
      { status, body: sanitizeBody(text), retryAfterMs },
      this.#where,
      refusal,
    );
    if (failure === null) {
      this.#logger.debug({ status }, 'http request delivered');
      return;
    }
    if (failure.retryAfterMs !== undefined) this.#limiter.deferFor(failure.retryAfterMs);
    this.#logger.debug({ status, code: failure.code, retryable: failure.retryable }, failure.message);
    throw failure;
  }

  #loadHttp(): Promise<Http> {
    this.#http ??= import('undici').then((undici) => {
      const tls = tlsConnectOptions(this.#tls);
      return {
        request: undici.request,
        dispatcher:
          this.#dispatcher ??
          (this.#proxy === undefined
            ? new undici.Agent({ connect: tls })
            : new undici.ProxyAgent({ uri: this.#proxy, requestTls: tls })),
      };
    });
    return this.#http;
  }

  /**
   * Idempotent: a second close() (shutdown after a failed start, say) resolves without touching undici. Closes
   * the dispatcher this transport created (none before the first request); a given dispatcher is the caller's.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#http === undefined || this.#dispatcher !== undefined) return;
    const { dispatcher } = await this.#http;
    await dispatcher.close();
  }
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_RESPONSE_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
}

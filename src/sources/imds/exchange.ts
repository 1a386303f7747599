/**
 * One HTTP exchange with IMDS, without its deadline: the request is sent at once and every answer event is
 * listened to from the start, so the answer is kept even when nobody awaits it yet (the first Scheduled Events
 * request is sent by the entry point before the pipeline exists: ./first-request.ts). The client
 * (./client.ts) adds the timeout and the abort signal when it awaits an exchange.
 *
 * IMDS must never be reached through a proxy: requests use node:http with a dedicated http.Agent that has no
 * proxy configuration (HTTP_PROXY / HTTPS_PROXY / ALL_PROXY / NODE_USE_ENV_PROXY are ignored whatever NO_PROXY
 * says).
 */
import type { Agent, ClientRequest, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { ImdsError } from '../imds-protocol/errors.ts';
import { DEFAULT_IMDS_ENDPOINT } from './defaults.ts';

const http = process.getBuiltinModule('node:http');

/** Larger answers are rejected (a real document is a few KB). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Node error codes that mean the peer dropped a kept-alive connection we tried to reuse. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body's bytes exactly as received: decoded by decodeImdsBody() for documents (strict UTF-8, BOM
   * accepted) and leniently for error messages, only where the text is needed. */
  raw: Buffer;
}

/** The request failed on a reused kept-alive socket before any answer (the client retries a GET once). */
export class StaleSocketError extends Error {
  readonly code: string;
  readonly imdsError: ImdsError;
  constructor(code: string, imdsError: ImdsError) {
    super(imdsError.message);
    this.code = code;
    this.imdsError = imdsError;
  }
}

export interface Exchange {
  readonly request: ClientRequest;
  /** The complete answer; rejects with ImdsError or StaleSocketError. Never rejects unhandled. */
  readonly answer: Promise<RawResponse>;
}

/** The agent for IMDS: kept-alive connections, no proxy configuration. */
export function imdsAgent(): Agent {
  return new http.Agent({ keepAlive: true, maxSockets: 4, proxyEnv: undefined });
}

/** A one-off connection to IMDS: not kept alive, no proxy configuration. */
export function oneOffImdsAgent(): Agent {
  return new http.Agent({ keepAlive: false, proxyEnv: undefined });
}

/**
 * `{endpoint}/metadata/{path}?api-version=V` (the endpoint may carry a path prefix); refuses an endpoint that is
 * not a plain http:// URL.
 */
export function buildMetadataUrl(endpoint: string, path: string, apiVersion: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new RangeError(
      `invalid IMDS endpoint "${endpoint}": expected a URL such as ${DEFAULT_IMDS_ENDPOINT}`,
    );
  }
  if (url.protocol !== 'http:') {
    throw new RangeError(`invalid IMDS endpoint "${endpoint}": IMDS is plain http:// (got ${url.protocol})`);
  }
  if (apiVersion.trim() === '') throw new RangeError('IMDS api-version must not be empty');
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/metadata/${path}`;
  url.search = '';
  url.hash = '';
  url.searchParams.set('api-version', apiVersion);
  return url.toString();
}

/**
 * `{endpoint}/metadata/scheduledevents?api-version=V`. The endpoint may carry a path prefix
 * (e.g. http://127.0.0.1:8080/vms/vm-3, used by the simulator to serve many VMs).
 */
export function buildScheduledEventsUrl(endpoint: string, apiVersion: string): string {
  return buildMetadataUrl(endpoint, 'scheduledevents', apiVersion);
}

/** `{endpoint}/metadata/instance?api-version=V`. */
export function buildInstanceMetadataUrl(endpoint: string, apiVersion: string): string {
  return buildMetadataUrl(endpoint, 'instance', apiVersion);
}

/** Sends one request now and collects its answer. `isRetry`: a one-off connection (no stale-socket retry). */
export function startExchange(
  agent: Agent,
  method: 'GET' | 'POST',
  url: string,
  body?: string,
  isRetry = false,
): Exchange {
  const headers: OutgoingHttpHeaders = { Metadata: 'true', Accept: 'application/json' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  const request = http.request(url, {
    method,
    headers,
    agent: isRetry ? oneOffImdsAgent() : agent,
  });
  const answer = new Promise<RawResponse>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | undefined, value?: RawResponse): void => {
      if (settled) return;
      settled = true;
      if (error) reject(error);
      else resolve(value!);
    };
    let responded = false;
    request.on('error', (error: NodeJS.ErrnoException) => {
      const network = new ImdsError('network', `IMDS request failed (${method} ${url}): ${error.message}`, {
        cause: error,
      });
      if (!responded && !isRetry && request.reusedSocket && STALE_SOCKET_CODES.has(error.code ?? '')) {
        finish(new StaleSocketError(error.code ?? '', network));
      } else {
        finish(network);
      }
    });
    request.on('response', (response) => {
      responded = true;
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) {
          finish(
            new ImdsError('invalid-response', `IMDS answer is larger than ${MAX_BODY_BYTES} bytes`, {
              httpStatus: response.statusCode ?? 0,
              retryable: false,
            }),
          );
          request.destroy();
          return;
        }
        chunks.push(chunk);
      });
      response.on('error', (error) => {
        finish(new ImdsError('network', `IMDS connection broke while reading the answer: ${error.message}`));
      });
      response.on('aborted', () => {
        finish(new ImdsError('network', 'IMDS connection closed before the answer was complete'));
      });
      response.on('end', () => {
        if (!response.complete) {
          finish(new ImdsError('network', 'IMDS connection closed before the answer was complete'));
          return;
        }
        finish(undefined, {
          status: response.statusCode ?? 0,
          headers: response.headers,
          raw: Buffer.concat(chunks, size), // a copy: never pins the socket's read buffer
        });
      });
    });
  });
  // Rejections are observed by whoever awaits the exchange; an exchange nobody awaits must not crash the process.
  answer.catch(() => {});
  request.end(body);
  return { request, answer };
}

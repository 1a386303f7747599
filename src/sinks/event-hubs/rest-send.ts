/**
 * The I/O of heartbeats over the Event Hubs REST API (./rest.ts builds the request): one HTTPS POST with node:https,
 * a timeout and the caller's AbortSignal, the outcome classified like every HTTP sink's (src/sinks/http/classify.ts).
 * Direct, never through HTTPS_PROXY: the sink's records go over AMQP on TCP 5671 straight to the namespace (not AMQP
 * over WebSockets, the SDK's only way through an HTTP proxy), and a heartbeat must reach the hub exactly when the
 * records can (docs/sinks-event-hubs.md).
 */
import { REDACTED } from '../../redact.ts';
import { abortedError } from '../delivery-errors.ts';
import { classifyNetworkError, classifyResponse, sanitizeBody } from '../http/classify.ts';
import type { DeliveryError } from '../types.ts';
import type { RestRequest } from './rest.ts';

const https = process.getBuiltinModule('node:https');

/** Largest response body read (an error text is short; the rest is discarded). */
const MAX_RESPONSE_BYTES = 4096;

/** What a refusal means for the REST path, and its fix (the status is 401, 403 or 404). */
const REFUSALS: ReadonlyMap<number, string> = new Map([
  [
    401,
    'Event Hubs refuses the credentials; fix: check the connection string\'s key (and that its policy has the Send claim), or give the identity the role "Azure Event Hubs Data Sender"',
  ],
  [
    403,
    'Event Hubs forbids the send (a policy without the Send claim, a disabled hub or an exhausted quota); fix: check the policy, the hub status and the throughput units',
  ],
  [
    404,
    "no such event hub in this namespace; fix: check eventHubName (or the connection string's EntityPath)",
  ],
]);

/** Removes `secrets` (the Authorization value and its parts) from a server's text, then sanitises it. */
export function scrubResponseBody(body: string, secrets: readonly string[]): string {
  let text = body;
  for (const secret of secrets) {
    if (secret.length >= 8 && text.includes(secret)) text = text.split(secret).join(REDACTED);
  }
  return sanitizeBody(text);
}

/** The strings of an Authorization value a server could echo: the whole, the token, a SAS signature both ways. */
export function authorizationSecrets(authorization: string): string[] {
  const secrets = [authorization];
  const token = authorization.replace(/^(Bearer|SharedAccessSignature)\s+/i, '');
  secrets.push(token);
  const sig = /(?:^|&)sig=([^&]+)/.exec(token)?.[1];
  if (sig !== undefined) {
    secrets.push(sig);
    try {
      secrets.push(decodeURIComponent(sig));
    } catch {
      // not URL-encoded
    }
  }
  return secrets;
}

/**
 * Sends one request. Resolves on 201 (any 2xx); rejects with a DeliveryError that names the hub by scheme and host
 * only and never carries the key, the signature, the token or the connection string — also when the server echoes
 * them.
 */
export function sendRestEvent(
  request: RestRequest,
  options: { signal: AbortSignal; timeoutMs: number; where: string },
): Promise<void> {
  const { signal, timeoutMs, where } = options;
  if (signal.aborted) return Promise.reject(abortedError(`${where}: aborted`));
  const secrets = authorizationSecrets(request.headers.authorization ?? '');
  return new Promise<void>((resolve, reject) => {
    let timedOut = false;
    let settled = false;
    const finish = (error: DeliveryError | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (error === null) resolve();
      else reject(error);
    };
    const req = https.request(request.url, {
      method: 'POST',
      headers: request.headers,
      agent: false, // one request per heartbeat: no idle socket kept between them
    });
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new Error('timeout'));
    }, timeoutMs);
    const onAbort = (): void => {
      req.destroy();
      finish(abortedError(`${where}: aborted`));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => finish(classifyNetworkError(error, where, timedOut, true)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size >= MAX_RESPONSE_BYTES) return;
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('error', (error) => finish(classifyNetworkError(error, where, timedOut, true)));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const body = scrubResponseBody(
          Buffer.concat(chunks).toString('utf8').slice(0, MAX_RESPONSE_BYTES),
          secrets,
        );
        finish(classifyResponse({ status, body, retryAfterMs: undefined }, where, REFUSALS.get(status)));
      });
    });
    req.end(request.body);
  });
}

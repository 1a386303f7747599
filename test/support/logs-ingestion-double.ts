/**
 * A test double of the Azure Monitor Logs Ingestion API (Azure cannot run here): HTTPS on 127.0.0.1 with a
 * certificate the test makes (test/support/tls-certs.ts). It checks the request shape Azure documents for
 * `POST {endpoint}/dataCollectionRules/{ruleId}/streams/{streamName}?api-version=2023-01-01`:
 * `Content-Encoding: gzip`, `Content-Type: application/json`, `Authorization: Bearer <token>` whose audience
 * (`aud`) is the monitor audience, a gzipped JSON array of objects, a known DCR immutable id and stream (else
 * 404), a request of at most `maxRequestBytes` (else 413, as Azure does above 1 MB); answers 204. A shape
 * violation answers 400 with Azure's error JSON and is kept in `violations()`, so a test can assert none.
 *
 * Faults: `setDefault` (every following request), `enqueue` (the next requests, in order) and `setResponder`
 * (decide by content) answer with any status, headers and body (Azure's error JSON by `error(code, message)`),
 * or never answer (`hang`). Accepted rows are kept in arrival order (`rows()`); every request in `requests()`.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decodeJwtPayload } from '../../src/simulator/identity.ts';

export type LogRow = Record<string, unknown>;

/** What the double answers. */
export type IngestionAnswer =
  | { status: number; headers?: Record<string, string>; body?: string }
  | { hang: true };

/** One request as the double saw it. */
export interface IngestionRequest {
  path: string;
  ruleId: string | undefined;
  streamName: string | undefined;
  apiVersion: string | null;
  contentEncoding: string | undefined;
  contentType: string | undefined;
  /** The bearer token (never logged by the double). */
  token: string | undefined;
  /** Compressed request size. */
  bytes: number;
  /** Uncompressed body size. */
  jsonBytes: number;
  rows: LogRow[];
  /** The status answered (undefined while hanging). */
  status?: number;
}

export interface LogsIngestionDoubleOptions {
  key: string;
  cert: string;
  /** DCR immutable id → the stream names it declares. */
  rules: Record<string, string[]>;
  /** The `aud` claim tokens must carry (default https://monitor.azure.com). */
  audience?: string;
  /** Largest uncompressed body accepted (default 1 MiB, the API's limit); larger → 413. */
  maxRequestBytes?: number;
}

/** Azure's error body: {"error":{"code":…,"message":…}}. */
export function azureError(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

export class LogsIngestionDouble {
  readonly #server: Server;
  readonly #options: LogsIngestionDoubleOptions;
  readonly #requests: IngestionRequest[] = [];
  readonly #rows: LogRow[] = [];
  readonly #violations: string[] = [];
  readonly #queue: IngestionAnswer[] = [];
  readonly #hanging = new Set<import('node:http').ServerResponse>();
  #default: IngestionAnswer = { status: 204 };
  #responder: ((request: IngestionRequest) => IngestionAnswer | undefined) | undefined;
  maxRequestBytes: number;

  private constructor(server: Server, options: LogsIngestionDoubleOptions) {
    this.#server = server;
    this.#options = options;
    this.maxRequestBytes = options.maxRequestBytes ?? 1024 * 1024;
  }

  static async start(options: LogsIngestionDoubleOptions): Promise<LogsIngestionDouble> {
    let double: LogsIngestionDouble | undefined;
    const server = createServer({ key: options.key, cert: options.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => double!.#handle(req, res, Buffer.concat(chunks)));
    });
    double = new LogsIngestionDouble(server, options);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return double;
  }

  /** https://127.0.0.1:<port> — the sink's `endpoint`. */
  get url(): string {
    return `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  requests(): readonly IngestionRequest[] {
    return this.#requests;
  }

  /** Rows of every request answered 204, in arrival order. */
  rows(): readonly LogRow[] {
    return this.#rows;
  }

  violations(): readonly string[] {
    return this.#violations;
  }

  /** Every bearer token seen. */
  tokens(): string[] {
    return [...new Set(this.#requests.map((r) => r.token).filter((t): t is string => t !== undefined))];
  }

  setDefault(answer: IngestionAnswer): void {
    this.#default = answer;
  }

  enqueue(...answers: IngestionAnswer[]): void {
    this.#queue.push(...answers);
  }

  setResponder(responder: ((request: IngestionRequest) => IngestionAnswer | undefined) | undefined): void {
    this.#responder = responder;
  }

  /** Back to answering 204, no queued answers or responder; hanging requests are answered 503. */
  reset(): void {
    this.#default = { status: 204 };
    this.#queue.length = 0;
    this.#responder = undefined;
    this.#releaseHanging();
  }

  async close(): Promise<void> {
    this.#releaseHanging();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #releaseHanging(): void {
    for (const res of this.#hanging) res.destroy();
    this.#hanging.clear();
  }

  #handle(
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
    raw: Buffer,
  ): void {
    const url = new URL(req.url ?? '/', 'https://double');
    const match = /^\/dataCollectionRules\/([^/]+)\/streams\/([^/]+)$/.exec(url.pathname);
    const auth = req.headers.authorization;
    const request: IngestionRequest = {
      path: url.pathname,
      ruleId: match ? decodeURIComponent(match[1]!) : undefined,
      streamName: match ? decodeURIComponent(match[2]!) : undefined,
      apiVersion: url.searchParams.get('api-version'),
      contentEncoding: req.headers['content-encoding'],
      contentType: req.headers['content-type'],
      token: auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined,
      bytes: raw.length,
      jsonBytes: 0,
      rows: [],
    };
    this.#requests.push(request);
    this.#answer(request, res, this.#check(req, url, match !== null, request, raw));
  }

  #answer(request: IngestionRequest, res: import('node:http').ServerResponse, a: IngestionAnswer): void {
    if ('hang' in a) {
      this.#hanging.add(res);
      res.on('close', () => this.#hanging.delete(res));
      return;
    }
    request.status = a.status;
    if (a.status === 204) this.#rows.push(...request.rows);
    res.writeHead(a.status, {
      ...(a.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...a.headers,
    });
    res.end(a.body);
  }

  /** The answer for a request: a refusal when its shape is wrong, else the scripted answer (default 204). */
  #check(
    req: import('node:http').IncomingMessage,
    url: URL,
    matched: boolean,
    request: IngestionRequest,
    raw: Buffer,
  ): IngestionAnswer {
    const refuse = (status: number, code: string, message: string): IngestionAnswer => {
      if (status === 400) this.#violations.push(message);
      return { status, body: azureError(code, message) };
    };
    if (req.method !== 'POST') return refuse(400, 'InvalidRequest', `method ${req.method}, expected POST`);
    if (!matched) return refuse(404, 'NotFound', `no such path ${url.pathname}`);
    if (request.apiVersion !== '2023-01-01') {
      return refuse(400, 'InvalidApiVersion', `api-version ${request.apiVersion}, expected 2023-01-01`);
    }
    if (request.token === undefined) {
      return refuse(401, 'InvalidToken', 'Authorization header missing or not a Bearer token');
    }
    let aud: unknown;
    try {
      aud = decodeJwtPayload(request.token).aud;
    } catch {
      return refuse(401, 'InvalidToken', 'the bearer token is not a JWT');
    }
    const audience = this.#options.audience ?? 'https://monitor.azure.com';
    if (aud !== audience && aud !== `${audience}/`) {
      return refuse(401, 'InvalidToken', `token audience ${String(aud)}, expected ${audience}`);
    }
    if (request.contentEncoding !== 'gzip') {
      return refuse(
        400,
        'InvalidContentEncoding',
        `Content-Encoding ${request.contentEncoding}, expected gzip`,
      );
    }
    if (!request.contentType?.startsWith('application/json')) {
      return refuse(
        400,
        'InvalidContentType',
        `Content-Type ${request.contentType}, expected application/json`,
      );
    }
    let json: Buffer;
    try {
      json = gunzipSync(raw);
    } catch {
      return refuse(400, 'InvalidPayload', 'the body is not gzip');
    }
    request.jsonBytes = json.length;
    let body: unknown;
    try {
      body = JSON.parse(json.toString('utf8'));
    } catch {
      return refuse(400, 'InvalidPayload', 'the body is not JSON');
    }
    if (
      !Array.isArray(body) ||
      !body.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r))
    ) {
      return refuse(400, 'InvalidPayload', 'the body is not a JSON array of objects');
    }
    request.rows = body as LogRow[];
    const streams = this.#options.rules[request.ruleId!];
    if (streams === undefined) {
      return {
        status: 404,
        body: azureError('NotFound', `Data collection rule with immutable Id '${request.ruleId}' not found.`),
      };
    }
    if (!streams.includes(request.streamName!)) {
      return {
        status: 404,
        body: azureError(
          'NotFound',
          `Stream '${request.streamName}' is not declared by the data collection rule.`,
        ),
      };
    }
    if (json.length > this.maxRequestBytes) {
      return {
        status: 413,
        body: azureError(
          'ContentLengthLimitExceeded',
          `Maximum allowed content length: ${this.maxRequestBytes} bytes. Provided content length: ${json.length} bytes.`,
        ),
      };
    }
    return this.#queue.shift() ?? this.#responder?.(request) ?? this.#default;
  }
}

/**
 * A recording HTTP server on 127.0.0.1 for webhook-style sinks: records every request (method, path, headers,
 * raw body) and answers with scripted responses (status, body, headers such as Retry-After, delays, hanging
 * or dropped connections), falling back to a default response. Also a recording forward proxy for proxy tests.
 */
import { once } from 'node:events';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import { type ServerTls, serverTlsOptions } from './tls-certs.ts';
import { waitFor } from './wait.ts';

export interface RecordedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ScriptedResponse {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long (real time, server side) before answering. */
  delayMs?: number;
  /** Never answer (the connection stays open until the server closes). */
  hang?: boolean;
  /** Destroy the connection without answering. */
  drop?: boolean;
}

export class HttpSinkServer {
  readonly requests: RecordedRequest[] = [];
  readonly #server: http.Server;
  readonly #script: ScriptedResponse[] = [];
  readonly #sockets = new Set<Socket>();
  #default: ScriptedResponse;
  #responder: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined;

  readonly #scheme: 'http' | 'https';

  private constructor(defaultResponse: ScriptedResponse, tls: ServerTls | undefined) {
    this.#default = defaultResponse;
    this.#scheme = tls === undefined ? 'http' : 'https';
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.#handle(req, res);
    this.#server =
      tls === undefined ? http.createServer(handler) : https.createServer(serverTlsOptions(tls), handler);
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  /**
   * Starts a server on 127.0.0.1 with an ephemeral port. Default response: 200 "ok". With `options.tls`, an
   * HTTPS server (test/support/tls-certs.ts), requiring a client certificate when `tls.clientCa` is set.
   */
  static async start(
    defaultResponse: ScriptedResponse = { status: 200, body: 'ok' },
    options: { tls?: ServerTls } = {},
  ): Promise<HttpSinkServer> {
    const server = new HttpSinkServer(defaultResponse, options.tls);
    server.#server.listen(0, '127.0.0.1');
    await once(server.#server, 'listening');
    return server;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** http://127.0.0.1:<port><path> (https:// for a TLS server) */
  url(path = '/hook'): string {
    return `${this.#scheme}://127.0.0.1:${this.port}${path}`;
  }

  /** Queues responses for the next requests, in order; afterwards the default response applies. */
  enqueue(...responses: ScriptedResponse[]): void {
    this.#script.push(...responses);
  }

  setDefault(response: ScriptedResponse): void {
    this.#default = response;
  }

  /**
   * Answers by content: `responder` sees each request first; what it returns wins over the script and the
   * default (undefined: not this one). E.g. reject the request that carries one particular record.
   */
  setResponder(responder: ((request: RecordedRequest) => ScriptedResponse | undefined) | undefined): void {
    this.#responder = responder;
  }

  /** Resolves once at least `count` requests have been recorded. */
  async waitForRequests(count: number, timeoutMs = 10_000): Promise<RecordedRequest[]> {
    await waitFor(() => this.requests.length >= count, `${count} request(s) at the sink server`, {
      timeoutMs,
    });
    return this.requests;
  }

  /** Recorded bodies parsed as JSON. */
  jsonBodies(): unknown[] {
    return this.requests.map((r) => JSON.parse(r.body));
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
    await once(this.#server, 'close').catch(() => undefined);
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      this.requests.push(request);
      const response = this.#responder?.(request) ?? this.#script.shift() ?? this.#default;
      if (response.hang) return;
      if (response.drop) {
        req.socket.destroy();
        return;
      }
      const answer = () => {
        res.writeHead(response.status ?? 200, { 'content-type': 'text/plain', ...(response.headers ?? {}) });
        res.end(response.body ?? '');
      };
      if (response.delayMs) setTimeout(answer, response.delayMs);
      else answer();
    });
  }
}

/** One request seen by the RecordingProxy: absolute-form URL for plain HTTP, or "CONNECT host:port". */
export interface ProxiedRequest {
  method: string;
  target: string;
}

/**
 * A forward proxy on 127.0.0.1 that records what passes through it and forwards it: absolute-form HTTP
 * requests (how undici proxies http:// targets) and CONNECT tunnels (https:// targets).
 */
export class RecordingProxy {
  readonly seen: ProxiedRequest[] = [];
  /** Called for every request as it is recorded (the proxy process logs it; test/support/proxy-process.ts). */
  onSeen: ((request: ProxiedRequest) => void) | undefined;
  readonly #server: http.Server;
  readonly #sockets = new Set<Socket>();

  private constructor() {
    this.#server = http.createServer((req, res) => {
      const target = req.url ?? '';
      this.#record({ method: req.method ?? '', target });
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        res.writeHead(400).end('proxy expects absolute-form URLs');
        return;
      }
      const headers = { ...req.headers };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      const upstream = http.request(
        { host: url.hostname, port: url.port, path: url.pathname + url.search, method: req.method, headers },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end('upstream error'));
      req.pipe(upstream);
    });
    this.#server.on('connect', (req: http.IncomingMessage, client: Socket, head: Buffer) => {
      const target = req.url ?? '';
      this.#record({ method: 'CONNECT', target });
      const [host, port] = target.split(':');
      const upstream = net.connect(Number(port), host ?? '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  #record(request: ProxiedRequest): void {
    this.seen.push(request);
    this.onSeen?.(request);
  }

  static async start(): Promise<RecordingProxy> {
    const proxy = new RecordingProxy();
    proxy.#server.listen(0, '127.0.0.1');
    await once(proxy.#server, 'listening');
    return proxy;
  }

  /** http://127.0.0.1:<port> */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
    await once(this.#server, 'close').catch(() => undefined);
  }
}

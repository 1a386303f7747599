/**
 * The optional telemetry HTTP listener (default 127.0.0.1): GET /healthz (process alive), GET /readyz
 * (200 when ready, 503 otherwise, JSON HealthState body either way) and GET /metrics (Prometheus text).
 * Every body passes through the redactor (src/redact.ts).
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../errors.ts';
import { LIVENESS_BODY } from '../probes.ts';
import { sendPrometheusMetrics } from '../prometheus.ts';
import { redactText } from '../redact.ts';
import type { HealthState } from './health.ts';
import type { ForwarderMetrics } from './metrics.ts';

const { createServer } = process.getBuiltinModule('node:http');

export interface TelemetryServerOptions {
  /** Bind address; default 127.0.0.1 (use 0.0.0.0 / :: only when a scraper on another host needs it). */
  host?: string;
  /** TCP port; 0 picks a free one (tests). */
  port: number;
  metrics: ForwarderMetrics;
  /** Current health (e.g. `() => tracker.snapshot()`). */
  health: () => HealthState;
}

export interface TelemetryServer {
  /** e.g. http://127.0.0.1:9464 */
  url: string;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(redactText(JSON.stringify(body)));
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  options: TelemetryServerOptions,
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  switch (path) {
    case '/healthz':
      sendJson(res, 200, LIVENESS_BODY);
      return;
    case '/readyz': {
      const state = options.health();
      sendJson(res, state.ready ? 200 : 503, state);
      return;
    }
    case '/metrics':
      // Label values (sink names, VM identity) can be configured text: the shared writer redacts the body.
      await sendPrometheusMetrics(res, options.metrics.registry);
      return;
    default:
      sendJson(res, 404, { error: `no such endpoint ${path}; try /healthz, /readyz or /metrics` });
  }
}

/** Start the listener; rejects with a clear message when the port cannot be bound. */
export async function startTelemetryServer(options: TelemetryServerOptions): Promise<TelemetryServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    handle(req, res, options).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: errorMessage(error) });
      else res.destroy();
    });
  });
  server.listen(options.port, host);
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`cannot listen for telemetry on ${host}:${options.port}: ${code}`, { cause: error });
  }
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The Prometheus scrape response shared by the HTTP servers that expose metrics (the forwarder's telemetry
 * listener, the fleet's dashboard server): each keeps its own private prom-client Registry and answers
 * `GET /metrics` with this. Label values can be configured text (sink names, VM identity, locations), so the
 * body passes through the redactor (src/redact.ts).
 */
import type { ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { redactText } from './redact.ts';

/** Writes the registry's text exposition as a 200 response (never cached). */
export async function sendPrometheusMetrics(
  res: ServerResponse,
  registry: Pick<Registry, 'metrics' | 'contentType'>,
  headers: Record<string, string> = {},
): Promise<void> {
  const text = await registry.metrics();
  res.writeHead(200, { ...headers, 'content-type': registry.contentType, 'cache-control': 'no-store' });
  res.end(redactText(text));
}

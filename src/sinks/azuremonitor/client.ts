/**
 * The Logs Ingestion client, built from the sink's options. Loaded by the sink at its first delivery (with the
 * Azure SDKs it imports: @azure/monitor-ingestion, @azure/identity), never at start-up.
 *
 * - The SDK's own retries are off (maxRetries 0): the delivery engine retries with its backoff and honours
 *   Retry-After.
 * - Token scope `<audience>/.default` (the SDK's: https://monitor.azure.com/.default in the public cloud).
 * - Every token the credential hands out is registered with the redactor (src/redact.ts), so it can appear in
 *   no log line or stored error even when a server echoes it.
 * - Connections: a node:https Agent of our own carrying the `tls` options (extra CA, client certificate, server
 *   name), or, when the project's proxy rule (src/sinks/proxy.ts) picks a proxy for the endpoint, the SDK's proxy
 *   support with that proxy (the SDK cannot combine its proxy with TLS options; the factory refuses both).
 */
import type { TokenCredential } from '@azure/identity';
import { LogsIngestionClient } from '@azure/monitor-ingestion';
import { createCredential } from '../../azure/credentials.ts';
import { registerSecret } from '../../redact.ts';
import { tlsConnectOptions } from '../http/tls.ts';
import type { AzureMonitorSinkOptions } from './options.ts';

const https = process.getBuiltinModule('node:https');

/** The client and what to release when the sink closes. */
export interface IngestionClient {
  client: LogsIngestionClient;
  close(): void;
}

/** A credential that registers every token it returns with the redactor. */
export function redactingCredential(inner: TokenCredential): TokenCredential {
  return {
    async getToken(scopes, options) {
      const token = await inner.getToken(scopes, options);
      if (token !== null) registerSecret(token.token);
      return token;
    },
  };
}

/** The SDK's proxy settings for a proxy URL (from src/sinks/proxy.ts proxyFor). */
function proxySettings(proxy: string) {
  const url = new URL(proxy);
  return {
    host: `${url.protocol}//${url.hostname}`,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
  };
}

/** Builds the client for the options (does not connect). `proxy`: the proxy for the endpoint, if any. */
export function createIngestionClient(
  options: AzureMonitorSinkOptions,
  proxy: string | undefined,
  credentialFactory: (c: AzureMonitorSinkOptions['credential']) => TokenCredential = createCredential,
): IngestionClient {
  const agent =
    proxy === undefined ? new https.Agent({ keepAlive: true, ...tlsConnectOptions(options.tls) }) : undefined;
  const client = new LogsIngestionClient(
    options.endpoint,
    redactingCredential(credentialFactory(options.credential)),
    {
      audience: options.audience,
      retryOptions: { maxRetries: 0 },
      userAgentOptions: { userAgentPrefix: 'scheduled-events-forwarder' },
      ...(agent === undefined ? { proxyOptions: proxySettings(proxy!) } : { agent }),
    },
  );
  return { client, close: () => agent?.destroy() };
}

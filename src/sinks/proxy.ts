/**
 * The proxy rule shared by every sink that speaks HTTP (webhook, slack, teams, otel http/protobuf and
 * http/json). Decided once per sink for its fixed endpoint, from the environment when the sink is created:
 *
 * - `https://` endpoints use `HTTPS_PROXY`, `http://` endpoints use `HTTP_PROXY` (the lower-case form wins when
 *   both are set, as in curl and undici); an empty value means no proxy. `ALL_PROXY` is not used.
 * - `NO_PROXY` (comma- or space-separated) bypasses the proxy for: `*` (everything), a host name and its
 *   subdomains (`example.com`, `.example.com` and `*.example.com` all match `example.com` and `a.example.com`),
 *   an exact IP address (`10.0.0.5`, `::1`), each optionally with `:port` (then only that port matches).
 *   CIDR ranges are not supported.
 *
 * IMDS never uses a proxy (src/sources/imds/client.ts has its own agent). gRPC (otel protocol grpc) is
 * proxied by @grpc/grpc-js itself from `grpc_proxy`/`https_proxy`/`http_proxy` and `no_grpc_proxy`/`no_proxy`;
 * Event Hubs AMQP over TCP 5671 cannot use an HTTP proxy (docs/delivery.md, "Proxies").
 * Light on purpose (imports only the dependency-free redactor): sink factories load it.
 */
import { registerUrlCredentials } from '../redact.ts';

export type Env = Record<string, string | undefined>;

function variable(env: Env, name: string): string | undefined {
  const value = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function defaultPort(protocol: string): string {
  return protocol === 'https:' ? '443' : '80';
}

/** True when NO_PROXY says `url` is reached directly. */
export function bypassesProxy(url: URL, noProxy: string | undefined): boolean {
  if (noProxy === undefined) return false;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || defaultPort(url.protocol);
  for (const raw of noProxy.split(/[\s,]+/)) {
    let entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    let entryPort: string | undefined;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed) {
      entry = bracketed[1]!;
      entryPort = bracketed[2];
    } else {
      const hostPort = /^([^:]+):(\d+)$/.exec(entry);
      if (hostPort) {
        entry = hostPort[1]!;
        entryPort = hostPort[2];
      }
    }
    if (entryPort !== undefined && entryPort !== port) continue;
    entry = entry.replace(/^\*?\./, '');
    if (host === entry || host.endsWith(`.${entry}`)) return true;
  }
  return false;
}

/** The proxy URL to use for requests to `url`, or undefined for a direct connection. */
export function proxyFor(url: URL, env: Env = process.env): string | undefined {
  const proxy = variable(env, url.protocol === 'https:' ? 'https_proxy' : 'http_proxy');
  if (proxy === undefined) return undefined;
  registerUrlCredentials(proxy); // http://user:PASS@proxy:3128: the password is a secret like any other
  return bypassesProxy(url, variable(env, 'no_proxy')) ? undefined : proxy;
}

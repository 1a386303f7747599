/**
 * IMDS must never be reached through a proxy (a classic field failure: HTTP_PROXY set for the sinks, NO_PROXY
 * forgotten, IMDS requests go to the proxy). The client runs in a child process whose environment points every
 * proxy variable at a recording proxy on 127.0.0.1; the proxy must receive none of the IMDS requests while
 * the control requests of the same process prove the proxy settings are live there.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, LocalImds } from './local-imds.ts';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./proxy-child.ts', import.meta.url));

const imds = new LocalImds();
const proxied: string[] = [];
/** Records every request (plain proxy requests and CONNECT tunnels) and answers 200 itself. */
const proxy = http.createServer((req, res) => {
  proxied.push(`${req.method} ${req.url}`);
  res.end('proxied');
});
proxy.on('connect', (req, socket) => {
  proxied.push(`CONNECT ${req.url}`);
  socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
});

beforeAll(async () => {
  await imds.start();
  imds.handler = (req, res) => {
    if (req.url.startsWith('/metadata/instance')) answer(res, 200, '{"compute":{"name":"vm-proxy-test"}}');
    else if (req.method === 'POST') answer(res, 200, '');
    else answer(res, 200, '{"DocumentIncarnation":42,"Events":[]}');
  };
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await imds.stop();
  proxy.closeAllConnections();
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
});

describe('IMDS requests ignore proxy settings', () => {
  it.each([
    ['NO_PROXY empty', ''],
    ['NO_PROXY naming other hosts only', 'example.com,.corp.internal'],
  ])('with HTTP_PROXY/HTTPS_PROXY/ALL_PROXY/NODE_USE_ENV_PROXY set (%s)', async (_name, noProxy) => {
    proxied.length = 0;
    imds.requests.length = 0;
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      SystemRoot: process.env.SystemRoot,
      NODE_USE_ENV_PROXY: '1',
      HTTP_PROXY: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      ALL_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      https_proxy: proxyUrl,
      all_proxy: proxyUrl,
      NO_PROXY: noProxy,
      no_proxy: noProxy,
    };
    // The control URL points at the IMDS server too: only a proxy-honouring client is diverted.
    const { stdout } = await run(process.execPath, [child, imds.url, imds.url], { env, timeout: 30_000 });
    const result = JSON.parse(stdout.trim()) as Record<string, unknown>;

    expect(result).toMatchObject({ incarnation: 42, vmName: 'vm-proxy-test' });
    expect(imds.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual([
      'GET /metadata/scheduledevents',
      'POST /metadata/scheduledevents',
      'GET /metadata/instance',
    ]);
    // Controls: the same process's fetch (tunnels with CONNECT, which the recording proxy refuses) and
    // global-agent http.get both went to the proxy — and nothing else did: the proxy saw exactly these two.
    const host = new URL(imds.url).host;
    expect(result.httpControl).toBe(200);
    expect(proxied).toEqual([`CONNECT ${host}`, `GET ${imds.url}/control-http`]);
    expect(proxied.some((line) => line.includes('/metadata/'))).toBe(false);
  });
});

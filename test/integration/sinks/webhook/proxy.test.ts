/**
 * Proxy behaviour: with HTTP_PROXY / HTTPS_PROXY pointing at a recording proxy on 127.0.0.1, webhook traffic
 * goes through it (absolute-form for http://, CONNECT for https://) and IMDS traffic (helper A's ImdsClient,
 * which uses a dedicated no-proxy agent) does not. NO_PROXY bypasses the proxy for webhooks.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createSlackSink,
  createTeamsSink,
  slackOptionsSchema,
  teamsOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { ImdsClient } from '../../../../src/sources/imds/client.ts';
import { HttpSinkServer, RecordingProxy } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, signal } from '../../../support/sink-tests.ts';

let server: HttpSinkServer;
let proxy: RecordingProxy;
beforeAll(async () => {
  server = await HttpSinkServer.start();
  proxy = await RecordingProxy.start();
});
afterAll(async () => {
  await server.close();
  await proxy.close();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

function useProxy(noProxy = ''): void {
  for (const name of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy']) vi.stubEnv(name, proxy.url);
  vi.stubEnv('NO_PROXY', noProxy);
  vi.stubEnv('no_proxy', noProxy);
}

describe('webhook requests honour the proxy environment', () => {
  it('http:// webhook goes through HTTP_PROXY and still arrives', async () => {
    useProxy();
    const sink = createSlackSink(
      'alerts',
      slackOptionsSchema().parse({ url: server.url('/via-proxy') }),
      context(),
    );
    await sink.deliver([makeRecord('scheduled')], signal());
    await sink.close?.();
    expect(proxy.seen).toContainEqual({ method: 'POST', target: server.url('/via-proxy') });
    expect(server.requests.map((r) => r.url)).toContain('/via-proxy');
  });

  it('https:// webhook is tunnelled with CONNECT through HTTPS_PROXY', async () => {
    useProxy();
    const target = `https://127.0.0.1:${server.port}/tls`;
    const sink = createTeamsSink(
      'teams',
      teamsOptionsSchema().parse({ url: target, timeoutMs: 5000 }),
      context(),
    );
    // The sink server speaks plain HTTP, so the TLS handshake through the tunnel fails: retryable network error.
    await expect(sink.deliver([makeRecord('scheduled')], signal())).rejects.toMatchObject({
      retryable: true,
    });
    await sink.close?.();
    expect(proxy.seen).toContainEqual({ method: 'CONNECT', target: `127.0.0.1:${server.port}` });
  });

  it('NO_PROXY bypasses the proxy', async () => {
    useProxy('127.0.0.1');
    const before = proxy.seen.length;
    const sink = createSlackSink(
      'alerts',
      slackOptionsSchema().parse({ url: server.url('/direct') }),
      context(),
    );
    await sink.deliver([makeRecord('scheduled')], signal());
    await sink.close?.();
    expect(proxy.seen.length).toBe(before);
    expect(server.requests.map((r) => r.url)).toContain('/direct');
  });

  it('IMDS traffic never goes through the proxy, even with the same environment', async () => {
    useProxy();
    const imds = await HttpSinkServer.start({
      status: 200,
      body: JSON.stringify({ DocumentIncarnation: 1, Events: [] }),
      headers: { 'content-type': 'application/json' },
    });
    const before = proxy.seen.length;
    const client = new ImdsClient({ endpoint: `http://127.0.0.1:${imds.port}` });
    try {
      const { document } = await client.getScheduledEvents(signal());
      expect(document.DocumentIncarnation).toBe(1);
    } finally {
      client.close();
      await imds.close();
    }
    expect(imds.requests).toHaveLength(1);
    expect(imds.requests[0]!.url).toMatch(/^\/metadata\/scheduledevents\?api-version=/);
    expect(proxy.seen.length).toBe(before);
  });
});

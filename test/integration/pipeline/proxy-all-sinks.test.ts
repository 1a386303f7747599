/**
 * Every sink's HTTP goes through the same proxy rule (src/sinks/proxy.ts), IMDS never (issue 14 item 12).
 * A real forward proxy runs as its own process on 127.0.0.1 and logs what it forwards; a real `run` process
 * with webhook, slack, teams, otel http/protobuf and otel http/json sinks delivers through it, while its
 * IMDS requests (the simulator) reach IMDS directly. NO_PROXY bypasses the proxy for the OTel sink as it
 * already did for webhooks.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { otelSinkFactory } from '../../../src/sinks/otel/factory.ts';
import { otelOptionsSchema } from '../../../src/sinks/otel/index.ts';
import { bypassesProxy, proxyFor } from '../../../src/sinks/proxy.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { type OtlpHttpReceiver, startOtlpHttpReceiver } from '../../support/otlp-receiver.ts';
import { type ProxyProcess, startProxyProcess } from '../../support/proxy-process.ts';
import { makeRecord } from '../../support/records.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-proxy-');
const closers: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  tmp.cleanup();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

async function started<T extends { close(): Promise<void> | void }>(thing: Promise<T>): Promise<T> {
  const value = await thing;
  closers.push(() => value.close());
  return value;
}

/** `run` with exactly the proxy environment given (nothing inherited from the test's own environment). */
function runForwarder(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; stderr: () => string } {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(https?|no|all)_proxy$/i.test(name)),
  );
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: REPO,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  closers.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return { child, stderr: () => err };
}

describe('proxy rule shared by every HTTP sink', () => {
  it('webhook, slack, teams, otel http/protobuf and http/json go through HTTP_PROXY; IMDS never does', async () => {
    const proxy: ProxyProcess = await started(startProxyProcess());
    const sim: RunningSimulator = await started(startSimulator({ timeScale: 0 }));
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 600 });
    const hooks: HttpSinkServer = await started(HttpSinkServer.start());
    const otlpProto: OtlpHttpReceiver = await started(startOtlpHttpReceiver());
    const otlpJson: OtlpHttpReceiver = await started(startOtlpHttpReceiver());

    const config = join(tmp.dir, 'proxy.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'sinks:',
        `  - { name: hook, type: webhook, url: ${JSON.stringify(hooks.url('/webhook'))} }`,
        `  - { name: slack, type: slack, url: ${JSON.stringify(hooks.url('/slack'))}, minIntervalMs: 0, filter: { scope: all } }`,
        `  - { name: teams, type: teams, url: ${JSON.stringify(hooks.url('/teams'))}, minIntervalMs: 0, filter: { scope: all } }`,
        `  - { name: otel-proto, type: otel, protocol: http/protobuf, endpoint: ${JSON.stringify(otlpProto.url)} }`,
        `  - { name: otel-json, type: otel, protocol: http/json, endpoint: ${JSON.stringify(otlpJson.url)} }`,
        '',
      ].join('\n'),
    );
    // Upper-case variables for http, lower-case for https: both forms count (lower case wins when both are set).
    const fwd = runForwarder(['run', '--config', config], {
      HTTP_PROXY: proxy.url,
      https_proxy: proxy.url,
      NO_PROXY: 'example.com,.corp.internal',
    });
    await waitFor(
      () =>
        ['/webhook', '/slack', '/teams'].every((p) => hooks.requests.some((r) => r.url === p)) &&
        otlpProto.accepted.length > 0 &&
        otlpJson.accepted.length > 0,
      `every sink to deliver (forwarder log: ${fwd.stderr().slice(-1500)})`,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const expected = [
      hooks.url('/webhook'),
      hooks.url('/slack'),
      hooks.url('/teams'),
      otlpProto.logsUrl,
      otlpJson.logsUrl,
    ];
    for (const target of expected) {
      expect(proxy.seen, target).toContainEqual({ method: 'POST', target });
    }
    // The forwarder did poll IMDS (the records exist) — directly: the proxy never saw the simulator.
    const simHost = new URL(sim.url).host;
    expect(sim.admin.requests().count).toBeGreaterThan(0);
    expect(proxy.seen.filter((r) => r.target.includes(simHost))).toEqual([]);
  });

  it('NO_PROXY bypasses the proxy for the OTel sink (the rule webhooks follow)', async () => {
    const proxy: ProxyProcess = await started(startProxyProcess());
    const otlp: OtlpHttpReceiver = await started(startOtlpHttpReceiver());
    vi.stubEnv('HTTP_PROXY', proxy.url);
    vi.stubEnv('http_proxy', proxy.url);
    const deliverOnce = async (): Promise<void> => {
      const options = otelOptionsSchema().parse({ protocol: 'http/json', endpoint: otlp.url });
      const sink = await otelSinkFactory.create('otel', options, {
        logger: silentLogger(),
        vm: () => undefined,
        stateDir: tmp.dir,
      });
      await sink.deliver([makeRecord('scheduled')], new AbortController().signal);
      await sink.close?.();
    };
    vi.stubEnv('NO_PROXY', '127.0.0.1');
    vi.stubEnv('no_proxy', '127.0.0.1');
    await deliverOnce();
    expect(otlp.accepted).toHaveLength(1);
    expect(proxy.seen).toEqual([]);

    vi.stubEnv('NO_PROXY', '');
    vi.stubEnv('no_proxy', '');
    await deliverOnce();
    expect(otlp.accepted).toHaveLength(2);
    await waitFor(() => proxy.seen.length === 1, 'the proxy to log the second export');
    expect(proxy.seen).toEqual([{ method: 'POST', target: otlp.logsUrl }]);

    // https:// endpoints are tunnelled with CONNECT through HTTPS_PROXY (the receiver speaks plain HTTP, so
    // the TLS handshake inside the tunnel fails: a retryable delivery error, after the proxy saw the CONNECT).
    vi.stubEnv('HTTPS_PROXY', proxy.url);
    vi.stubEnv('https_proxy', proxy.url);
    const host = new URL(otlp.url).host;
    const options = otelOptionsSchema().parse({
      protocol: 'http/json',
      endpoint: `https://${host}`,
      timeoutMs: 3000,
    });
    const sink = await otelSinkFactory.create('otel-tls', options, {
      logger: silentLogger(),
      vm: () => undefined,
      stateDir: tmp.dir,
    });
    await expect(sink.deliver([makeRecord('scheduled')], new AbortController().signal)).rejects.toMatchObject(
      {
        retryable: true,
      },
    );
    await sink.close?.();
    expect(proxy.seen).toContainEqual({ method: 'CONNECT', target: host });
  });

  it('decides by one rule: scheme-specific variable, lower case first, NO_PROXY hosts, suffixes, ports, *', () => {
    const env = {
      HTTPS_PROXY: 'http://upper:1',
      https_proxy: 'http://lower:2',
      HTTP_PROXY: 'http://plain:3',
    };
    expect(proxyFor(new URL('https://a.example/x'), env)).toBe('http://lower:2');
    expect(proxyFor(new URL('http://a.example/x'), env)).toBe('http://plain:3');
    expect(proxyFor(new URL('http://a.example/x'), { HTTPS_PROXY: 'http://p:1' })).toBeUndefined();
    expect(proxyFor(new URL('https://a.example/x'), { ...env, NO_PROXY: 'a.example' })).toBeUndefined();
    const url = (u: string) => new URL(u);
    expect(bypassesProxy(url('https://hooks.corp.internal/x'), '.corp.internal')).toBe(true);
    expect(bypassesProxy(url('https://hooks.corp.internal/x'), '*.corp.internal')).toBe(true);
    expect(bypassesProxy(url('https://corp.internal/x'), 'corp.internal')).toBe(true);
    expect(bypassesProxy(url('https://notcorp.internal/x'), 'corp.internal')).toBe(false);
    expect(bypassesProxy(url('http://127.0.0.1:4318/v1/logs'), '127.0.0.1:4318')).toBe(true);
    expect(bypassesProxy(url('http://127.0.0.1:4319/v1/logs'), '127.0.0.1:4318')).toBe(false);
    expect(bypassesProxy(url('https://h.example/'), 'h.example:443')).toBe(true);
    expect(bypassesProxy(url('http://[::1]:8080/'), '[::1]')).toBe(true);
    expect(bypassesProxy(url('http://anything/'), 'x.example, *')).toBe(true);
    expect(bypassesProxy(url('http://anything/'), '')).toBe(false);
  });
});

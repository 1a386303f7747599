/**
 * TLS trust for every HTTP sink (src/sinks/http/tls.ts), with a private PKI made in the test (openssl;
 * test/support/tls-certs.ts) and real HTTPS / gRPC-over-TLS servers on 127.0.0.1: `tls.ca` trusts the private
 * CA (in addition to the default roots); without it the failure is the permanent `tls` naming the certificate
 * problem and the fix; client certificates (mTLS), serverName, insecureSkipVerify, the proxy tunnel, and
 * certificate/key contents never in logs or errors. Sinks are built from raw options through their factories,
 * as the config layer does.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { findSinkFactory } from '../../../../src/sinks/registry.ts';
import { DeliveryError, type Sink, type SinkContext } from '../../../../src/sinks/types.ts';
import { HttpSinkServer, RecordingProxy } from '../../../support/http-sink-server.ts';
import { startOtlpGrpcReceiver, startOtlpHttpReceiver } from '../../../support/otlp-receiver.ts';
import { makeRecord } from '../../../support/records.ts';
import { capturingLogger } from '../../../support/sink-tests.ts';
import {
  makeTestPki,
  type ServerTls,
  type TestPki,
  TLS_TEST_DNS_NAME,
  writePem,
} from '../../../support/tls-certs.ts';
import { makeTempDir } from '../../../support/tmp.ts';

const tmp = makeTempDir('sef-tls-');
let pki: TestPki;
const cleanups: (() => Promise<void> | void)[] = [];
let log: ReturnType<typeof capturingLogger>;

beforeAll(() => {
  pki = makeTestPki(tmp.dir);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.unstubAllEnvs();
});
afterAll(() => tmp.cleanup());

const signal = () => new AbortController().signal;

/** Lines of PEM bodies (the base64 between the markers): none may appear in a log line or an error. */
function pemBodies(): string[] {
  return [pki.ca, pki.client, pki.otherClient, pki.server].flatMap((pair) =>
    [pair.cert, pair.key].flatMap((pem) =>
      pem.split('\n').filter((line) => line.length > 40 && !line.startsWith('-')),
    ),
  );
}

function expectNoPemIn(text: string): void {
  for (const line of pemBodies()) expect(text).not.toContain(line);
  expect(text).not.toContain('PRIVATE KEY');
}

function context(): SinkContext {
  return { logger: log.logger, vm: () => undefined, stateDir: tmp.dir };
}

/** A sink of `type` built from raw options (the config form: {file: PATH} secrets) through its factory. */
async function sink(type: string, options: Record<string, unknown>): Promise<Sink> {
  const factory = findSinkFactory(type)!;
  const created = await factory.create(`${type}-tls`, factory.optionsSchema.parse(options), context());
  cleanups.push(async () => {
    await created.close?.();
  });
  return created;
}

const trustCa = () => ({ ca: { file: pki.ca.certFile } });
const clientCert = (pair = pki.client) => ({ cert: { file: pair.certFile }, key: { file: pair.keyFile } });

/** Delivers one record; the DeliveryError it rejects with, or undefined when delivered. */
async function attempt(s: Sink): Promise<DeliveryError | undefined> {
  try {
    await s.deliver([makeRecord('scheduled')], signal());
    return undefined;
  } catch (error) {
    if (error instanceof DeliveryError) {
      expectNoPemIn(error.message);
      return error;
    }
    throw error;
  }
}

async function httpsServer(tls: Partial<ServerTls> = {}): Promise<HttpSinkServer> {
  const server = await HttpSinkServer.start(undefined, {
    tls: { cert: pki.server.cert, key: pki.server.key, ...tls },
  });
  cleanups.push(() => server.close());
  return server;
}

beforeAll(() => {
  log = capturingLogger();
});

describe.each(['webhook', 'slack', 'teams'])('%s sink over HTTPS', (type) => {
  const options = (url: string, tls?: Record<string, unknown>) => ({
    url,
    ...(type === 'webhook' ? {} : { minIntervalMs: 0 }),
    ...(tls === undefined ? {} : { tls }),
  });

  it('delivers with tls.ca trusting the private CA', async () => {
    const server = await httpsServer();
    expect(await attempt(await sink(type, options(server.url(), trustCa())))).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });

  it('without tls.ca: a permanent `tls` failure naming the untrusted certificate and the fix', async () => {
    const server = await httpsServer();
    const error = await attempt(await sink(type, options(server.url())));
    expect(error?.code).toBe('tls');
    expect(error?.retryable).toBe(false);
    expect(error?.message).toMatch(
      /TLS: the server's certificate is not issued by a trusted CA \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/,
    );
    expect(error?.message).toMatch(/add the CA that issued the server's certificate \(PEM\) as tls\.ca/);
    expect(server.requests).toHaveLength(0);
  });

  it('a client certificate for a server that requires one (mTLS)', async () => {
    const server = await httpsServer({ clientCa: pki.ca.cert });
    expect(
      await attempt(await sink(type, options(server.url(), { ...trustCa(), ...clientCert() }))),
    ).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });
});

describe('client certificates (webhook)', () => {
  it('missing or from another CA (TLS 1.3: the server just closes): retryable, the message names the client certificate', async () => {
    const server = await httpsServer({ clientCa: pki.ca.cert });
    for (const tls of [trustCa(), { ...trustCa(), ...clientCert(pki.otherClient) }]) {
      const error = await attempt(await sink('webhook', { url: server.url(), tls }));
      expect(error?.code).toBe('network');
      expect(error?.retryable).toBe(true);
      expect(error?.message).toMatch(
        /closed the connection before answering \(if it requires a client certificate, check that tls\.cert and tls\.key/,
      );
    }
    expect(server.requests).toHaveLength(0);
  });

  it('missing, and the server sends a TLS alert (TLS 1.2): the permanent `tls` naming the client certificate', async () => {
    const server = await httpsServer({ clientCa: pki.ca.cert, maxVersion: 'TLSv1.2' });
    const error = await attempt(await sink('webhook', { url: server.url(), tls: trustCa() }));
    expect(error?.code).toBe('tls');
    expect(error?.retryable).toBe(false);
    expect(error?.message).toMatch(
      /refused the handshake \(alert "handshake failure"\): it requires a client certificate/,
    );
    expect(error?.message).toMatch(/set tls\.cert and tls\.key/);
  });
});

describe('serverName and insecureSkipVerify (webhook)', () => {
  it('a certificate issued for a DNS name, reached at 127.0.0.1: a name mismatch without serverName, delivered with it', async () => {
    const server = await httpsServer({ cert: pki.dnsOnlyServer.cert, key: pki.dnsOnlyServer.key });
    const mismatch = await attempt(await sink('webhook', { url: server.url(), tls: trustCa() }));
    expect(mismatch?.code).toBe('tls');
    expect(mismatch?.retryable).toBe(false);
    expect(mismatch?.message).toMatch(
      /not valid for the host name in the URL \(ERR_TLS_CERT_ALTNAME_INVALID\).*tls\.serverName/,
    );
    const named = await sink('webhook', {
      url: server.url(),
      tls: { ...trustCa(), serverName: TLS_TEST_DNS_NAME },
    });
    expect(await attempt(named)).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });

  it('insecureSkipVerify delivers to an untrusted certificate, and the factory warns loudly', async () => {
    const server = await httpsServer({ cert: pki.dnsOnlyServer.cert, key: pki.dnsOnlyServer.key });
    const options = { url: server.url(), tls: { insecureSkipVerify: true } };
    expect(await attempt(await sink('webhook', options))).toBeUndefined();
    const factory = findSinkFactory('webhook')!;
    const warnings = factory.warnings!('hooks', factory.optionsSchema.parse(options));
    expect(warnings.join('\n')).toMatch(
      /sink hooks: tls\.insecureSkipVerify is true: the server's certificate is NOT verified/,
    );
  });

  it('through an HTTPS proxy tunnel (CONNECT), the TLS options apply to the destination', async () => {
    const server = await httpsServer({ clientCa: pki.ca.cert });
    const proxy = await RecordingProxy.start();
    cleanups.push(() => proxy.close());
    for (const name of ['HTTPS_PROXY', 'https_proxy']) vi.stubEnv(name, proxy.url);
    vi.stubEnv('NO_PROXY', '');
    vi.stubEnv('no_proxy', '');
    const tunnelled = await sink('webhook', { url: server.url(), tls: { ...trustCa(), ...clientCert() } });
    expect(await attempt(tunnelled)).toBeUndefined();
    expect(proxy.seen).toContainEqual({ method: 'CONNECT', target: `127.0.0.1:${server.port}` });
    const untrusted = await attempt(await sink('webhook', { url: server.url() }));
    expect(untrusted?.code).toBe('tls');
  });
});

const UNTRUSTED_CERTIFICATE = "TLS: the server's certificate is not issued by a trusted CA";
/** The OTLP receiver of each otel protocol, and the error of an endpoint whose certificate is not trusted. */
const OTLP_OVER_TLS = [
  {
    protocol: 'http/protobuf',
    start: startOtlpHttpReceiver,
    untrusted: new RegExp(`OTLP .* failed: ${UNTRUSTED_CERTIFICATE}`),
  },
  {
    protocol: 'http/json',
    start: startOtlpHttpReceiver,
    untrusted: new RegExp(`OTLP .* failed: ${UNTRUSTED_CERTIFICATE}`),
  },
  {
    protocol: 'grpc',
    start: startOtlpGrpcReceiver,
    untrusted: new RegExp(`OTLP grpc export .* failed: ${UNTRUSTED_CERTIFICATE}`),
  },
] as const;

describe.each(OTLP_OVER_TLS)('otel sink, $protocol over TLS', ({ protocol, start, untrusted }) => {
  async function receiver(tls: Partial<ServerTls> = {}) {
    const r = await start({ tls: { cert: pki.server.cert, key: pki.server.key, ...tls } });
    cleanups.push(() => r.close());
    return r;
  }
  const options = (endpoint: string, tls?: Record<string, unknown>) => ({
    protocol,
    endpoint,
    timeoutMs: 5000,
    ...(tls === undefined ? {} : { tls }),
  });

  it('delivers with tls.ca and a client certificate (mTLS); without one, the permanent `tls` naming it', async () => {
    const r = await receiver({ clientCa: pki.ca.cert });
    expect(
      await attempt(await sink('otel', options(r.url, { ...trustCa(), ...clientCert() }))),
    ).toBeUndefined();
    expect(r.acceptedRecords()).toHaveLength(1);
    const refused = await attempt(await sink('otel', options(r.url, trustCa())));
    expect(refused?.code).toBe('tls');
    expect(refused?.retryable).toBe(false);
    expect(refused?.message).toMatch(
      /refused the handshake \(alert "certificate required"\): it requires a client certificate it trusts; fix: set tls\.cert and tls\.key/,
    );
  });

  it('without tls.ca: the permanent `tls` naming the untrusted certificate', async () => {
    const r = await receiver();
    const error = await attempt(await sink('otel', options(r.url)));
    expect(error?.code).toBe('tls');
    expect(error?.retryable).toBe(false);
    expect(error?.message).toMatch(untrusted);
  });

  it('serverName for a certificate issued for a DNS name; insecureSkipVerify', async () => {
    const r = await receiver({ cert: pki.dnsOnlyServer.cert, key: pki.dnsOnlyServer.key });
    const error = await attempt(await sink('otel', options(r.url, trustCa())));
    expect(error?.code).toBe('tls');
    expect(error?.message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    expect(
      await attempt(await sink('otel', options(r.url, { ...trustCa(), serverName: TLS_TEST_DNS_NAME }))),
    ).toBeUndefined();
    expect(await attempt(await sink('otel', options(r.url, { insecureSkipVerify: true })))).toBeUndefined();
    expect(r.acceptedRecords()).toHaveLength(2);
  });
});

describe('the tls options schema', () => {
  const parse = (tls: Record<string, unknown>) =>
    findSinkFactory('webhook')!.optionsSchema.safeParse({ url: 'https://127.0.0.1:9/x', tls });
  const messages = (tls: Record<string, unknown>) => {
    const result = parse(tls);
    expect(result.success).toBe(false);
    return result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
  };

  it('a file without PEM, a key for a certificate, cert without key: clear messages that never quote the content', () => {
    const notPem = writePem(tmp.dir, 'not-pem.txt', 'hello, not a certificate\n');
    const text = messages({ ca: { file: notPem }, cert: { file: pki.client.keyFile } });
    expect(text).toMatch(
      /tls\.ca: tls\.ca \(file .*not-pem\.txt\) does not contain a PEM certificate \(a "-----BEGIN CERTIFICATE-----" block\); give the certificate in PEM form/,
    );
    expect(text).toMatch(/tls\.cert: tls\.cert \(file .*client\.key\) does not contain a PEM certificate/);
    expect(text).toMatch(
      /tls\.key: tls\.cert is set but tls\.key is not: a client certificate needs both cert and key/,
    );
    expect(text).not.toContain('hello, not a certificate');
    expectNoPemIn(text);
    expect(messages({ key: { file: pki.client.certFile } })).toMatch(
      /tls\.key \(file .*client\.pem\) does not contain a PEM private key/,
    );
  });

  it('a bundle of several CAs is accepted; a damaged certificate is named', () => {
    const bundle = writePem(tmp.dir, 'bundle.pem', `${pki.otherCa.cert}${pki.ca.cert}`);
    expect(parse({ ca: { file: bundle } }).success).toBe(true);
    const damaged = writePem(tmp.dir, 'damaged.pem', pki.ca.cert.replace(/\n[A-Za-z0-9+/]{20}/, '\n'));
    expect(messages({ ca: { file: damaged } })).toMatch(
      /certificate 1 of 1 is not a valid X\.509 certificate/,
    );
  });

  it('certificate and key contents never reach the log (trace level) of a delivering sink', async () => {
    const server = await httpsServer({ clientCa: pki.ca.cert });
    await attempt(await sink('webhook', { url: server.url(), tls: { ...trustCa(), ...clientCert() } }));
    await attempt(await sink('webhook', { url: server.url(), tls: trustCa() }));
    expect(log.output()).not.toBe('');
    expectNoPemIn(log.output());
  });
});

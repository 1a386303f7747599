/**
 * TLS trust through the real CLI, as child processes: `config validate` prints the insecureSkipVerify warning
 * (exit 0) and names a file that is not PEM (exit 2); `run` against the IMDS simulator logs the same warning at
 * start, delivers over HTTPS with tls.ca + a client certificate and with insecureSkipVerify, pauses the
 * sink without tls.ca (the destination's permanent `tls`), and never prints certificate or key contents.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../../src/simulator/index.ts';
import { runCli, spawnCli } from '../../support/child.ts';
import { configFileWriter } from '../../support/config-files.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { makeTestPki, type TestPki, writePem } from '../../support/tls-certs.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-tls-cli-');
let pki: TestPki;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(() => {
  pki = makeTestPki(tmp.dir);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => tmp.cleanup());

const configFile = configFileWriter(tmp.dir);

/** No line of any PEM body (certificate or key) appears in `text`. */
function expectNoPemIn(text: string): void {
  for (const pair of [pki.ca, pki.client, pki.server]) {
    for (const pem of [pair.cert, pair.key]) {
      for (const line of pem.split('\n').filter((l) => l.length > 40 && !l.startsWith('-'))) {
        expect(text).not.toContain(line);
      }
    }
  }
  expect(text).not.toContain('PRIVATE KEY-----');
}

const INSECURE_WARNING =
  /sink insecure: tls\.insecureSkipVerify is true: the server's certificate is NOT verified/;

describe('config validate', () => {
  it('insecureSkipVerify: exit 0 with the loud warning; certificate files are never printed', async () => {
    const file = configFile({
      sinks: [
        {
          name: 'insecure',
          type: 'webhook',
          url: 'https://127.0.0.1:9/hook',
          tls: { insecureSkipVerify: true },
        },
        {
          name: 'mtls',
          type: 'slack',
          url: 'https://127.0.0.1:9/slack',
          tls: {
            ca: { file: pki.ca.certFile },
            cert: { file: pki.client.certFile },
            key: { file: pki.client.keyFile },
          },
        },
      ],
    });
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(new RegExp(`warning: ${INSECURE_WARNING.source}`));
    expect(result.stderr).not.toMatch(/sink mtls: tls/);
    expectNoPemIn(result.stdout + result.stderr);
    const shown = await runCli(['config', 'show', '--config', file]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/ca: "?\[redacted: file .*ca\.pem\]"?/);
    expectNoPemIn(shown.stdout + shown.stderr);
  });

  it('a tls.ca file that is not PEM, a cert without key: exit 2 naming each problem', async () => {
    const notPem = writePem(tmp.dir, 'ca.der', 'binary junk, not PEM');
    const file = configFile({
      sinks: [
        {
          name: 'otlp',
          type: 'otel',
          endpoint: 'https://127.0.0.1:9',
          tls: { ca: { file: notPem }, cert: { file: pki.client.certFile } },
        },
      ],
    });
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /sinks\[0\]\.tls\.ca: tls\.ca \(file .*ca\.der\) does not contain a PEM certificate/,
    );
    expect(result.stderr).toMatch(/sinks\[0\]\.tls\.key: tls\.cert is set but tls\.key is not/);
    expect(result.stderr).not.toContain('binary junk');
    expectNoPemIn(result.stdout + result.stderr);
  });
});

describe('run', () => {
  it('warns at start, delivers with tls.ca + client certificate and with insecureSkipVerify, pauses the sink without tls.ca (the record kept pending)', async () => {
    const sim = await startSimulator({ vmName: 'vm-tls', timeScale: 0 });
    cleanups.push(() => sim.close());
    const mtls = await HttpSinkServer.start(undefined, {
      tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    });
    const untrusted = await HttpSinkServer.start(undefined, {
      tls: { cert: pki.dnsOnlyServer.cert, key: pki.dnsOnlyServer.key },
    });
    cleanups.push(
      () => mtls.close(),
      () => untrusted.close(),
    );
    const file = configFile({
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      sinks: [
        {
          name: 'trusted',
          type: 'webhook',
          url: mtls.url('/trusted'),
          tls: {
            ca: { file: pki.ca.certFile },
            cert: { file: pki.client.certFile },
            key: { file: pki.client.keyFile },
          },
        },
        {
          name: 'insecure',
          type: 'webhook',
          url: untrusted.url('/insecure'),
          tls: { insecureSkipVerify: true },
        },
        { name: 'no-ca', type: 'webhook', url: mtls.url('/no-ca') },
      ],
    });
    const fwd = spawnCli(['run', '--config', file]);
    cleanups.push(async () => {
      fwd.child.kill('SIGKILL');
      await fwd.exited;
    });
    await fwd.ready;
    const startWarnings = fwd
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"configKey"'))
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(startWarnings.join('\n')).toMatch(INSECURE_WARNING);

    sim.admin.injectEvent({ id: 'E-TLS', type: 'Reboot', resources: ['vm-tls'], noticeSeconds: 900 });
    await mtls.waitForRequests(1);
    await untrusted.waitForRequests(1);
    expect(mtls.requests.map((r) => r.url)).toEqual(['/trusted']);
    expect(untrusted.requests.map((r) => r.url)).toEqual(['/insecure']);
    const paused = await waitFor(
      () =>
        fwd
          .stderr()
          .split('\n')
          .find((l) => l.includes('sink paused') && l.includes('"code":"tls"')),
      'the no-ca sink to pause on tls',
    );
    expect(paused).toMatch(/not issued by a trusted CA \(SELF_SIGNED_CERT_IN_CHAIN\); fix: add the CA/);
    expect(paused).toContain('"level":50');
    expect(fwd.stderr()).not.toContain('permanent delivery failure');
    expectNoPemIn(fwd.stderr() + fwd.stdout());
  });
});

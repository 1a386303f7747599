/**
 * A private PKI made inside the test with the `openssl` command (no dependency): a CA, server certificates
 * for 127.0.0.1 and for a DNS name only, a client certificate for mutual TLS, and a second, unrelated CA with
 * its own client certificate (the "wrong" one). EC P-256 keys: quick to make. Every PEM is returned as text and
 * written to a file in `dir` (for `{file: PATH}` secrets in sink options and config files).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The DNS name the servers' certificates are issued for (resolving it is never needed: tests connect to 127.0.0.1). */
export const TLS_TEST_DNS_NAME = 'sink.forwarder-test.internal';

export interface PemPair {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (PKCS#8, unencrypted). */
  key: string;
  certFile: string;
  keyFile: string;
}

export interface TestPki {
  /** The private CA (the certificate is what a sink's `tls.ca` trusts). */
  ca: PemPair;
  /** Server certificate from `ca`: SAN IP 127.0.0.1 and DNS TLS_TEST_DNS_NAME. */
  server: PemPair;
  /** Server certificate from `ca` for TLS_TEST_DNS_NAME only (connecting to 127.0.0.1 needs tls.serverName). */
  dnsOnlyServer: PemPair;
  /** Client certificate from `ca` (extendedKeyUsage clientAuth). */
  client: PemPair;
  /** A CA nobody trusts. */
  otherCa: PemPair;
  /** Client certificate from `otherCa`: a server trusting `ca` rejects it. */
  otherClient: PemPair;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new Error(
        'the `openssl` command is needed to make test certificates: install OpenSSL (Debian: openssl)',
      );
    }
    const stderr = String((error as { stderr?: unknown }).stderr ?? '');
    throw new Error(`openssl ${args[0]} failed: ${stderr}`);
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function read(dir: string, name: string): PemPair {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  const { readFileSync } = process.getBuiltinModule('node:fs');
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}

/**
 * Runs `openssl req -x509` in `dir` for a new P-256 key `name`.key and a certificate `name`.pem valid for 2 days;
 * `args` say who signs it and what it holds (subject, extensions).
 */
function makeCertificate(dir: string, name: string, args: string[]): PemPair {
  openssl(
    ['req', '-x509', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', ...args],
    dir,
  );
  return read(dir, name);
}

function makeCa(dir: string, name: string): PemPair {
  return makeCertificate(dir, name, [
    '-subj',
    `/CN=${name} test CA`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function makeLeaf(dir: string, ca: string, name: string, extensions: string[]): PemPair {
  return makeCertificate(dir, name, [
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    ...extensions.flatMap((e) => ['-addext', e]),
  ]);
}

/** Makes the whole test PKI in `dir` (an empty temporary directory; see test/support/tmp.ts). */
export function makeTestPki(dir: string): TestPki {
  const ca = makeCa(dir, 'ca');
  const otherCa = makeCa(dir, 'other-ca');
  const serverUsage = 'extendedKeyUsage=serverAuth';
  return {
    ca,
    otherCa,
    server: makeLeaf(dir, 'ca', 'server', [
      `subjectAltName=IP:127.0.0.1,DNS:${TLS_TEST_DNS_NAME}`,
      serverUsage,
    ]),
    dnsOnlyServer: makeLeaf(dir, 'ca', 'dns-only-server', [
      `subjectAltName=DNS:${TLS_TEST_DNS_NAME}`,
      serverUsage,
    ]),
    client: makeLeaf(dir, 'ca', 'client', ['extendedKeyUsage=clientAuth']),
    otherClient: makeLeaf(dir, 'other-ca', 'other-client', ['extendedKeyUsage=clientAuth']),
  };
}

/** Writes `text` to `dir/name` and returns the path (e.g. a bundle of two CAs, or a non-PEM file). */
export function writePem(dir: string, name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** TLS for a test server: its certificate and key, and (mutual TLS) the CA its clients' certificates must come from. */
export interface ServerTls {
  cert: string;
  key: string;
  /** Set: the server requires a client certificate issued by this CA and closes the connection otherwise. */
  clientCa?: string;
  /** Highest TLS version the server speaks ('TLSv1.2': a refused client certificate becomes a TLS alert). */
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** node:tls / node:https server options for `tls`. */
export function serverTlsOptions(tls: ServerTls): {
  cert: string;
  key: string;
  ca?: string;
  requestCert: boolean;
  rejectUnauthorized: boolean;
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
} {
  return {
    cert: tls.cert,
    key: tls.key,
    ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa }),
    requestCert: tls.clientCa !== undefined,
    rejectUnauthorized: tls.clientCa !== undefined,
    ...(tls.maxVersion === undefined ? {} : { maxVersion: tls.maxVersion }),
  };
}

/**
 * Test-only TLS material for the Event Hubs test double: a throw-away self-signed certificate for
 * 127.0.0.1/localhost, generated at test time with the openssl CLI (Node has no certificate builder). Never a
 * real secret; the key lives in a temp directory for the test's lifetime.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificate {
  /** PEM private key. */
  key: string;
  /** PEM certificate (also the CA to trust: it is self-signed). */
  cert: string;
  /** Path of the certificate file, for NODE_EXTRA_CA_CERTS in a child process. */
  certPath: string;
}

/** Writes key.pem/cert.pem into `dir` and returns them. Throws a clear error when openssl is missing. */
export function generateTestCertificate(dir: string): TestCertificate {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        keyPath,
        '-out',
        certPath,
      ],
      { stdio: 'pipe' },
    );
  } catch (error) {
    throw new Error(
      `cannot generate the test TLS certificate with openssl (needed for the credential-constructor tests): ${(error as Error).message}`,
    );
  }
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

/**
 * TLS trust for every HTTP sink (webhook, Slack, Teams, OTel over HTTP and gRPC, and the sinks built on
 * HttpTransport): an extra CA bundle, a client certificate and key (mTLS), the server name to verify, and a
 * loudly-warned switch that turns verification off. Certificates and keys are secrets (src/secret.ts): read
 * through `{file: PATH}`, `{env: NAME}` or `"${ENV}"`, registered with the redactor and never logged.
 *
 * `ca` ADDS to the default roots (Node's bundled Mozilla roots plus NODE_EXTRA_CA_CERTS and, with
 * --use-system-ca, the system store): "also trust my private CA". Public endpoints keep working next to it.
 *
 * Light on purpose (zod and secrets): the config schema loads it at every start-up, so node:crypto and node:tls
 * load only when a certificate is checked or a sink builds its connection options, and undici never here.
 */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import { type Secret, secretSchema } from '../../secret.ts';

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const PRIVATE_KEY_BLOCK = /-----BEGIN ((?:RSA |EC |ENCRYPTED )?PRIVATE KEY)-----/;

/** Where a secret came from, safe to show: "tls.ca (file /etc/pki/ca.pem)". */
function label(key: string, secret: Secret): string {
  return `tls.${key} (${secret.origin})`;
}

/** Why `secret` is not a PEM bundle of certificates, or undefined when it is. Never quotes the content. */
export function pemCertificatesProblem(key: string, secret: Secret): string | undefined {
  const blocks = secret.reveal().match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) {
    return (
      `${label(key, secret)} does not contain a PEM certificate (a "-----BEGIN CERTIFICATE-----" block); ` +
      'give the certificate in PEM form (convert a DER .cer/.crt with `openssl x509 -inform der -in FILE -out FILE.pem`)'
    );
  }
  for (const [index, block] of blocks.entries()) {
    try {
      new (process.getBuiltinModule('node:crypto').X509Certificate)(block);
    } catch {
      return (
        `${label(key, secret)}: certificate ${index + 1} of ${blocks.length} is not a valid X.509 certificate ` +
        '(damaged or truncated PEM); export the certificate again'
      );
    }
  }
  return undefined;
}

/** Why `secret` is not an unencrypted PEM private key, or undefined when it is. Never quotes the content. */
export function pemPrivateKeyProblem(key: string, secret: Secret): string | undefined {
  const value = secret.reveal();
  const header = PRIVATE_KEY_BLOCK.exec(value);
  if (header === null) {
    return (
      `${label(key, secret)} does not contain a PEM private key (a "-----BEGIN PRIVATE KEY-----" block); ` +
      'give the client key in PEM form (convert with `openssl pkey -in KEY -out key.pem`)'
    );
  }
  if (header[1] === 'ENCRYPTED PRIVATE KEY' || /Proc-Type:\s*4,ENCRYPTED/.test(value)) {
    return (
      `${label(key, secret)} is an encrypted private key; passphrases are not supported: store it unencrypted ` +
      'in a file only the forwarder can read (`openssl pkey -in KEY -out key.pem`)'
    );
  }
  try {
    process.getBuiltinModule('node:crypto').createPrivateKey(value);
  } catch {
    return `${label(key, secret)} is not a valid private key (damaged or truncated PEM); export the key again`;
  }
  return undefined;
}

/** A PEM secret checked with `problem` (a secret that is missing here, config validate --allow-missing-secrets, is not). */
function pemSecret(key: string, problem: (key: string, secret: Secret) => string | undefined) {
  return secretSchema().superRefine((secret, ctx) => {
    if (secret.missing !== undefined) return;
    const message = problem(key, secret);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message });
  });
}

export const tlsOptionsSchema = lazy(() =>
  z
    .object({
      ca: pemSecret('ca', pemCertificatesProblem)
        .optional()
        .describe(
          'PEM CA certificate(s) to trust IN ADDITION to the default roots (Node.js bundled roots and NODE_EXTRA_CA_CERTS), e.g. your private CA; a secret, normally {file: PATH}; never logged',
        ),
      cert: pemSecret('cert', pemCertificatesProblem)
        .optional()
        .describe(
          'PEM client certificate (chain) presented for mutual TLS, with key; a secret, normally {file: PATH}',
        ),
      key: pemSecret('key', pemPrivateKeyProblem)
        .optional()
        .describe(
          'PEM private key of cert (unencrypted: PKCS#8, PKCS#1 or SEC1); a secret, normally {file: PATH}; never logged',
        ),
      serverName: z
        .string()
        .min(1)
        .regex(/^[A-Za-z0-9.*-]+$/, 'serverName must be a DNS name such as collector.example.internal')
        .optional()
        .describe(
          "the name the server's certificate must be valid for, also sent as SNI (otel grpc: verified, not sent); default the URL's host (use when connecting by IP address to a certificate issued for a DNS name)",
        ),
      insecureSkipVerify: z
        .boolean()
        .default(false)
        .describe(
          'DANGEROUS: accept any server certificate (no CA or name check; anyone on the path can read and change the traffic); warned at start and by config validate; use ca instead',
        ),
    })
    .strict()
    .superRefine((tls, ctx) => {
      if ((tls.cert === undefined) !== (tls.key === undefined)) {
        const [given, missing] = tls.cert === undefined ? ['key', 'cert'] : ['cert', 'key'];
        ctx.addIssue({
          code: 'custom',
          path: [missing],
          message: `tls.${given} is set but tls.${missing} is not: a client certificate needs both cert and key (set both, or neither)`,
        });
      }
    })
    .describe('TLS trust for an https:// endpoint: extra CA, client certificate (mTLS), server name'),
);

export type TlsOptions = z.infer<ReturnType<typeof tlsOptionsSchema>>;

/** The CA certificates to trust: the default roots plus `ca`. */
export function trustedCaCertificates(ca: Secret): string[] {
  // Loaded here, not at module load: the config schema (and so every start-up) imports this file.
  const nodeTls = process.getBuiltinModule('node:tls');
  const defaults =
    typeof nodeTls.getCACertificates === 'function'
      ? nodeTls.getCACertificates('default')
      : [...nodeTls.rootCertificates];
  return [...defaults, ca.reveal()];
}

/** The TLS part of undici's `connect` options (and of ProxyAgent's `requestTls`). */
export interface TlsConnectOptions {
  ca?: string[];
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized?: boolean;
}

/**
 * TlsOptions as undici `connect` options (Agent `connect`, ProxyAgent `requestTls`; node:https agents take the
 * same keys). Empty for undefined: Node's defaults.
 */
export function tlsConnectOptions(tls: TlsOptions | undefined): TlsConnectOptions {
  if (tls === undefined) return {};
  return {
    ...(tls.ca === undefined ? {} : { ca: trustedCaCertificates(tls.ca) }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert.reveal() }),
    ...(tls.key === undefined ? {} : { key: tls.key.reveal() }),
    ...(tls.serverName === undefined ? {} : { servername: tls.serverName }),
    ...(tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
  };
}

/**
 * The warnings about a sink's TLS options (SinkFactory.warnings): the loud one when verification is off, and
 * one when `endpoint` (when known) is plain http://, where the options do nothing.
 */
export function tlsWarnings(sinkName: string, tls: TlsOptions | undefined, endpoint?: string): string[] {
  if (tls === undefined) return [];
  const warnings: string[] = [];
  if (tls.insecureSkipVerify) {
    warnings.push(
      `sink ${sinkName}: tls.insecureSkipVerify is true: the server's certificate is NOT verified, so anyone ` +
        'on the network path can impersonate the endpoint and read or change what is sent. Trust the ' +
        "server's CA with tls.ca (and tls.serverName when connecting by IP address) and remove insecureSkipVerify.",
    );
  }
  if (endpoint !== undefined && /^http:/i.test(endpoint)) {
    warnings.push(
      `sink ${sinkName}: tls is set but the endpoint is http:// (no TLS): the tls options have no effect; ` +
        'use an https:// endpoint or remove tls',
    );
  }
  return warnings;
}

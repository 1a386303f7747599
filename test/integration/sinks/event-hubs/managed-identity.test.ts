/**
 * Managed identity end to end: the real ManagedIdentityCredential (in a child process, so NODE_EXTRA_CA_CERTS
 * can trust the double's throw-away certificate) gets a token from the IMDS simulator's managed identity
 * endpoint (AZURE_POD_IDENTITY_AUTHORITY_HOST points MSAL at it), and the double's $cbs accepts it (audience
 * https://eventhubs.azure.net/); a double that expects another audience refuses the same token.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import {
  type EventHubsDouble,
  generateTestCertificate,
  startEventHubsDouble,
  type TestCertificate,
} from '../../../support/event-hubs-double/index.ts';
import { vmRecords } from '../../../support/records.ts';
import { makeTempDir } from '../../../support/tmp.ts';

const run = promisify(execFile);
const CHILD = join(import.meta.dirname, 'fixtures', 'send-with-credential.ts');

let tmp: { dir: string; cleanup: () => void };
let cert: TestCertificate;
let double: EventHubsDouble;
let simulator: RunningSimulator;

beforeAll(async () => {
  tmp = makeTempDir('eh-mi');
  cert = generateTestCertificate(tmp.dir);
  double = await startEventHubsDouble({ hubs: { lifecycle: 2 }, tls: { key: cert.key, cert: cert.cert } });
  simulator = await startSimulator({ port: 0 });
});
afterAll(async () => {
  await double?.close();
  await simulator?.close();
  tmp?.cleanup();
});

interface ChildResult {
  ok: boolean;
  code?: string;
  retryable?: boolean;
  message?: string;
}

async function sendFromChild(
  options: Record<string, unknown>,
  count: number,
  from: number,
): Promise<ChildResult> {
  const records = vmRecords(count, 2, from);
  const file = join(tmp.dir, `records-${from}.json`);
  writeFileSync(file, JSON.stringify(records));
  const { stdout } = await run(process.execPath, [CHILD], {
    env: {
      PATH: process.env.PATH,
      NODE_EXTRA_CA_CERTS: cert.certPath,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: simulator.url,
      EH_OPTIONS: JSON.stringify({
        fullyQualifiedNamespace: double.namespaceHost,
        eventHubName: 'lifecycle',
        retry: { maxRetries: 0, retryDelayMs: 50, maxRetryDelayMs: 100, timeoutMs: 5000 },
        ...options,
      }),
      RECORDS_FILE: file,
    },
    timeout: 45_000,
  });
  const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as ChildResult;
  if (result.ok) {
    const ids = new Set(double.received('lifecycle').map((e) => e.messageId));
    for (const r of records) expect(ids.has(r.id), r.id).toBe(true);
  }
  return result;
}

describe('managed identity → IMDS simulator token → Event Hubs double over TLS', () => {
  it('system-assigned: the token from the simulator is accepted by $cbs with the Event Hubs audience', async () => {
    const result = await sendFromChild({}, 4, 0);
    expect(result).toEqual({ ok: true });
    const jwts = double.tokens().filter((t) => t.tokenType === 'jwt');
    expect(jwts.length).toBeGreaterThan(0);
    for (const t of jwts) {
      expect(t.accepted).toBe(true);
      expect(t.jwtClaims?.aud).toBe('https://eventhubs.azure.net/');
      expect(t.audience).toBe(`sb://${double.namespaceHost}/lifecycle`);
    }
    const tokenRequests = simulator.admin.requests().log.filter((r) => r.endpoint === 'token');
    expect(tokenRequests.length).toBeGreaterThan(0);
    expect(tokenRequests.every((r) => r.status === 200)).toBe(true);
  });

  it('user-assigned by client id: the token names that identity', async () => {
    const before = double.tokens().length;
    const clientId = '0b8d6a4e-1111-4222-8333-444455556666';
    const result = await sendFromChild({ credential: { kind: 'managed-identity', clientId } }, 2, 100);
    expect(result).toEqual({ ok: true });
    const jwts = double
      .tokens()
      .slice(before)
      .filter((t) => t.tokenType === 'jwt');
    expect(jwts.length).toBeGreaterThan(0);
    expect(jwts.every((t) => t.accepted && t.jwtClaims?.appid === clientId)).toBe(true);
  });

  it('a token for another audience is refused: Unauthorized, permanent for the destination (the sink pauses), nothing stored', async () => {
    const strict = await startEventHubsDouble({
      hubs: { lifecycle: 1 },
      tls: { key: cert.key, cert: cert.cert },
      jwtAudiences: ['https://eventhubs.example.invalid/'],
    });
    try {
      const records = vmRecords(1, 1, 200);
      const file = join(tmp.dir, 'records-strict.json');
      writeFileSync(file, JSON.stringify(records));
      const { stdout } = await run(process.execPath, [CHILD], {
        env: {
          PATH: process.env.PATH,
          NODE_EXTRA_CA_CERTS: cert.certPath,
          AZURE_POD_IDENTITY_AUTHORITY_HOST: simulator.url,
          EH_OPTIONS: JSON.stringify({
            fullyQualifiedNamespace: strict.namespaceHost,
            eventHubName: 'lifecycle',
            retry: { maxRetries: 0, retryDelayMs: 50, maxRetryDelayMs: 100, timeoutMs: 5000 },
          }),
          RECORDS_FILE: file,
        },
        timeout: 45_000,
      });
      const result = JSON.parse(stdout.trim()) as ChildResult;
      expect(result).toMatchObject({ ok: false, code: 'Unauthorized', retryable: false });
      expect(strict.received()).toHaveLength(0);
      expect(strict.tokens().some((t) => !t.accepted && /audience/.test(t.reason ?? ''))).toBe(true);
    } finally {
      await strict.close();
    }
  });
});

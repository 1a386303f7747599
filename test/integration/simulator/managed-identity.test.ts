/**
 * Proves the supported way to point the real @azure/identity ManagedIdentityCredential at the simulator:
 * the AZURE_POD_IDENTITY_AUTHORITY_HOST environment variable (read by MSAL's IMDS source and by
 * @azure/identity's IMDS probe). Runs in a child process because the variable must be set for the process
 * that uses the credential, and nothing else may leak in (no proxy, no other managed identity source).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJwtPayload, type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';

const run = promisify(execFile);
let sim: RunningSimulator;
afterEach(async () => {
  await sim?.close();
});

const SCRIPT = `
import { ManagedIdentityCredential } from '@azure/identity';
const credential = new ManagedIdentityCredential(process.env.TEST_CLIENT_ID ? { clientId: process.env.TEST_CLIENT_ID } : {});
const token = await credential.getToken('https://eventhubs.azure.net/.default');
process.stdout.write(JSON.stringify(token));
`;

/** Environment for the child: only what it needs, pointing managed identity at the simulator. */
function childEnv(authorityHost: string, clientId?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AZURE_POD_IDENTITY_AUTHORITY_HOST: authorityHost,
  };
  if (process.env.SYSTEMROOT) env.SYSTEMROOT = process.env.SYSTEMROOT;
  if (clientId) env.TEST_CLIENT_ID = clientId;
  return env;
}

async function getTokenInChild(
  authorityHost: string,
  clientId?: string,
): Promise<{ token: string; expiresOnTimestamp: number }> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    cwd: process.cwd(),
    env: childEnv(authorityHost, clientId),
    timeout: 30_000,
  });
  return JSON.parse(stdout) as { token: string; expiresOnTimestamp: number };
}

describe('managed identity token endpoint', () => {
  it('gives the real ManagedIdentityCredential a token for Event Hubs via AZURE_POD_IDENTITY_AUTHORITY_HOST', async () => {
    sim = await startSimulator({ timeScale: 0, vmName: 'mi-vm' });
    const result = await getTokenInChild(sim.url);
    const claims = decodeJwtPayload(result.token);
    expect(result.token.split('.')).toHaveLength(3);
    expect(claims).toMatchObject({
      aud: 'https://eventhubs.azure.net',
      oid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tid: expect.any(String),
      xms_mirid: expect.stringContaining('/virtualMachines/mi-vm'),
    });
    expect(claims.exp as number).toBeGreaterThan(Date.now() / 1000);
    expect(result.expiresOnTimestamp).toBeGreaterThan(Date.now());
    const tokenRequests = sim.admin.requests().log.filter((r) => r.endpoint === 'token' && r.status === 200);
    expect(tokenRequests).toHaveLength(1);
    expect(tokenRequests[0]?.path).toContain('resource=https%3A%2F%2Feventhubs.azure.net');
  });

  it('serves another VM identity and a user-assigned client id under /vms/<name>', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const clientId = '11111111-2222-4333-8444-555555555555';
    const result = await getTokenInChild(sim.vmUrl('fleet_7'), clientId);
    expect(decodeJwtPayload(result.token)).toMatchObject({
      aud: 'https://eventhubs.azure.net',
      appid: clientId,
      xms_mirid: expect.stringContaining('/virtualMachineScaleSets/fleet/virtualMachines/7'),
    });
  });

  it('rejects token requests without the Metadata header or resource, like IMDS', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const url = `${sim.url}/metadata/identity/oauth2/token?api-version=2018-02-01`;
    expect((await fetch(`${url}&resource=https://eventhubs.azure.net`)).status).toBe(400);
    const missing = await fetch(url, { headers: { Metadata: 'true' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' });
  });
});

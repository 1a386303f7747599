/**
 * createCredential (src/azure/credentials.ts) builds the @azure/identity credential each `credential.kind`
 * names; the client secret reaches it through the project's secret forms and never appears in the parsed
 * options' JSON. (Getting a token needs Microsoft Entra ID, which tests cannot reach: the managed identity path
 * is tested end to end against the IMDS simulator in test/integration/sinks/azuremonitor/sink.test.ts.)
 */
import {
  ClientSecretCredential,
  ManagedIdentityCredential,
  WorkloadIdentityCredential,
} from '@azure/identity';
import { describe, expect, it } from 'vitest';
import { azureCredentialSchema } from '../../../src/azure/credential-options.ts';
import { createCredential } from '../../../src/azure/credentials.ts';

describe('createCredential', () => {
  it('client-secret: a ClientSecretCredential from the tenant, client id and the secret', () => {
    process.env.SEF_TEST_CLIENT_SECRET = 'client-secret-for-the-test-42';
    try {
      const options = azureCredentialSchema().parse({
        kind: 'client-secret',
        tenantId: '72f988bf-0000-4000-8000-5157a7e0c0de',
        clientId: '0b8d6a4e-1111-4222-8333-444455556666',
        clientSecret: { env: 'SEF_TEST_CLIENT_SECRET' },
      });
      expect(JSON.stringify(options)).not.toContain('client-secret-for-the-test-42');
      expect(createCredential(options)).toBeInstanceOf(ClientSecretCredential);
    } finally {
      delete process.env.SEF_TEST_CLIENT_SECRET;
    }
  });

  it('managed-identity (the default) and workload-identity', () => {
    expect(createCredential(azureCredentialSchema().parse({}))).toBeInstanceOf(ManagedIdentityCredential);
    const workload = azureCredentialSchema().parse({
      kind: 'workload-identity',
      tenantId: '72f988bf-0000-4000-8000-5157a7e0c0de',
      clientId: '0b8d6a4e-1111-4222-8333-444455556666',
      tokenFilePath: '/var/run/secrets/azure/tokens/azure-identity-token',
    });
    expect(createCredential(workload)).toBeInstanceOf(WorkloadIdentityCredential);
  });

  it.each([
    [{ kind: 'client-secret', tenantId: 't' }, /needs credential.clientId, credential.clientSecret/],
    [
      { kind: 'managed-identity', clientSecret: 'x-secret-value' },
      /clientSecret is only valid with kind client-secret/,
    ],
    [
      { kind: 'default', tenantId: 't' },
      /tenantId is only valid with kind workload-identity or client-secret/,
    ],
  ])('refuses %j naming the problem', (input, message) => {
    const result = azureCredentialSchema().safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.message).join('\n')).toMatch(message);
  });
});

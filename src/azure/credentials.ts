/**
 * The @azure/identity credential factory for the `credential` options (credential-options.ts), shared by the
 * Event Hubs sink and the fleet consumer. Loaded only when a client is built (it pulls in @azure/identity).
 */
import {
  ClientSecretCredential,
  DefaultAzureCredential,
  ManagedIdentityCredential,
  type TokenCredential,
  WorkloadIdentityCredential,
} from '@azure/identity';
import type { AzureCredentialOptions } from './credential-options.ts';

/** The @azure/identity credential for `options.credential` (never called with a connection string). */
export function createCredential(credential: AzureCredentialOptions): TokenCredential {
  switch (credential.kind) {
    case 'client-secret':
      // the schema requires all three with this kind
      return new ClientSecretCredential(
        credential.tenantId!,
        credential.clientId!,
        credential.clientSecret!.reveal(),
      );
    case 'default':
      return new DefaultAzureCredential(
        credential.clientId === undefined ? {} : { managedIdentityClientId: credential.clientId },
      );
    case 'workload-identity':
      return new WorkloadIdentityCredential({
        ...(credential.tenantId === undefined ? {} : { tenantId: credential.tenantId }),
        ...(credential.clientId === undefined ? {} : { clientId: credential.clientId }),
        ...(credential.tokenFilePath === undefined ? {} : { tokenFilePath: credential.tokenFilePath }),
      });
    default:
      if (credential.resourceId !== undefined)
        return new ManagedIdentityCredential({ resourceId: credential.resourceId });
      if (credential.clientId !== undefined)
        return new ManagedIdentityCredential({ clientId: credential.clientId });
      return new ManagedIdentityCredential();
  }
}

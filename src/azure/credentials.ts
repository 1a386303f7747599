/**
 * Azure credentials without a connection string: the `credential` options schema and the @azure/identity
 * factory, shared by the Event Hubs sink and the fleet consumer (Event Hubs and Blob access).
 */
import {
  DefaultAzureCredential,
  ManagedIdentityCredential,
  type TokenCredential,
  WorkloadIdentityCredential,
} from '@azure/identity';
import { z } from 'zod';

/** How to authenticate without a connection string. */
export const azureCredentialSchema = z
  .object({
    kind: z
      .enum(['managed-identity', 'default', 'workload-identity'])
      .default('managed-identity')
      .describe(
        'managed-identity (default: the VM identity via IMDS), default (DefaultAzureCredential chain) or workload-identity (federated token file, e.g. AKS)',
      ),
    clientId: z
      .string()
      .min(1)
      .optional()
      .describe(
        'user-assigned managed identity client id (managed-identity/default) or app client id (workload-identity)',
      ),
    resourceId: z
      .string()
      .min(1)
      .optional()
      .describe(
        'user-assigned managed identity ARM resource id (managed-identity only; instead of clientId)',
      ),
    tenantId: z.string().min(1).optional().describe('tenant id (workload-identity; default AZURE_TENANT_ID)'),
    tokenFilePath: z
      .string()
      .min(1)
      .optional()
      .describe('federated token file (workload-identity; default AZURE_FEDERATED_TOKEN_FILE)'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.clientId !== undefined && c.resourceId !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'credential: give clientId or resourceId, not both' });
    }
    if (c.resourceId !== undefined && c.kind !== 'managed-identity') {
      ctx.addIssue({
        code: 'custom',
        message: 'credential.resourceId is only valid with kind managed-identity',
      });
    }
    if ((c.tenantId !== undefined || c.tokenFilePath !== undefined) && c.kind !== 'workload-identity') {
      ctx.addIssue({
        code: 'custom',
        message: 'credential.tenantId/tokenFilePath are only valid with kind workload-identity',
      });
    }
  });

export type AzureCredentialOptions = z.infer<typeof azureCredentialSchema>;

/** The @azure/identity credential for `options.credential` (never called with a connection string). */
export function createCredential(credential: AzureCredentialOptions): TokenCredential {
  switch (credential.kind) {
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

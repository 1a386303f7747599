/**
 * The `credential` options of Azure access without a connection string, shared by the Event Hubs sink and the
 * fleet consumer (Event Hubs and Blob). Schema only (zod): the config loader imports it without loading
 * @azure/identity; the factory is in credentials.ts.
 */
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

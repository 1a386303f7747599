/**
 * The `credential` options of Azure access without a connection string, shared by the Event Hubs and Azure
 * Monitor sinks and the fleet consumer (Event Hubs and Blob). Schema only (zod and src/secret.ts): the config
 * loader imports it without loading @azure/identity; the factory is in credentials.ts.
 */
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { secretSchema } from '../secret.ts';

/** How to authenticate without a connection string. */
export const azureCredentialSchema = lazy(() =>
  z
    .object({
      kind: z
        .enum(['managed-identity', 'default', 'workload-identity', 'client-secret'])
        .default('managed-identity')
        .describe(
          'managed-identity (default: the VM identity via IMDS), default (DefaultAzureCredential chain), workload-identity (federated token file, e.g. AKS) or client-secret (an app registration: tenantId, clientId, clientSecret)',
        ),
      clientId: z
        .string()
        .min(1)
        .optional()
        .describe(
          'user-assigned managed identity client id (managed-identity/default) or app client id (workload-identity, client-secret)',
        ),
      resourceId: z
        .string()
        .min(1)
        .optional()
        .describe(
          'user-assigned managed identity ARM resource id (managed-identity only; instead of clientId)',
        ),
      tenantId: z
        .string()
        .min(1)
        .optional()
        .describe('tenant id (workload-identity: default AZURE_TENANT_ID; client-secret: required)'),
      clientSecret: secretSchema().optional().describe(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
        'app client secret (client-secret only) as a secret: "${ENV_VAR}", {env: NAME} or {file: PATH}; never logged',
      ),
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
      if (c.tokenFilePath !== undefined && c.kind !== 'workload-identity') {
        ctx.addIssue({
          code: 'custom',
          message: 'credential.tokenFilePath is only valid with kind workload-identity',
        });
      }
      if (c.tenantId !== undefined && c.kind !== 'workload-identity' && c.kind !== 'client-secret') {
        ctx.addIssue({
          code: 'custom',
          message: 'credential.tenantId is only valid with kind workload-identity or client-secret',
        });
      }
      if (c.clientSecret !== undefined && c.kind !== 'client-secret') {
        ctx.addIssue({
          code: 'custom',
          message: 'credential.clientSecret is only valid with kind client-secret',
        });
      }
      if (c.kind === 'client-secret') {
        const missing = (['tenantId', 'clientId', 'clientSecret'] as const).filter((k) => c[k] === undefined);
        if (missing.length > 0) {
          ctx.addIssue({
            code: 'custom',
            message: `credential kind client-secret needs ${missing.map((k) => `credential.${k}`).join(', ')} (the app registration's tenant id, application (client) id and a client secret)`,
          });
        }
      }
    }),
);

export type AzureCredentialOptions = z.infer<ReturnType<typeof azureCredentialSchema>>;

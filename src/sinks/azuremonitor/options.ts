/**
 * Configuration of the Azure Monitor sink (the `options` of a sink with `type: azuremonitor`): the Logs
 * Ingestion API endpoint, the data collection rule (DCR) and its stream, the Azure credential and TLS. Every
 * key is described for docs/configuration.md; the setup is in docs/sinks-azure-monitor.md.
 */
import { z } from 'zod';
import { azureCredentialSchema } from '../../azure/credential-options.ts';
import { lazy } from '../../lazy.ts';
import { tlsOptionsSchema } from '../http/tls.ts';

/** The stream of the shipped DCR (packaging/azure-monitor/). */
export const DEFAULT_STREAM_NAME = 'Custom-ScheduledEvents';

export const azureMonitorOptionsSchema = lazy(() =>
  z
    .object({
      endpoint: z
        .url({
          protocol: /^https$/,
          error:
            'endpoint must be an https:// URL: the data collection endpoint (DCE) "Logs ingestion" URL or the DCR\'s own logs ingestion endpoint (az monitor data-collection rule show --query endpoints.logsIngestion)',
        })
        .describe(
          "Logs Ingestion API endpoint: the data collection endpoint's (DCE) logs ingestion URL, e.g. https://my-dce-abcd.westeurope-1.ingest.monitor.azure.com, or the DCR's own endpoints.logsIngestion",
        ),
      ruleId: z
        .string()
        .regex(
          /^dcr-[0-9a-f]{32}$/,
          'ruleId must be the DCR immutable id: "dcr-" and 32 lower-case hex digits (az monitor data-collection rule show --query immutableId), not the DCR name or resource id',
        )
        .describe("the data collection rule's immutable id (dcr-…, its immutableId property)"),
      streamName: z
        .string()
        .regex(
          /^Custom-[A-Za-z0-9_-]+$/,
          'streamName must name one of the DCR\'s streamDeclarations: "Custom-" and a name, e.g. Custom-ScheduledEvents',
        )
        .default(DEFAULT_STREAM_NAME)
        .describe('the DCR stream declaration rows are sent to (the shipped DCR: Custom-ScheduledEvents)'),
      credential: azureCredentialSchema()
        .prefault({})
        .describe(
          'how to get a token for https://monitor.azure.com; the identity needs the role Monitoring Metrics Publisher on the DCR',
        ),
      audience: z
        .enum(['https://monitor.azure.com', 'https://monitor.azure.us', 'https://monitor.azure.cn'])
        .default('https://monitor.azure.com')
        .describe(
          'token audience of the cloud: https://monitor.azure.com (public), https://monitor.azure.us (US Government), https://monitor.azure.cn (China)',
        ),
      timeoutMs: z
        .number()
        .int()
        .min(1000)
        .max(300_000)
        .default(30_000)
        .describe('timeout of one delivery (the token request and every upload request of the batch)'),
      tls: tlsOptionsSchema()
        .optional()
        .describe(
          'TLS trust for the endpoint: an extra CA (private endpoint behind a TLS-inspecting gateway), client certificate, server name; not combinable with an HTTPS proxy (docs/sinks-azure-monitor.md)',
        ),
    })
    .strict(),
);

export type AzureMonitorSinkOptions = z.infer<ReturnType<typeof azureMonitorOptionsSchema>>;

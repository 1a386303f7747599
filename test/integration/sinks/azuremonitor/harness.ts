/**
 * Compliance harness (test/support/sink-harness.ts) for the azuremonitor sink: its own Logs Ingestion API double
 * over HTTPS with a private CA and the IMDS simulator's managed identity tokens (./setup.ts). The sink has no
 * configured secret: its secrets are the bearer tokens it sent, which the double echoes back in its failures.
 */
import { azureError } from '../../../support/logs-ingestion-double.ts';
import type { Harness } from '../../../support/sink-harness.ts';
import { startAzureMonitorSetup } from './setup.ts';

export async function azureMonitorHarness(): Promise<Harness> {
  const setup = await startAzureMonitorSetup();
  const { double } = setup;
  return {
    options: setup.options({ timeoutMs: 5000 }),
    get secrets() {
      return double.tokens();
    },
    arrived: () => double.rows().map((row) => String(row.RecordId)),
    breakDestination(kind) {
      double.setResponder((request) =>
        kind === 'retryable'
          ? { status: 503, body: azureError('ServiceUnavailable', `busy; token ${request.token}`) }
          : kind === 'record'
            ? {
                status: 400,
                body: azureError('InvalidContent', `the row is not valid for the stream (${request.token})`),
              }
            : {
                status: 403,
                body: azureError('OperationFailed', `no access for Bearer ${request.token}`),
              },
      );
    },
    repair: () => double.reset(),
    // A row of 1 MB or more: the sink sends the rows before it, then reports the oversized one's index.
    poison: (record) => ({ ...record, data: { ...record.data, Description: 'x'.repeat(1_100_000) } }),
    permanent: true,
    refusal: 'HTTP 403: the identity lost "Monitoring Metrics Publisher" on the DCR',
    hang: () => double.setDefault({ hang: true }),
    close: () => setup.close(),
  };
}

/**
 * The real pieces the Azure Monitor sink tests (and its compliance harness) run against: a private PKI
 * (test/support/tls-certs.ts), the Logs Ingestion API double over HTTPS with the PKI's server certificate
 * (test/support/logs-ingestion-double.ts), and the IMDS simulator, whose managed identity endpoint hands the
 * real ManagedIdentityCredential its tokens: AZURE_POD_IDENTITY_AUTHORITY_HOST points @azure/identity at the
 * simulator on 127.0.0.1, never at 169.254.169.254 (the loopback guard would fail the test).
 */
import { type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import { LogsIngestionDouble } from '../../../support/logs-ingestion-double.ts';
import { makeTestPki, type TestPki } from '../../../support/tls-certs.ts';
import { makeTempDir } from '../../../support/tmp.ts';

export const RULE_ID = 'dcr-0123456789abcdef0123456789abcdef';
export const STREAM = 'Custom-ScheduledEvents';
const AUTHORITY_HOST = 'AZURE_POD_IDENTITY_AUTHORITY_HOST';

export interface AzureMonitorSetup {
  pki: TestPki;
  double: LogsIngestionDouble;
  simulator: RunningSimulator;
  /** Sink options (before parsing) for the double, trusting the private CA. */
  options(extra?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export async function startAzureMonitorSetup(): Promise<AzureMonitorSetup> {
  const tmp = makeTempDir('sef-azmon-');
  const pki = makeTestPki(tmp.dir);
  const double = await LogsIngestionDouble.start({
    key: pki.server.key,
    cert: pki.server.cert,
    rules: { [RULE_ID]: [STREAM] },
  });
  const simulator = await startSimulator({ port: 0 });
  const previous = process.env[AUTHORITY_HOST];
  process.env[AUTHORITY_HOST] = simulator.url;
  return {
    pki,
    double,
    simulator,
    options: (extra = {}) => ({
      endpoint: double.url,
      ruleId: RULE_ID,
      streamName: STREAM,
      tls: { ca: { file: pki.ca.certFile } },
      timeoutMs: 10_000,
      ...extra,
    }),
    async close() {
      if (previous === undefined) delete process.env[AUTHORITY_HOST];
      else process.env[AUTHORITY_HOST] = previous;
      await double.close();
      await simulator.close();
      tmp.cleanup();
    },
  };
}

/**
 * Compliance harness (test/support/sink-harness.ts) for the eventhubs sink: its own Event Hubs double (AMQP,
 * one hub with two partitions) with injected faults; the connection string reaches the sink through an
 * environment variable, removed again by close().
 */
import { startEventHubsDouble } from '../../../support/event-hubs-double/index.ts';
import type { Harness } from '../../../support/sink-harness.ts';

const ENV_HUB = 'SEF_COMPLIANCE_EH_CONN';

export async function eventHubsHarness(): Promise<Harness> {
  const hub = 'compliance';
  const double = await startEventHubsDouble({ hubs: { [hub]: 2 } });
  process.env[ENV_HUB] = double.connectionString(hub);
  return {
    options: {
      connectionString: `\${${ENV_HUB}}`,
      retry: { maxRetries: 0, retryDelayMs: 20, maxRetryDelayMs: 50, timeoutMs: 5000 },
    },
    secrets: [double.sasKey, double.connectionString(hub)],
    arrived: () => double.received(hub).map((e) => String(e.messageId)),
    breakDestination(kind) {
      if (kind === 'destination') {
        // The identity lost its "Azure Event Hubs Data Sender" role: the hub refuses the token for every link.
        double.setFault({ kind: 'unauthorized', stage: 'cbs', hub });
        return;
      }
      double.setFault({ kind: kind === 'retryable' ? 'server-busy' : 'message-too-large', hub });
    },
    repair: () => double.clearFaults(),
    // Larger than the hub's message size limit (1 MiB on the double): the sink sends the records before it in
    // their own batch, then reports the oversized one's index.
    poison: (record) => ({ ...record, data: { ...record.data, Description: 'x'.repeat(1_100_000) } }),
    permanent: true,
    refusal: 'amqp:unauthorized-access on the token (put-token): the Data Sender role was removed',
    hang: () => double.setFault({ kind: 'never-settle', hub }),
    close: async () => {
      delete process.env[ENV_HUB];
      await double.close();
    },
  };
}

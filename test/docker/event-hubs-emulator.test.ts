/**
 * Optional Docker tier (`npm run test:docker`, never part of `npm test`): the Event Hubs sink against the
 * official Event Hubs emulator (mcr.microsoft.com/azure-messaging/eventhubs-emulator) with Azurite as its
 * metadata/blob store, started with testcontainers, and read back with EventHubConsumerClient.
 *
 * Without a Docker engine the tier cannot run: then a single test asserts the engine check and prints why
 * (it is not skipped and passes nothing else). Pulling the images needs network access to mcr.microsoft.com.
 */
import { EventHubConsumerClient, earliestEventPosition, type ReceivedEventData } from '@azure/event-hubs';
import {
  GenericContainer,
  getContainerRuntimeClient,
  Network,
  type StartedNetwork,
  type StartedTestContainer,
  Wait,
} from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { EventHubsSink, eventHubsOptionsSchema } from '../../src/sinks/event-hubs/index.ts';
import { vmRecords } from '../support/records.ts';
import { waitFor } from '../support/wait.ts';

const EMULATOR_IMAGE = 'mcr.microsoft.com/azure-messaging/eventhubs-emulator:latest';
const AZURITE_IMAGE = 'mcr.microsoft.com/azure-storage/azurite:latest';
const HUB = 'lifecycle';
/** The emulator's documented fixed development key (not a secret). */
const EMULATOR_KEY = 'SAS_KEY_VALUE';

/** Whether a Docker engine answers, and if not, why. */
async function dockerEngine(): Promise<{ available: true } | { available: false; reason: string }> {
  try {
    const client = await getContainerRuntimeClient();
    await client.info;
    return { available: true };
  } catch (error) {
    return { available: false, reason: (error as Error).message };
  }
}

const engine = await dockerEngine();

if (!engine.available) {
  describe('Event Hubs emulator tier', () => {
    it('did not run: no Docker engine is reachable', () => {
      console.warn(
        `[docker tier] Event Hubs emulator tests NOT run — no Docker engine: ${engine.reason}. ` +
          'The same sink behaviour is covered against the AMQP test double in test/integration/sinks/event-hubs.',
      );
      expect(engine.available).toBe(false);
      expect(engine.reason.length).toBeGreaterThan(0);
    });
  });
} else {
  describe('Event Hubs sink → official Event Hubs emulator (+ Azurite)', () => {
    let network: StartedNetwork;
    let azurite: StartedTestContainer;
    let emulator: StartedTestContainer;
    let connectionString: string;

    beforeAll(async () => {
      network = await new Network().start();
      azurite = await new GenericContainer(AZURITE_IMAGE)
        .withNetwork(network)
        .withNetworkAliases('azurite')
        .withCommand([
          'azurite',
          '--blobHost',
          '0.0.0.0',
          '--queueHost',
          '0.0.0.0',
          '--tableHost',
          '0.0.0.0',
          '--skipApiVersionCheck',
        ])
        .start();
      const config = {
        UserConfig: {
          NamespaceConfig: [
            {
              Type: 'EventHub',
              Name: 'emulatorNs1',
              Entities: [{ Name: HUB, PartitionCount: '2', ConsumerGroups: [{ Name: 'cg1' }] }],
            },
          ],
          LoggingConfig: { Type: 'File' },
        },
      };
      emulator = await new GenericContainer(EMULATOR_IMAGE)
        .withNetwork(network)
        .withEnvironment({ BLOB_SERVER: 'azurite', METADATA_SERVER: 'azurite', ACCEPT_EULA: 'Y' })
        .withCopyContentToContainer([
          { content: JSON.stringify(config), target: '/Eventhubs_Emulator/ConfigFiles/Config.json' },
        ])
        .withExposedPorts(5672)
        .withWaitStrategy(Wait.forLogMessage(/Emulator Service is Successfully Up/))
        .withStartupTimeout(240_000)
        .start();
      const host = emulator.getHost() === 'localhost' ? '127.0.0.1' : emulator.getHost();
      connectionString = `Endpoint=sb://${host}:${emulator.getMappedPort(5672)};SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${EMULATOR_KEY};UseDevelopmentEmulator=true`;
    });
    afterAll(async () => {
      await emulator?.stop();
      await azurite?.stop();
      await network?.stop();
    });

    it('delivers records that EventHubConsumerClient reads back with ids, keys and properties', async () => {
      const options = eventHubsOptionsSchema(() => ({ EMU: connectionString })).parse({
        connectionString: { env: 'EMU' },
        eventHubName: HUB,
      });
      const sink = new EventHubsSink('eh-emulator', options, silentLogger());
      const consumer = new EventHubConsumerClient('$Default', connectionString, HUB);
      try {
        const records = vmRecords(10, 3, 0);
        await sink.deliver(records, new AbortController().signal);
        const events: ReceivedEventData[] = [];
        const subscription = consumer.subscribe(
          { processEvents: async (batch) => void events.push(...batch), processError: async () => {} },
          { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 },
        );
        await waitFor(() => records.every((r) => events.some((e) => e.messageId === r.id)), 'read-back', {
          timeoutMs: 60_000,
        });
        await subscription.close();
        for (const r of records) {
          const e = events.find((x) => x.messageId === r.id)!;
          expect(e.body).toEqual(r);
          expect(e.partitionKey).toBe(r.vmid);
          expect(e.properties?.['cloudEvents:id']).toBe(r.id);
        }
      } finally {
        await sink.close();
        await consumer.close();
      }
    });
  });
}

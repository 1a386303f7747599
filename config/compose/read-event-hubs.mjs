// Prints every event of an Event Hub as one JSON line, from the earliest event on. docker-compose.yml runs it
// against the Event Hubs emulator (`docker compose run --rm eventhubs-reader`); it works against any hub.
//
// Environment:
//   EVENTHUBS_CONNECTION_STRING  required (the emulator's: ...;UseDevelopmentEmulator=true)
//   EVENTHUB_NAME                required unless the connection string has EntityPath
//   EVENTHUB_CONSUMER_GROUP      default $Default
//   EVENTHUB_READ_MAX            stop after this many events (default: run until Ctrl-C)
// Plain JavaScript so that it runs in the production image (which has @azure/event-hubs, not TypeScript).
import { EventHubConsumerClient, earliestEventPosition } from '@azure/event-hubs';

const connectionString = process.env.EVENTHUBS_CONNECTION_STRING;
if (!connectionString) {
  console.error('read-event-hubs: set EVENTHUBS_CONNECTION_STRING');
  process.exit(2);
}
const hub = process.env.EVENTHUB_NAME || undefined;
const group = process.env.EVENTHUB_CONSUMER_GROUP || '$Default';
const max = process.env.EVENTHUB_READ_MAX ? Number(process.env.EVENTHUB_READ_MAX) : Number.POSITIVE_INFINITY;
if (!(max > 0)) {
  console.error('read-event-hubs: EVENTHUB_READ_MAX must be a positive number');
  process.exit(2);
}

const client = hub
  ? new EventHubConsumerClient(group, connectionString, hub)
  : new EventHubConsumerClient(group, connectionString);
let seen = 0;
let stopping = false;

async function stop(code) {
  if (stopping) return;
  stopping = true;
  await subscription.close();
  await client.close();
  process.exit(code);
}

const subscription = client.subscribe(
  {
    processEvents: async (events, context) => {
      for (const event of events) {
        if (seen >= max) break;
        seen += 1;
        const body = Buffer.isBuffer(event.body) ? event.body.toString('utf8') : event.body;
        console.log(
          JSON.stringify({
            partitionId: context.partitionId,
            sequenceNumber: event.sequenceNumber,
            partitionKey: event.partitionKey ?? null,
            enqueuedTimeUtc: event.enqueuedTimeUtc,
            properties: event.properties ?? {},
            body,
          }),
        );
      }
      if (seen >= max) await stop(0);
    },
    processError: async (error, context) => {
      // The emulator may still be starting: the SDK keeps retrying, so report and carry on.
      console.error(`read-event-hubs: partition ${context.partitionId || '-'}: ${error.message}`);
    },
  },
  { startPosition: earliestEventPosition, maxBatchSize: 50, maxWaitTimeInSeconds: 5 },
);

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void stop(0));

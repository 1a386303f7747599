/**
 * Heartbeats over the Event Hubs REST API (docs/sinks-event-hubs.md, "Heartbeat transport") against the test
 * double's HTTPS front (TLS mode, same port as AMQP):
 * - the front is proven against real clients: curl sends the documented request (SAS token, BrokerProperties,
 *   Content-Type, a custom property) and the SDK's EventHubConsumerClient reads what REST wrote; bad tokens get
 *   401, unknown hubs 404;
 * - the sink's REST heartbeat and the same heartbeat sent with the SDK over AMQP read back alike (body, message
 *   id, content type, partition key, CloudEvents properties), so the fleet consumer (which reads with the SDK)
 *   ingests either the same;
 * - refusals name the problem and the fix and never carry the key, the signature or the connection string, also
 *   when the server echoes the token.
 * This process trusts the double's throw-away certificate through tls.setDefaultCACertificates (child processes
 * get NODE_EXTRA_CA_CERTS).
 */
import { execFile } from 'node:child_process';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { promisify } from 'node:util';
import {
  EventHubConsumerClient,
  EventHubProducerClient,
  earliestEventPosition,
  type ReceivedEventData,
} from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/log.ts';
import {
  cloudEventsProperties,
  EventHubsSink,
  partitionKeyFor,
  toEventData,
} from '../../../../src/sinks/event-hubs/index.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import {
  createSasToken,
  type EventHubsDouble,
  generateTestCertificate,
  startEventHubsDouble,
  type TestCertificate,
} from '../../../support/event-hubs-double/index.ts';
import { heartbeatOf } from '../../../support/fleet-records.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { doubleSinkOptions, live } from './helpers.ts';

const run = promisify(execFile);

let tmp: { dir: string; cleanup: () => void };
let cert: TestCertificate;
let double: EventHubsDouble;
const defaultCas = getCACertificates('default');

beforeAll(async () => {
  tmp = makeTempDir('eh-rest');
  cert = generateTestCertificate(tmp.dir);
  setDefaultCACertificates([...defaultCas, cert.cert]);
  double = await startEventHubsDouble({
    hubs: { curl: 2, beats: 4, echo: 1 },
    tls: { key: cert.key, cert: cert.cert },
  });
});
afterAll(async () => {
  await double?.close();
  setDefaultCACertificates(defaultCas);
  tmp?.cleanup();
});

/** Every event of `hub` read back with the SDK's consumer (as the fleet consumer reads). */
async function readBack(hub: string, count: number): Promise<ReceivedEventData[]> {
  const consumer = new EventHubConsumerClient('$Default', double.connectionString(hub));
  const events: ReceivedEventData[] = [];
  try {
    const subscription = consumer.subscribe(
      {
        processEvents: async (batch) => {
          events.push(...batch);
        },
        processError: async () => {},
      },
      { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 },
    );
    await waitFor(() => events.length >= count, `the consumer to read ${count} events of ${hub}`);
    await subscription.close();
  } finally {
    await consumer.close();
  }
  return events;
}

/** curl's status code for the documented send-event request with `authorization`. */
async function curlSend(path: string, authorization: string, body: string): Promise<string> {
  const { stdout } = await run('curl', [
    '--silent',
    '--output',
    '/dev/null',
    '--write-out',
    '%{http_code}',
    '--noproxy',
    '*',
    '--cacert',
    cert.certPath,
    '-X',
    'POST',
    '-H',
    `Authorization: ${authorization}`,
    '-H',
    'Content-Type: application/atom+xml;type=entry;charset=utf-8',
    '-H',
    'BrokerProperties: {"MessageId":"m-1","PartitionKey":"dev-01"}',
    '-H',
    'Location: "Redmond"',
    '--data-binary',
    body,
    `https://${double.namespaceHost}${path}?timeout=60&api-version=2014-01`,
  ]);
  return stdout;
}

describe('the double’s HTTPS front, proven with curl and the SDK consumer', () => {
  it('accepts the documented request and stores it where AMQP consumers read it', async () => {
    const resource = `https://${double.namespaceHost}/curl`;
    const token = createSasToken(
      resource,
      double.sasKeyName,
      double.sasKey,
      Math.floor(Date.now() / 1000) + 600,
    );
    expect(await curlSend('/curl/messages', token, '{"DeviceId":"dev-01","Temperature":"37.0"}')).toBe('201');
    expect(await curlSend('/curl/partitions/1/messages', token, '{"n":2}')).toBe('201');
    const events = await readBack('curl', 2);
    const byBody = (n: number) => events.find((e) => (e.body as { n?: number }).n === n);
    const first = events.find((e) => (e.body as { DeviceId?: string }).DeviceId === 'dev-01')!;
    expect(first.messageId).toBe('m-1');
    expect(first.partitionKey).toBe('dev-01');
    expect(first.contentType).toBe('application/atom+xml;type=entry;charset=utf-8');
    expect(first.properties).toMatchObject({ Location: 'Redmond' });
    expect(byBody(2)).toBeDefined();
    expect(double.received('curl').find((e) => (e.body as { n?: number }).n === 2)?.partitionId).toBe('1');
  });

  it('answers 401 to a bad or missing token and 404 to an unknown hub', async () => {
    const expiry = Math.floor(Date.now() / 1000) + 600;
    const wrongKey = createSasToken(
      `https://${double.namespaceHost}/curl`,
      double.sasKeyName,
      'd3Jvbmc=',
      expiry,
    );
    expect(await curlSend('/curl/messages', wrongKey, '{}')).toBe('401');
    const otherHub = createSasToken(
      `https://${double.namespaceHost}/beats`,
      double.sasKeyName,
      double.sasKey,
      expiry,
    );
    expect(await curlSend('/curl/messages', otherHub, '{}')).toBe('401');
    expect(await curlSend('/curl/messages', 'Bearer not-a-jwt', '{}')).toBe('401');
    const nsToken = createSasToken(
      `https://${double.namespaceHost}/`,
      double.sasKeyName,
      double.sasKey,
      expiry,
    );
    expect(await curlSend('/nope/messages', nsToken, '{}')).toBe('404');
  });
});

describe('the sink’s heartbeats over REST', () => {
  it('read back like the same heartbeat sent with the SDK over AMQP', async () => {
    const sink = new EventHubsSink('hub', doubleSinkOptions(double, 'beats'), silentLogger());
    expect(sink.heartbeatTransport).toBe('rest');
    const overRest = heartbeatOf({ vm: 'web_1', at: 60 });
    const overAmqp = heartbeatOf({ vm: 'web_2', at: 60 });
    await sink.sendHeartbeat(overRest, live());
    await sink.close();
    const producer = new EventHubProducerClient(double.connectionString('beats'));
    try {
      const batch = await producer.createBatch({ partitionKey: partitionKeyFor(overAmqp, 'vmId')! });
      expect(batch.tryAdd(toEventData(overAmqp))).toBe(true);
      await producer.sendBatch(batch);
    } finally {
      await producer.close();
    }
    expect(
      double
        .received('beats')
        .map((e) => e.transport)
        .sort(),
    ).toEqual(['amqp', 'rest']);
    const events = await readBack('beats', 2);
    const rest = events.find((e) => e.messageId === overRest.id)!;
    const amqp = events.find((e) => e.messageId === overAmqp.id)!;
    expect(rest.body).toEqual(overRest);
    expect(amqp.body).toEqual(overAmqp);
    expect(rest.contentType).toBe(amqp.contentType);
    expect(rest.partitionKey).toBe(overRest.vmid);
    expect(amqp.partitionKey).toBe(overAmqp.vmid);
    // The same CloudEvents properties; over REST with the binding's cloudEvents_ prefix and the time as text.
    const expected = (h: typeof overRest, time: (iso: string) => unknown) =>
      Object.fromEntries(
        Object.entries(cloudEventsProperties(h)).map(([k, v]) => [
          k.replace('cloudEvents:', 'cloudEvents_'),
          v instanceof Date ? time(v.toISOString()) : v,
        ]),
      );
    expect(rest.properties).toEqual(expected(overRest, (iso) => iso));
    const amqpProperties = Object.fromEntries(
      Object.entries(amqp.properties ?? {}).map(([k, v]) => [k.replace('cloudEvents:', 'cloudEvents_'), v]),
    );
    expect(amqpProperties).toEqual(expected(overAmqp, (iso) => Date.parse(iso)));
  });

  it('a refused heartbeat names the problem and the fix, without the key, signature or token even when echoed', async () => {
    const echoing = await startEventHubsDouble({
      hubs: { echo: 1 },
      tls: { key: cert.key, cert: cert.cert },
      echoRejectedTokens: true,
      sasKeys: { RootManageSharedAccessKey: 'c2VydmVyLXNpZGUta2V5LTAwMDAwMDAwMDAwMA==' },
    });
    try {
      // A connection string whose key the namespace does not know: 401, and the double quotes the token back.
      const options = doubleSinkOptions(double, 'echo', {});
      const connection = double.connectionString('echo').replace(double.namespaceHost, echoing.namespaceHost);
      const sink = new EventHubsSink(
        'hub',
        { ...options, connectionString: { reveal: () => connection } as never },
        silentLogger(),
      );
      const error = await sink.sendHeartbeat(heartbeatOf({ at: 1 }), live()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DeliveryError);
      const message = (error as DeliveryError).message;
      expect(message).toMatch(/HTTP 401/);
      expect(message).toMatch(/fix: check the connection string's key/);
      expect(echoing.restRequests().at(-1)).toMatchObject({ status: 401, auth: 'sas' });
      expect(message).not.toContain(double.sasKey);
      expect(message).not.toContain('sig=');
      expect(message).not.toContain('SharedAccessSignature sr');
      expect(message).not.toContain(connection);
      // Unknown hub: 404 with its fix.
      const missing = new EventHubsSink(
        'hub',
        { ...options, connectionString: { reveal: () => double.connectionString('absent') } as never },
        silentLogger(),
      );
      await expect(missing.sendHeartbeat(heartbeatOf({ at: 2 }), live())).rejects.toThrow(
        /HTTP 404.*fix: check eventHubName/,
      );
    } finally {
      await echoing.close();
    }
  });
});

/**
 * The Event Hubs sink against the AMQP test double with the real @azure/event-hubs SDK: mapping, partition keys,
 * batching, size limits, lazy/reused/closed client, reconnects, read-back with EventHubConsumerClient.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventHubConsumerClient, earliestEventPosition, type ReceivedEventData } from '@azure/event-hubs';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { silentLogger } from '../../../../src/log.ts';
import {
  EventHubsSink,
  eventHubsOptionsSchema,
  partitionKeyFor,
} from '../../../../src/sinks/event-hubs/index.ts';
import { findSinkFactory } from '../../../../src/sinks/registry.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import {
  type EventHubsDouble,
  enableClientNoDelay,
  startEventHubsDouble,
} from '../../../support/event-hubs-double/index.ts';
import { vmRecord, vmRecords } from '../../../support/records.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { doubleSink, doubleSinkOptions, live } from './helpers.ts';

let double: EventHubsDouble;
let restoreNoDelay: () => void;
const sinks: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  restoreNoDelay = enableClientNoDelay();
  double = await startEventHubsDouble({ hubs: { lifecycle: 4, small: 2, other: 2 } });
});
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.close();
  double.clearFaults();
});
afterAll(async () => {
  await double.close();
  restoreNoDelay();
});

function track<T extends { close(): Promise<void> }>(sink: T): T {
  sinks.push(sink);
  return sink;
}

describe('Event Hubs sink → test double', () => {
  it('sends one event per record: CloudEvent body, messageId, cloudEvents:* properties, vmId partition key', async () => {
    const sink = track(doubleSink(double, 'lifecycle'));
    const records = vmRecords(6, 3);
    await sink.deliver(records, live());
    const got = double.received('lifecycle');
    expect(got).toHaveLength(6);
    for (const record of records) {
      const ev = got.find((e) => e.messageId === record.id);
      expect(ev, record.id).toBeDefined();
      expect(ev!.body).toEqual(record);
      expect(ev!.contentType).toBe('application/cloudevents+json; charset=utf-8');
      expect(ev!.partitionKey).toBe(record.vmid);
      expect(ev!.applicationProperties).toMatchObject({
        'cloudEvents:specversion': '1.0',
        'cloudEvents:id': record.id,
        'cloudEvents:source': record.source,
        'cloudEvents:type': record.type,
        'cloudEvents:subject': record.subject,
        'cloudEvents:vmid': record.vmid,
        'cloudEvents:maintenancetype': 'Reboot',
        'cloudEvents:transition': 'scheduled',
      });
      expect((ev!.applicationProperties['cloudEvents:time'] as Date).toISOString()).toBe(record.time);
    }
    // per-VM order: all records of one VM land on one partition, in order
    for (const vm of ['vm-0', 'vm-1', 'vm-2']) {
      const mine = got.filter((e) => (e.body as { data: { vm: { name: string } } }).data.vm.name === vm);
      expect(new Set(mine.map((e) => e.partitionId)).size).toBe(1);
      expect(mine.map((e) => e.sequenceNumber)).toEqual(
        [...mine.map((e) => e.sequenceNumber)].sort((a, b) => a - b),
      );
    }
  });

  it('honours the partitionKey modes none, eventId and vmScaleSetName', async () => {
    const record = vmRecord(1, { vm: 'ss_3', scaleSet: 'ss', eventId: 'e-42' });
    const loner = vmRecord(2, { vm: 'loner' });
    expect(partitionKeyFor(record, 'vmId')).toBe(record.vmid);
    expect(partitionKeyFor(record, 'eventId')).toBe('e-42');
    expect(partitionKeyFor(record, 'vmScaleSetName')).toBe('ss');
    expect(partitionKeyFor(loner, 'vmScaleSetName')).toBe(loner.vmid);
    expect(partitionKeyFor(record, 'none')).toBeUndefined();

    for (const mode of ['none', 'eventId', 'vmScaleSetName'] as const) {
      const sink = track(doubleSink(double, 'other', { partitionKey: mode }));
      const before = double.received('other').length;
      await sink.deliver([record], live());
      const ev = double.received('other').slice(before);
      expect(ev).toHaveLength(1);
      expect(ev[0]!.partitionKey).toBe(partitionKeyFor(record, mode));
    }
  });

  it('splits a big delivery into size-limited batches and keeps every record', async () => {
    const small = await startEventHubsDouble({ hubs: { small: 2 }, maxMessageSize: 16 * 1024 });
    try {
      const sink = track(
        new EventHubsSink('eh-small', doubleSinkOptions(small, 'small', { maxBatch: 200 }), silentLogger()),
      );
      const records = Array.from({ length: 60 }, (_, i) => vmRecord(i, { vm: `vm-${i % 2}`, padding: 1500 }));
      await sink.deliver(records, live());
      const got = small.received('small');
      expect(got.map((e) => e.messageId).sort()).toEqual(records.map((r) => r.id).sort());
      // ~2.5 KB per event in a 16 KB limit: several transfers were needed
      expect(small.stats().transfers).toBeGreaterThan(6);
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      await small.close();
    }
  });

  it('fails a record larger than the hub maximum permanently with its index, after sending the ones before it', async () => {
    const small = await startEventHubsDouble({ hubs: { small: 1 }, maxMessageSize: 8 * 1024 });
    try {
      const sink = track(doubleSink(small, 'small'));
      const records = [vmRecord(1), vmRecord(2), vmRecord(3, { padding: 20_000 }), vmRecord(4)];
      const error = await sink.deliver(records, live()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DeliveryError);
      const de = error as DeliveryError;
      expect(de.retryable).toBe(false);
      expect(de.code).toBe('payload-too-large');
      expect(de.failedIndex).toBe(2);
      expect(de.message).toContain(records[2]!.id);
      expect(small.received('small').map((e) => e.messageId)).toEqual([records[0]!.id, records[1]!.id]);
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      await small.close();
    }
  });

  it('connects lazily, reuses one connection and closes it on close()', async () => {
    const fresh = await startEventHubsDouble({ hubs: { lifecycle: 2 } });
    try {
      const sink = doubleSink(fresh, 'lifecycle');
      expect(fresh.stats().connectionsOpened).toBe(0);
      for (let i = 0; i < 5; i++) await sink.deliver([vmRecord(i)], live());
      expect(fresh.stats().connectionsOpened).toBe(1);
      expect(fresh.openConnections()).toBe(1);
      await sink.close();
      await waitFor(() => fresh.openConnections() === 0, 'the sink to close its connection');
      await expect(sink.deliver([vmRecord(9)], live())).rejects.toMatchObject({
        code: 'closed',
        retryable: true,
      });
    } finally {
      await fresh.close();
    }
  });

  it('reconnects after the service drops the connection', async () => {
    const sink = track(doubleSink(double, 'lifecycle'));
    await sink.deliver([vmRecord(100)], live());
    const opened = double.stats().connectionsOpened;
    expect(double.dropConnections()).toBeGreaterThan(0);
    await waitFor(() => double.openConnections() === 0, 'connections to drop');
    const record = vmRecord(101);
    await sink.deliver([record], live());
    expect(double.stats().connectionsOpened).toBeGreaterThan(opened);
    expect(double.received('lifecycle').filter((e) => e.messageId === record.id)).toHaveLength(1);
  });

  it('rejects an aborted delivery as retryable without sending', async () => {
    const sink = track(doubleSink(double, 'lifecycle'));
    const controller = new AbortController();
    controller.abort();
    const before = double.received('lifecycle').length;
    await expect(sink.deliver([vmRecord(200)], controller.signal)).rejects.toMatchObject({
      retryable: true,
      code: 'aborted',
    });
    expect(double.received('lifecycle')).toHaveLength(before);
  });

  it('is read back by EventHubConsumerClient with the same ids, properties and partition keys', async () => {
    const hub = await startEventHubsDouble({ hubs: { readback: 4 } });
    const consumer = new EventHubConsumerClient('$Default', hub.connectionString('readback'));
    try {
      const sink = track(doubleSink(hub, 'readback'));
      const records = vmRecords(12, 4);
      await sink.deliver(records, live());
      const events: ReceivedEventData[] = [];
      const subscription = consumer.subscribe(
        {
          processEvents: async (batch) => {
            events.push(...batch);
          },
          processError: async () => {},
        },
        { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 },
      );
      await waitFor(() => events.length >= 12, 'the consumer to read 12 events');
      await subscription.close();
      expect(events.map((e) => e.messageId).sort()).toEqual(records.map((r) => r.id).sort());
      for (const e of events) {
        const record = records.find((r) => r.id === e.messageId)!;
        expect(e.body).toEqual(record);
        expect(e.partitionKey).toBe(record.vmid);
        expect(e.contentType).toBe('application/cloudevents+json; charset=utf-8');
        expect(e.properties?.['cloudEvents:type']).toBe(record.type);
        expect(typeof e.sequenceNumber).toBe('number');
      }
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      await consumer.close();
      await hub.close();
    }
  });
});

describe('Event Hubs sink configuration', () => {
  const factory = findSinkFactory('eventhubs');

  it('is registered as type eventhubs', () => {
    expect(factory?.description).toMatch(/Event Hubs/);
  });

  it('reads the connection string from a file and never shows it', async () => {
    const { dir, cleanup } = makeTempDir('eh-secret');
    onTestFinished(cleanup);
    const file = join(dir, 'conn');
    writeFileSync(file, `${double.connectionString('lifecycle')}\n`);
    const parsed = factory!.optionsSchema.parse({ connectionString: { file } });
    expect(JSON.stringify(parsed)).not.toContain(double.sasKey);
    expect(JSON.stringify(parsed)).toContain('[redacted]');
    const sink = await factory!.create('eh-file', parsed, {
      logger: silentLogger(),
      vm: () => undefined,
      stateDir: dir,
    });
    onTestFinished(() => sink.close?.());
    const record = vmRecord(300);
    await sink.deliver([record], live());
    expect(double.received('lifecycle').some((e) => e.messageId === record.id)).toBe(true);
  });

  it('names the problem without quoting the secret', () => {
    const secret = 'Endpoint=nonsense;SharedAccessKey=TOPSECRETVALUE';
    const result = factory!.optionsSchema.safeParse({ connectionString: { env: 'X' } });
    expect(result.success).toBe(false);
    const parsedBad = eventHubsOptionsSchema(() => ({ BAD: secret })).safeParse({
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} secret syntax
      connectionString: '${BAD}',
    });
    const bad = String(parsedBad.error);
    expect(bad).toMatch(/not a valid Event Hubs connection string/);
    expect(bad).not.toContain('TOPSECRETVALUE');
    const neither = factory!.optionsSchema.safeParse({});
    expect(neither.success).toBe(false);
    expect(String(neither.error)).toMatch(/exactly one of connectionString or fullyQualifiedNamespace/);
    const noHub = factory!.optionsSchema.safeParse({ fullyQualifiedNamespace: 'ns.servicebus.windows.net' });
    expect(String(noHub.error)).toMatch(/eventHubName is required/);
    const both = factory!.optionsSchema.safeParse({
      fullyQualifiedNamespace: 'ns.servicebus.windows.net',
      eventHubName: 'h',
      credential: { kind: 'managed-identity', clientId: 'a', resourceId: '/x' },
    });
    expect(String(both.error)).toMatch(/clientId or resourceId, not both/);
  });

  it('defaults to the system-assigned managed identity, vmId keys and bounded SDK retries', () => {
    const parsed = factory!.optionsSchema.parse({
      fullyQualifiedNamespace: 'ns.servicebus.windows.net',
      eventHubName: 'lifecycle',
    });
    expect(parsed).toMatchObject({
      credential: { kind: 'managed-identity' },
      partitionKey: 'vmId',
      maxBatch: 100,
      retry: { maxRetries: 2, timeoutMs: 10_000 },
    });
  });
});

describe('test double: consumer epochs (used by the fleet consumer)', () => {
  it('a consumer with a higher ownerLevel takes the partition over; the old one gets ReceiverDisconnected', async () => {
    const hub = await startEventHubsDouble({ hubs: { fleet: 1 } });
    const first = new EventHubConsumerClient('$Default', hub.connectionString('fleet'));
    const second = new EventHubConsumerClient('$Default', hub.connectionString('fleet'));
    try {
      const sink = track(doubleSink(hub, 'fleet'));
      await sink.deliver([vmRecord(1)], live());
      const errors: string[] = [];
      const seenByFirst: string[] = [];
      const seenBySecond: string[] = [];
      const subA = first.subscribe(
        '0',
        {
          processEvents: async (b) => void seenByFirst.push(...b.map((e) => String(e.messageId))),
          processError: async (e) => void errors.push((e as { code?: string }).code ?? e.name),
        },
        { startPosition: earliestEventPosition, ownerLevel: 1, maxWaitTimeInSeconds: 1 },
      );
      await waitFor(() => seenByFirst.length === 1, 'the first consumer to read');
      const subB = second.subscribe(
        '0',
        {
          processEvents: async (b) => void seenBySecond.push(...b.map((e) => String(e.messageId))),
          processError: async () => {},
        },
        { startPosition: earliestEventPosition, ownerLevel: 2, maxWaitTimeInSeconds: 1 },
      );
      await waitFor(
        () => errors.includes('ReceiverDisconnectedError'),
        'the first consumer to be disconnected',
      );
      const record = vmRecord(2);
      await sink.deliver([record], live());
      await waitFor(() => seenBySecond.includes(record.id), 'the second consumer to read the new record');
      await subA.close();
      await subB.close();
    } finally {
      for (const s of sinks.splice(0)) await s.close();
      await first.close();
      await second.close();
      await hub.close();
    }
  });
});

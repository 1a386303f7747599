/**
 * Fault matrix: every fault the double injects ends either in delivery (retryable DeliveryError, then deliver()
 * again as the engine would) or in a permanent DeliveryError, for the record or the destination, that carries the
 * SDK's error — never silent loss.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import { EventHubsSink, eventHubsOptionsSchema } from '../../../../src/sinks/event-hubs/index.ts';
import { deliveryFailure } from '../../../support/delivery.ts';
import {
  type EventHubsDouble,
  type EventHubsFaultKind,
  enableClientNoDelay,
  startEventHubsDouble,
} from '../../../support/event-hubs-double/index.ts';
import { vmRecord, vmRecords } from '../../../support/records.ts';
import { doubleSink, live } from './helpers.ts';

let double: EventHubsDouble;
let restoreNoDelay: () => void;
const sinks: { close(): Promise<void> }[] = [];
let counter = 0;

beforeAll(async () => {
  restoreNoDelay = enableClientNoDelay();
  double = await startEventHubsDouble({ hubs: { lifecycle: 4 } });
});
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.close();
  double.clearFaults();
});
afterAll(async () => {
  await double.close();
  restoreNoDelay();
});

/** A sink without SDK retries, so each injected fault surfaces in one deliver() call. */
function sink(overrides: Record<string, unknown> = {}) {
  const s = doubleSink(double, 'lifecycle', {
    retry: { maxRetries: 0, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 500 },
    ...overrides,
  });
  sinks.push(s);
  return s;
}

function fresh(n = 3): LifecycleRecord[] {
  counter += 100;
  return vmRecords(n, 3, counter);
}

function copiesOf(id: string) {
  return double.received('lifecycle').filter((e) => e.messageId === id);
}

const RETRYABLE: Array<{ kind: EventHubsFaultKind; sdkCode: string; code: string }> = [
  { kind: 'server-busy', sdkCode: 'ServerBusyError', code: 'ServerBusy' },
  { kind: 'timeout', sdkCode: 'ServiceUnavailableError', code: 'ServiceUnavailable' },
  { kind: 'internal-error', sdkCode: 'InternalServerError', code: 'InternalServer' },
  { kind: 'quota-exceeded', sdkCode: 'QuotaExceededError', code: 'QuotaExceeded' },
  { kind: 'released', sdkCode: 'SendOperationFailedError', code: 'SendOperationFailed' },
  { kind: 'never-settle', sdkCode: 'OperationTimeoutError', code: 'OperationTimeout' },
];

describe('retryable faults end in delivery when the engine calls deliver() again', () => {
  for (const { kind, sdkCode, code } of RETRYABLE) {
    it(`${kind} → retryable ${code}, then delivered once`, async () => {
      const s = sink();
      const records = fresh();
      await s.deliver(records.slice(0, 1), live()); // connect first: the fault hits the send itself
      double.setFault({ kind: kind, times: 1 });
      const error = await deliveryFailure(s.deliver(records.slice(1), live()));
      expect(error.retryable).toBe(true);
      expect(error.code).toBe(code);
      expect((error.cause as { code?: string }).code).toBe(sdkCode);
      await s.deliver(records.slice(1), live());
      for (const r of records) expect(copiesOf(r.id), r.id).toHaveLength(1);
    });
  }

  it('SDK retries absorb a single server-busy inside one deliver()', async () => {
    const s = sink({ retry: { maxRetries: 2, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 1000 } });
    const records = fresh();
    double.setFault({ kind: 'server-busy', times: 1 });
    await s.deliver(records, live());
    expect(double.stats().faultsInjected).toBeGreaterThan(0);
    for (const r of records) expect(copiesOf(r.id)).toHaveLength(1);
  });

  it('when every SDK try fails the AggregateError is classified by its last error', async () => {
    const s = sink({ retry: { maxRetries: 1, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 1000 } });
    const records = fresh(1);
    double.setFault({ kind: 'server-busy', times: 2 });
    const error = await deliveryFailure(s.deliver(records, live()));
    expect(error.cause).toBeInstanceOf(AggregateError);
    expect(error).toMatchObject({ retryable: true, code: 'ServerBusy' });
    await s.deliver(records, live());
    expect(copiesOf(records[0]!.id)).toHaveLength(1);
  });

  it('a put-token refused as unauthorized refuses the destination (the engine pauses the sink) and recovers once accepted', async () => {
    const s = sink();
    const records = fresh(1);
    double.setFault({ kind: 'unauthorized', stage: 'cbs', times: 1 });
    const error = await deliveryFailure(s.deliver(records, live()));
    expect(error).toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'Unauthorized',
      failedIndex: 0,
    });
    expect(error.message).toContain('fix: give the identity the role "Azure Event Hubs Data Sender"');
    expect(double.tokens().some((t) => !t.accepted && t.reason === 'injected unauthorized')).toBe(true);
    await s.deliver(records, live());
    expect(copiesOf(records[0]!.id)).toHaveLength(1);
  });

  it('a connection drop mid-batch re-sends the whole batch with identical ids (at-least-once)', async () => {
    const s = sink();
    const records = fresh(6); // three VMs → three partition-key runs → three transfers
    await s.deliver(fresh(1), live());
    double.setFault({ kind: 'drop-connection', skip: 1, times: 1 });
    const error = await deliveryFailure(s.deliver(records, live()));
    expect(error.retryable).toBe(true);
    await s.deliver(records, live());
    const received = double.received('lifecycle');
    for (const r of records) {
      const copies = received.filter((e) => e.messageId === r.id);
      expect(copies.length, r.id).toBeGreaterThanOrEqual(1);
      expect(copies.length, r.id).toBeLessThanOrEqual(2);
      for (const c of copies) expect(c.body).toEqual(r);
    }
    // the run sent before the drop arrived twice, the rest once
    const twice = records.filter((r) => received.filter((e) => e.messageId === r.id).length === 2);
    expect(twice.length).toBeGreaterThan(0);
    expect(twice.length).toBeLessThan(records.length);
  });
});

describe('permanent faults carry the SDK error, the class and the failed index', () => {
  it('unauthorized on a send (a role removed from a running sender) → permanent for the destination, then delivered once', async () => {
    const s = sink();
    const records = fresh();
    await s.deliver(records.slice(0, 1), live());
    double.setFault({ kind: 'unauthorized', times: 1 });
    const error = await deliveryFailure(s.deliver(records.slice(1), live()));
    expect(error).toMatchObject({ retryable: false, scope: 'destination', code: 'Unauthorized' });
    expect((error.cause as { code?: string }).code).toBe('UnauthorizedError');
    await s.deliver(records.slice(1), live());
    for (const r of records) expect(copiesOf(r.id), r.id).toHaveLength(1);
  });

  it('not-found → permanent MessagingEntityNotFound, for the destination', async () => {
    const s = sink();
    const records = fresh(1);
    await s.deliver(records, live());
    double.setFault({ kind: 'not-found', times: 1 });
    const batch = [vmRecord(counter + 50)];
    const error = await deliveryFailure(s.deliver(batch, live()));
    expect(error).toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'MessagingEntityNotFound',
      failedIndex: 0,
    });
    expect((error.cause as { code?: string }).code).toBe('MessagingEntityNotFoundError');
  });

  it('an event hub that does not exist → permanent MessagingEntityNotFound, for the destination', async () => {
    const s = doubleSink(double, 'no-such-hub', {
      retry: { maxRetries: 0, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 1000 },
    });
    sinks.push(s);
    const error = await deliveryFailure(s.deliver(fresh(1), live()));
    expect(error).toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'MessagingEntityNotFound',
      failedIndex: 0,
    });
    expect(error.message).toContain('fix: check eventHubName');
  });

  it('message-too-large from the service on a multi-event batch lets the engine isolate the record', async () => {
    const s = sink();
    const records = [vmRecord(counter + 60, { vm: 'same' }), vmRecord(counter + 61, { vm: 'same' })];
    await s.deliver(fresh(1), live());
    double.setFault({ kind: 'message-too-large', times: 1 });
    const error = await deliveryFailure(s.deliver(records, live()));
    expect(error).toMatchObject({
      retryable: false,
      scope: 'record',
      code: 'payload-too-large',
      failedIndex: undefined,
    });
    expect((error.cause as { code?: string }).code).toBe('MessageTooLargeError');
    // the engine then re-delivers one at a time: both arrive
    await s.deliver(records.slice(0, 1), live());
    await s.deliver(records.slice(1), live());
    for (const r of records) expect(copiesOf(r.id)).toHaveLength(1);
  });
});

describe('authentication', () => {
  it('a wrong SAS key is refused by the double and reported as Unauthorized, permanent for the destination', async () => {
    const wrong = double
      .connectionString('lifecycle')
      .replace(double.sasKey, Buffer.from('wrong key').toString('base64'));
    const options = eventHubsOptionsSchema(() => ({ CONN: wrong })).parse({
      connectionString: { env: 'CONN' },
      retry: { maxRetries: 0, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 1000 },
    });
    const s = new EventHubsSink('eh-wrong-key', options, silentLogger());
    sinks.push(s);
    const error = await deliveryFailure(s.deliver(fresh(1), live()));
    expect(error).toMatchObject({ retryable: false, scope: 'destination', code: 'Unauthorized' });
    expect(error.message).not.toContain(double.sasKey);
    expect(double.tokens().some((t) => t.reason === 'SAS signature does not match the key')).toBe(true);
  });
});

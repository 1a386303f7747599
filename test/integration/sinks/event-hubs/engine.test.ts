/**
 * DeliveryEngine + SQLite outbox + Event Hubs sink + AMQP double, with faults injected while the outbox drains:
 * every committed record reaches Event Hubs (duplicates only with the identical id) or is dead-lettered with the
 * SDK's error; nothing is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryEngine, type RetryEvent } from '../../../../src/delivery/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import { openStore, type Store } from '../../../../src/store/index.ts';
import {
  type EventHubsDouble,
  enableClientNoDelay,
  startEventHubsDouble,
} from '../../../support/event-hubs-double/index.ts';
import { vmRecords } from '../../../support/records.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { doubleSink } from './helpers.ts';

let tmp: { dir: string; cleanup: () => void };
let double: EventHubsDouble;
let store: Store;
let restoreNoDelay: () => void;

beforeAll(async () => {
  restoreNoDelay = enableClientNoDelay();
  tmp = makeTempDir('eh-engine');
  double = await startEventHubsDouble({ hubs: { lifecycle: 4 } });
  store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
});
afterAll(async () => {
  store?.close();
  await double?.close();
  tmp?.cleanup();
  restoreNoDelay();
});

describe('engine + outbox + Event Hubs sink under faults', () => {
  it('delivers every record at least once with identical ids; a hub not found pauses the sink, which resumes by itself with nothing dead-lettered', async () => {
    const sink = doubleSink(double, 'lifecycle', {
      maxBatch: 20,
      retry: { maxRetries: 0, retryDelayMs: 10, maxRetryDelayMs: 20, timeoutMs: 400 },
    });
    const retries: RetryEvent[] = [];
    const paused: string[] = [];
    const resumed: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink, backoff: { initialMs: 10, maxMs: 50 }, probeBackoff: { initialMs: 10, maxMs: 50 } }],
      logger: silentLogger(),
      rescanIntervalMs: 50,
      observer: {
        delivery: (e) => {
          if (e.type === 'retry') retries.push(e);
          if (e.type === 'paused') paused.push(e.code);
          if (e.type === 'resumed') resumed.push(e.code);
        },
      },
    });
    // Faults are consumed in this order by the transfers that follow.
    double.setFault({ kind: 'server-busy', times: 3 });
    double.setFault({ kind: 'never-settle', times: 1 });
    double.setFault({ kind: 'drop-connection', times: 1 });
    double.setFault({ kind: 'quota-exceeded', times: 1 });
    double.setFault({ kind: 'not-found', times: 1 });
    engine.start();

    const records = vmRecords(100, 5);
    for (let i = 0; i < records.length; i += 10) {
      store.commit(
        { upTo: i },
        records.slice(i, i + 10).map((record) => ({ record, sinks: [sink.name] })),
      );
      engine.notify();
    }
    await waitFor(
      () => (store.stats().find((s) => s.sink === sink.name)?.pending ?? 0) === 0,
      'the outbox to drain',
      {
        timeoutMs: 30_000,
      },
    );
    await engine.stop(2000);

    expect(double.stats().faultsInjected).toBe(7);
    const codes = new Set(retries.map((r) => r.code));
    for (const code of ['ServerBusy', 'OperationTimeout', 'QuotaExceeded'])
      expect(codes.has(code), code).toBe(true);
    expect(paused).toEqual(['MessagingEntityNotFound']);
    expect(resumed).toEqual(['MessagingEntityNotFound']);
    expect(store.listDeadLetters({ sink: sink.name })).toEqual([]);
    const received = double.received('lifecycle');
    for (const record of records) {
      const copies = received.filter((e) => e.messageId === record.id);
      expect(copies.length, record.id).toBeGreaterThanOrEqual(1);
      for (const c of copies) expect(c.body).toEqual(record);
      expect(copies[0]!.partitionKey).toBe(record.vmid);
    }
  });
});

/**
 * One cap for every Retry-After (issue "Forwarder hardening, round 3", item 2): a receiver answering
 * `Retry-After: 999999` (11.6 days) holds a webhook sink back for at most MAX_RETRY_AFTER_MS (1 h) — in the
 * delivery engine's next attempt AND in the sink's own rate limiter, which used to defer by the raw value.
 * The delivery engine, the SQLite store and the webhook sink run in-process on the one FakeClock
 * (test/support/fake-clock.ts), against a real HTTP receiver (test/support/http-sink-server.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS } from '../../../../src/backoff.ts';
import { DeliveryEngine } from '../../../../src/delivery/engine.ts';
import { silentLogger } from '../../../../src/log.ts';
import { createGenericWebhookSink, webhookOptionsSchema } from '../../../../src/sinks/webhook/index.ts';
import { openStore } from '../../../../src/store/index.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, fakeClock } from '../../../support/sink-tests.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';

let server: HttpSinkServer;
const tmp = makeTempDir('sef-retry-after-cap-');
beforeAll(async () => {
  server = await HttpSinkServer.start();
});
afterAll(async () => {
  await server.close();
  tmp.cleanup();
});

describe('Retry-After: 999999 from a webhook receiver', () => {
  it('holds the sink back for 1 h (the one cap), not 11.6 days', async () => {
    const clock = fakeClock();
    const logger = silentLogger();
    const store = openStore({ stateDir: tmp.dir, logger, now: () => clock.now() });
    const sink = createGenericWebhookSink(
      'hook',
      webhookOptionsSchema().parse({ url: server.url('/ra-huge') }),
      context(logger),
      { clock },
    );
    const retries: number[] = [];
    const delivered: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink }],
      clock,
      logger,
      rescanIntervalMs: Number.POSITIVE_INFINITY,
      observer: {
        delivery: (e) => {
          if (e.type === 'retry') retries.push(e.delayMs);
          if (e.type === 'delivered') delivered.push(...e.recordIds);
        },
      },
    });
    try {
      server.enqueue({ status: 503, body: 'maintenance', headers: { 'retry-after': '999999' } });
      const record = makeRecord('scheduled');
      store.commit({ n: 1 }, [{ record, sinks: ['hook'] }]);
      engine.start();
      engine.notify();
      await waitFor(() => retries.length === 1, 'the 503 to be recorded as a failed attempt');
      expect(retries).toEqual([MAX_RETRY_AFTER_MS]);
      const before = server.requests.length;

      // One millisecond short of the cap: nothing is sent.
      await clock.advance(MAX_RETRY_AFTER_MS - 1);
      expect(server.requests.length).toBe(before);
      // At the cap, the retry goes out and is delivered (no sink-level wait of 11.6 days behind it).
      await clock.advance(1);
      await waitFor(() => delivered.includes(record.id), 'the record to be delivered 1 h after the 503');
      expect(server.requests.length).toBe(before + 1);
    } finally {
      const stopped = engine.stop(1000); // its deadline runs on the fake clock
      await clock.advance(2000);
      await stopped;
      store.close();
    }
  });
});

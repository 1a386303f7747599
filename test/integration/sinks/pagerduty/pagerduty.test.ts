/**
 * The pagerduty sink against the Events API v2 double on 127.0.0.1 (test/support/pagerduty-events-double.ts),
 * which checks every event against PagerDuty's documented contract: trigger and resolve with one dedup_key per
 * event occurrence on one VM (also across retries), the documented payload, the severity map, PagerDuty's 400,
 * 429 and 5xx answers, and the routing key in no message or log line.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import {
  dedupKey,
  PAGERDUTY_EVENTS_URL,
  pagerdutyOptionsSchema,
  pagerdutySinkFactory,
} from '../../../../src/sinks/pagerduty/index.ts';
import type { DeliveryError, Sink } from '../../../../src/sinks/types.ts';
import { deliveryFailure } from '../../../support/delivery.ts';
import { PagerDutyEventsDouble } from '../../../support/pagerduty-events-double.ts';
import { makeRecord } from '../../../support/records.ts';
import { capturingLogger, context, signal } from '../../../support/sink-tests.ts';

const ROUTING_KEY = 'R0ut1ngKeyPagerDutyTest000000042';
let double: PagerDutyEventsDouble;
const sinks: Sink[] = [];

beforeAll(async () => {
  double = await PagerDutyEventsDouble.start();
});
afterAll(async () => {
  for (const sink of sinks) await sink.close?.();
  await double.close();
});
beforeEach(() => {
  double.fault(undefined);
  double.accepted.length = 0;
});

async function makeSink(
  extra: Record<string, unknown> = {},
  logger = capturingLogger().logger,
): Promise<Sink> {
  const options = pagerdutyOptionsSchema().parse({
    routingKey: ROUTING_KEY,
    url: double.url,
    minIntervalMs: 0,
    ...extra,
  });
  const sink = await pagerdutySinkFactory.create('pd', options, context(logger));
  sinks.push(sink);
  return sink;
}

function failure(sink: Sink, batch: LifecycleRecord[]): Promise<DeliveryError> {
  return deliveryFailure(sink.deliver(batch, signal()));
}

describe('pagerduty sink', () => {
  it('triggers on scheduled and started, resolves on completed, all under one dedup_key; the payload is the documented one', async () => {
    const sink = await makeSink();
    const scheduled = makeRecord('scheduled', { eventType: 'Terminate' });
    const started = makeRecord('started', { eventType: 'Terminate', time: '2025-09-19T18:29:50.000Z' });
    const completed = makeRecord('completed', { eventType: 'Terminate', time: '2025-09-19T18:31:00.000Z' });
    await sink.deliver([scheduled, started, completed], signal());

    expect(double.accepted.map((e) => e.event_action)).toEqual(['trigger', 'trigger', 'resolve']);
    const key = `${scheduled.source}|${scheduled.data.EventId}|1`;
    expect(double.accepted.map((e) => e.dedup_key)).toEqual([key, key, key]);
    const [trigger] = double.accepted;
    expect(trigger).toMatchObject({
      routing_key: ROUTING_KEY,
      client: 'scheduled-events-forwarder',
      payload: {
        source: 'vm-web-01',
        severity: 'critical',
        timestamp: scheduled.time,
        class: 'Terminate',
        component: 'VirtualMachine',
        group: 'rg-web-prod',
        custom_details: {
          transition: 'scheduled',
          recordId: scheduled.id,
          EventId: scheduled.data.EventId,
          NotBefore: scheduled.data.NotBefore,
        },
      },
    });
    expect(trigger!.payload!.summary).toContain('Azure maintenance scheduled: Terminate on vm-web-01');
    // A resolve needs only the dedup_key.
    expect(double.accepted[2]).toEqual({
      routing_key: ROUTING_KEY,
      event_action: 'resolve',
      dedup_key: key,
    });
  });

  it('canceled resolves; a reappearing EventId (occurrence 2) and another VM get their own dedup_key', () => {
    const first = makeRecord('scheduled');
    const again = { ...first, data: { ...first.data, occurrence: 2 } };
    const otherVm = { ...first, source: first.source.replace('vm-web-01', 'vm-web-02') };
    expect(new Set([dedupKey(first), dedupKey(again), dedupKey(otherVm)]).size).toBe(3);
    expect(dedupKey(makeRecord('canceled'))).toBe(dedupKey(first));
  });

  it('keeps dedup_key within 255 characters (a hash) for an overlong source, stable across calls', async () => {
    const sink = await makeSink();
    const record = makeRecord('scheduled');
    const long = { ...record, source: `${record.source}/${'x'.repeat(300)}` };
    await sink.deliver([long], signal());
    const key = double.accepted[0]!.dedup_key;
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(dedupKey(long)).toBe(key);
  });

  it('a retried record carries the same dedup_key as its first attempt', async () => {
    const sink = await makeSink();
    const record = makeRecord('scheduled');
    double.fault(() => ({ status: 503, body: 'Service Unavailable' }));
    const error = await failure(sink, [record]);
    expect(error).toMatchObject({ retryable: true, code: 'http-503' });
    double.fault(undefined);
    // the engine hands the sink the record again, as read back from the outbox
    await sink.deliver([JSON.parse(JSON.stringify(record)) as LifecycleRecord], signal());
    const keys = double.requests
      .slice(-2)
      .map((r) => (JSON.parse(r.body) as { dedup_key: string }).dedup_key);
    expect(keys[0]).toBe(keys[1]);
    expect(double.accepted.map((e) => e.dedup_key)).toEqual([keys[0]]);
  });

  it('maps severity by event type: the defaults, configured overrides, and defaultSeverity for an unknown type', async () => {
    const types = ['Terminate', 'Preempt', 'Reboot', 'Redeploy', 'Freeze', 'LiveMigrate'];
    const batch = (tag: string) =>
      types.map((eventType, i) =>
        makeRecord('scheduled', { eventType, eventId: `5E7E${tag}00-0000-4000-8000-00000000000${i}` }),
      );
    const defaults = await makeSink();
    await defaults.deliver(batch('1'), signal());
    expect(double.accepted.map((e) => e.payload?.severity)).toEqual([
      'critical',
      'critical',
      'error',
      'error',
      'warning',
      'warning',
    ]);
    double.accepted.length = 0;
    const custom = await makeSink({
      severityByEventType: { Freeze: 'info', Reboot: 'critical' },
      defaultSeverity: 'error',
    });
    await custom.deliver(batch('2'), signal());
    expect(double.accepted.map((e) => e.payload?.severity)).toEqual([
      'critical',
      'critical',
      'critical',
      'error',
      'info',
      'error',
    ]);
  });

  it("a 400 is permanent and names PagerDuty's errors; the routing key stays out of messages and logs even when echoed", async () => {
    const { logger, output } = capturingLogger();
    const sink = await makeSink({}, logger);
    double.fault(() => ({
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        status: 'invalid event',
        message: 'Event object is invalid',
        errors: [`routing_key ${ROUTING_KEY} is not an Events API v2 integration`],
      }),
    }));
    const error = await failure(sink, [makeRecord('scheduled')]);
    expect(error).toMatchObject({ retryable: false, code: 'http-400' });
    expect(error.message).toContain(
      'invalid event: Event object is invalid: routing_key [redacted] is not an Events API v2',
    );
    expect(error.message).not.toContain(ROUTING_KEY);
    expect(output()).not.toContain(ROUTING_KEY);
  });

  it('an event PagerDuty finds invalid (a routing key of the wrong length) is permanent, with its validation error; warnings() says so first', async () => {
    const shortKey = 'short-key-0123456789';
    const options = pagerdutyOptionsSchema().parse({
      routingKey: shortKey,
      url: double.url,
      minIntervalMs: 0,
    });
    const warnings = pagerdutySinkFactory.warnings!('pd', options);
    expect(warnings).toEqual([
      expect.stringContaining('routingKey (inline) is 20 characters, not the 32'),
      expect.stringContaining('is plain http:// and not PagerDuty'),
    ]);
    expect(warnings.join('')).not.toContain(shortKey);
    const sink = await pagerdutySinkFactory.create('pd', options, context());
    sinks.push(sink);
    const error = await failure(sink, [makeRecord('scheduled')]);
    expect(error).toMatchObject({ retryable: false, code: 'http-400' });
    expect(error.message).toContain("Length of 'routing_key' is incorrect (should be 32 characters)");
    expect(error.message).not.toContain(shortKey);
  });

  it('429 is retryable and honours Retry-After when PagerDuty sends one; 5xx is retryable', async () => {
    const sink = await makeSink();
    const throttled = JSON.stringify({
      status: 'throttle event',
      message: 'Requests for this service are arriving too quickly. Please retry later.',
    });
    double.fault(() => ({ status: 429, body: throttled }));
    const plain = await failure(sink, [makeRecord('scheduled')]);
    expect(plain).toMatchObject({ retryable: true, code: 'http-429', retryAfterMs: undefined });
    expect(plain.message).toContain('throttle event: Requests for this service are arriving too quickly');
    double.fault(() => ({ status: 502, body: 'Bad Gateway' }));
    expect(await failure(sink, [makeRecord('scheduled')])).toMatchObject({
      retryable: true,
      code: 'http-502',
    });
    // Last: the sink's rate limiter then holds its next request back for the requested delay.
    double.fault(() => ({ status: 429, headers: { 'retry-after': '7' }, body: throttled }));
    expect(await failure(sink, [makeRecord('scheduled')])).toMatchObject({
      retryable: true,
      code: 'http-429',
      retryAfterMs: 7000,
    });
  });

  it('a permanent failure in a batch names the first failing record; the records before it were accepted', async () => {
    const sink = await makeSink();
    const batch = [0, 1, 2].map((i) =>
      makeRecord('scheduled', { eventId: `BA7C0000-0000-4000-8000-00000000000${i}` }),
    );
    double.fault((request) =>
      request.body.includes(batch[1]!.data.EventId)
        ? {
            status: 400,
            body: JSON.stringify({
              status: 'invalid event',
              message: 'Event object is invalid',
              errors: ['bad'],
            }),
          }
        : undefined,
    );
    const error = await failure(sink, batch);
    expect(error).toMatchObject({ retryable: false, failedIndex: 1 });
    expect(double.accepted.map((e) => e.payload?.custom_details?.recordId)).toEqual([batch[0]!.id]);
  });

  it('the default endpoint is the US region; the EU one is configurable; config validation names bad URLs', () => {
    expect(pagerdutyOptionsSchema().parse({ routingKey: ROUTING_KEY }).url).toBe(PAGERDUTY_EVENTS_URL);
    const bad = pagerdutyOptionsSchema().safeParse({
      routingKey: ROUTING_KEY,
      url: 'ftp://events.pagerduty.com/v2/enqueue',
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain('must be an http:// or https:// URL, not ftp:');
    expect(pagerdutySinkFactory.defaultFilter).toEqual({ scope: 'this-vm' });
  });
});

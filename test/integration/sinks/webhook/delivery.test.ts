/**
 * The HTTP delivery core against a real server on 127.0.0.1: status-code matrix (delivered / retry / dead
 * letter with the service's error string), Retry-After, the per-sink rate limiter on an injected clock,
 * timeout, redirects not followed, network errors, and the Standard Webhooks signature checked by the
 * independent `standardwebhooks` package (secret rotation → several signatures).
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter } from '../../../../src/sinks/http/rate-limiter.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import {
  createGenericWebhookSink,
  createSlackSink,
  slackOptionsSchema,
  webhookOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, fakeClock, signal } from '../../../support/sink-tests.ts';
import { SIGNING_SECRET, SIGNING_SECRET_2 } from './fixtures.ts';

let server: HttpSinkServer;
beforeAll(async () => {
  server = await HttpSinkServer.start();
});
afterAll(() => server.close());

function slackSink(path: string, extra: Record<string, unknown> = {}, clock = fakeClock()) {
  return createSlackSink(
    'alerts',
    slackOptionsSchema().parse({ url: server.url(path), minIntervalMs: 0, ...extra }),
    context(),
    {
      clock,
    },
  );
}

async function outcome(status: number, body: string, headers: Record<string, string> = {}) {
  server.enqueue({ status, body, headers });
  const sink = slackSink(`/matrix/${status}`);
  try {
    await sink.deliver([makeRecord('scheduled')], signal());
    return 'delivered' as const;
  } catch (error) {
    expect(error).toBeInstanceOf(DeliveryError);
    return error as DeliveryError;
  } finally {
    await sink.close?.();
  }
}

describe('status-code matrix', () => {
  const delivered: Array<[number, string]> = [
    [200, 'ok'],
    [201, ''],
    [202, ''], // Teams Workflows answers 202 Accepted
    [204, ''],
  ];
  for (const [status, body] of delivered) {
    it(`${status} → delivered`, async () => {
      expect(await outcome(status, body)).toBe('delivered');
    });
  }

  const retryable: Array<[number, string]> = [
    [408, ''],
    [429, 'rate_limited'],
    [500, 'rollup_error'],
    [502, 'Bad Gateway'],
    [503, ''],
    [504, ''],
  ];
  for (const [status, body] of retryable) {
    it(`${status} ${body || '(empty)'} → retry`, async () => {
      const error = await outcome(status, body);
      expect(error).not.toBe('delivered');
      const e = error as DeliveryError;
      expect(e.retryable).toBe(true);
      expect(e.code).toBe(`http-${status}`);
      expect(e.message).toContain(`HTTP ${status}`);
      expect(e.message).toContain('sink alerts (http://127.0.0.1:');
    });
  }

  const permanent: Array<[number, string, 'record' | 'destination']> = [
    [400, 'invalid_payload', 'record'],
    [400, 'invalid_blocks', 'record'],
    [413, 'Request Entity Too Large', 'record'],
    [403, 'action_prohibited', 'destination'],
    [403, 'invalid_token', 'destination'],
    [403, 'channel_is_archived', 'destination'], // some Slack clients see 403 for this one
    [404, 'channel_not_found', 'destination'],
    [404, 'no_service', 'destination'],
    [410, 'channel_is_archived', 'destination'],
    [401, 'Unauthorized', 'destination'],
    [301, '', 'destination'],
    [302, '', 'destination'],
  ];
  for (const [status, body, scope] of permanent) {
    const outcomeText = scope === 'record' ? 'dead letter' : 'the sink pauses';
    it(`${status} ${body || '(empty)'} → permanent for the ${scope} (${outcomeText}) with the service's error string`, async () => {
      const error = await outcome(status, body, status < 400 ? { location: server.url('/elsewhere') } : {});
      const e = error as DeliveryError;
      expect(e.retryable).toBe(false);
      expect(e.scope).toBe(scope);
      expect(e.code).toBe(`http-${status}`);
      if (body) expect(e.message).toContain(body);
      if (scope === 'destination') expect(e.message).toContain('fix: ');
      expect(e.message).not.toContain('/matrix/');
    });
  }

  it('a Slack error string that means "permanent" wins over a retryable status', async () => {
    const e = (await outcome(500, 'channel_not_found')) as DeliveryError;
    expect(e.retryable).toBe(false);
  });

  it('redirects are not followed', async () => {
    const before = server.requests.filter((r) => r.url === '/elsewhere').length;
    await outcome(307, '', { location: server.url('/elsewhere') });
    expect(server.requests.filter((r) => r.url === '/elsewhere').length).toBe(before);
  });
});

describe('Retry-After and rate limiting', () => {
  it('passes Retry-After seconds to the engine and holds the sink back until then', async () => {
    const clock = fakeClock();
    const sink = slackSink('/ra', {}, clock);
    server.enqueue({ status: 429, body: 'rate_limited', headers: { 'retry-after': '30' } });
    const error = await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e as DeliveryError);
    expect(error).toMatchObject({ retryable: true, retryAfterMs: 30_000, code: 'http-429' });
    // The next attempt (e.g. the engine's retry) waits for the rest of the Retry-After on the sink's clock.
    const before = server.requests.length;
    const start = clock.monotonic();
    let sent = false;
    const next = sink.deliver([makeRecord('scheduled')], signal()).then(() => {
      sent = true;
    });
    await clock.advance(29_999);
    expect(sent).toBe(false);
    expect(server.requests.length).toBe(before);
    await clock.runUntil(() => sent);
    await next;
    expect(clock.monotonic() - start).toBe(30_000);
    expect(server.requests.length).toBe(before + 1);
    await sink.close?.();
  });

  it('understands Retry-After as an HTTP date', async () => {
    const clock = fakeClock(Date.parse('2025-09-19T18:00:00Z'));
    const sink = slackSink('/ra-date', {}, clock);
    server.enqueue({ status: 503, headers: { 'retry-after': 'Fri, 19 Sep 2025 18:02:00 GMT' } });
    const error = await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e as DeliveryError);
    expect(error).toMatchObject({ retryable: true, retryAfterMs: 120_000 });
    await sink.close?.();
  });

  it('spaces Slack requests about 1 s apart by default (injected clock, no real waiting)', async () => {
    const clock = fakeClock();
    const sink = createSlackSink(
      'alerts',
      slackOptionsSchema().parse({ url: server.url('/rl') }),
      context(),
      {
        clock,
      },
    );
    const before = server.requests.length;
    const start = clock.now();
    const sentAt: number[] = [];
    const all = (async () => {
      for (const t of ['scheduled', 'started', 'completed'] as const) {
        await sink.deliver([makeRecord(t)], signal());
        sentAt.push(clock.now() - start);
      }
    })();
    await clock.runUntil(() => sentAt.length === 3);
    await all;
    expect(server.requests.length - before).toBe(3);
    expect(sentAt).toEqual([0, 1000, 2000]);
    await sink.close?.();
  });

  it('reserves slots for concurrent callers in call order', async () => {
    const clock = fakeClock(0);
    const limiter = new RateLimiter(250, clock);
    const granted: Array<[number, number]> = [];
    const all = Promise.all(
      [1, 2, 3].map((caller) => limiter.acquire().then(() => granted.push([caller, clock.now()]))),
    );
    await clock.runUntil(() => granted.length === 3);
    await all;
    // Slots at 0, 250 and 500, in call order.
    expect(granted).toEqual([
      [1, 0],
      [2, 250],
      [3, 500],
    ]);
    expect(() => new RateLimiter(-1, clock)).toThrow(/minIntervalMs/);
  });

  it('an abort while waiting for a slot rejects with the reason and frees the timer', async () => {
    const clock = fakeClock(0);
    const limiter = new RateLimiter(1000, clock);
    await limiter.acquire();
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    expect(clock.pendingTimers).toBe(1);
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('transport failures', () => {
  it('times out a hanging endpoint as retryable', async () => {
    server.enqueue({ hang: true });
    const sink = slackSink('/hang', { timeoutMs: 300 });
    await expect(sink.deliver([makeRecord('scheduled')], signal())).rejects.toMatchObject({
      retryable: true,
      code: 'timeout',
    });
    await sink.close?.();
  });

  it('a dropped connection and a closed port are retryable network errors', async () => {
    server.enqueue({ drop: true });
    const sink = slackSink('/drop');
    await expect(sink.deliver([makeRecord('scheduled')], signal())).rejects.toMatchObject({
      retryable: true,
      code: 'network',
    });
    await sink.close?.();

    const closed = await HttpSinkServer.start();
    const url = closed.url('/gone');
    await closed.close();
    const sink2 = createSlackSink('alerts', slackOptionsSchema().parse({ url }), context());
    await expect(sink2.deliver([makeRecord('scheduled')], signal())).rejects.toMatchObject({
      retryable: true,
      code: 'network',
    });
    await sink2.close?.();
  });

  it('honours the abort signal', async () => {
    server.enqueue({ hang: true });
    const sink = slackSink('/abort');
    const controller = new AbortController();
    const before = server.requests.length;
    const pending = sink.deliver([makeRecord('scheduled')], controller.signal);
    await server.waitForRequests(before + 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ retryable: true, code: 'aborted' });
    await sink.close?.();
  });
});

describe('Standard Webhooks signature (verified by the standardwebhooks package)', () => {
  for (const mode of ['structured', 'binary'] as const) {
    it(`${mode}: every rotation secret verifies; webhook-id = CloudEvent id and stays the same on retry`, async () => {
      const sink = createGenericWebhookSink(
        'events',
        webhookOptionsSchema().parse({
          url: server.url(`/sig/${mode}`),
          mode,
          signingSecrets: [SIGNING_SECRET, SIGNING_SECRET_2],
        }),
        context(),
      );
      const record = makeRecord('scheduled');
      server.enqueue({ status: 503 });
      await expect(sink.deliver([record], signal())).rejects.toMatchObject({ retryable: true });
      await sink.deliver([record], signal());
      await sink.close?.();
      const attempts = server.requests.filter((r) => r.url === `/sig/${mode}`).slice(-2);
      expect(attempts).toHaveLength(2);
      for (const attempt of attempts) {
        const headers = attempt.headers as Record<string, string>;
        expect(headers['webhook-id']).toBe(record.id);
        expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
        for (const secret of [SIGNING_SECRET, SIGNING_SECRET_2]) {
          const verified = new Webhook(secret).verify(attempt.body, headers);
          expect(verified).toEqual(mode === 'structured' ? record : record.data);
        }
        // A wrong secret or a changed body does not verify.
        expect(() =>
          new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').verify(attempt.body, headers),
        ).toThrow();
        expect(() => new Webhook(SIGNING_SECRET).verify(`${attempt.body} `, headers)).toThrow();
      }
    });
  }

  it('rejects malformed signing secrets, reserved custom headers and non-http URLs in the options schema (config validate and run), naming only the origin', () => {
    const problems = (o: Record<string, unknown>) => {
      const result = webhookOptionsSchema().safeParse({ url: server.url('/x'), ...o });
      expect(result.success).toBe(false);
      // a reserved header is reported on the record key (its own issues carry the message)
      return JSON.stringify(
        result.error?.issues.map((i) =>
          i.code === 'invalid_key' ? i.issues.map((k) => k.message) : i.message,
        ),
      );
    };
    expect(problems({ signingSecrets: ['not-a-whsec-secret'] })).toMatch(
      /signing secret \(inline\) must be a Standard Webhooks secret/,
    );
    expect(problems({ signingSecrets: ['not-a-whsec-secret'] })).not.toContain('not-a-whsec-secret');
    expect(problems({ headers: { 'Webhook-Signature': 'x' } })).toMatch(
      /header Webhook-Signature is set by the sink/,
    );
    expect(problems({ url: 'ftp://example.invalid/x' })).toMatch(/url \(inline\) must be an http/);
    expect(problems({ url: 'ftp://example.invalid/x' })).not.toContain('example.invalid');
  });
});

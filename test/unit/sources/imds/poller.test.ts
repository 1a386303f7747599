import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { PollDocumentOutcome, PollOutcome } from '../../../../src/domain/index.ts';
import { createLogger, type Logger } from '../../../../src/log.ts';
import {
  FixedRateSchedule,
  ImdsPoller,
  type ScheduledEventsReader,
} from '../../../../src/sources/imds/poller.ts';
import { ImdsError } from '../../../../src/sources/imds-protocol/errors.ts';
import { FakeClock } from '../../../support/fake-clock.ts';
import { LIVE_MIGRATION } from '../../../support/imds-payloads.ts';
import { auditedStream } from '../../../support/logs.ts';
import { type Answer, ScriptedClient } from '../../../support/scripted-imds-client.ts';

function logCapture(): { logger: Logger; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const destination = auditedStream((line) => lines.push(JSON.parse(line)));
  return { logger: createLogger({ level: 'debug', pretty: false, destination }), lines };
}

const EMPTY = LIVE_MIGRATION[0];

/** Run the poller on the fake clock until `count` outcomes were seen, then abort and wait for the end. */
async function runPoller(
  clock: FakeClock,
  poller: ImdsPoller,
  count: number,
  onOutcome: (o: PollOutcome) => Promise<void> | void = () => {},
): Promise<PollOutcome[]> {
  const outcomes: PollOutcome[] = [];
  const controller = new AbortController();
  const done = poller.start(controller.signal, async (o) => {
    outcomes.push(o);
    await onOutcome(o);
  });
  await clock.runUntil(() => outcomes.length >= count);
  controller.abort();
  let finished = false;
  void done.then(() => {
    finished = true;
  });
  // A consumer may still be waiting on the fake clock: keep time moving until the poller returns.
  await clock.runUntil(() => finished);
  await done;
  return outcomes;
}

describe('FixedRateSchedule', () => {
  it('puts ticks on the grid and skips overrun ticks', () => {
    const s = new FixedRateSchedule(100, 1000);
    expect(s.nextTick(100)).toBe(100);
    expect(s.nextTick(101)).toBe(1100);
    expect(s.nextTick(3550, 100)).toBe(4100);
    expect(s.nextTick(100, 100)).toBe(1100);
  });
});

describe('ImdsPoller', () => {
  it('rejects intervals below 200 ms', () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, () => ({ body: EMPTY }));
    expect(() => new ImdsPoller({ client, intervalMs: 100, logger: pino({ level: 'silent' }) })).toThrow(
      /at least 200 ms/,
    );
  });

  it('never overlaps requests when answers are slower than the interval, and skips overrun ticks', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, () => ({ body: EMPTY, latencyMs: 2500 }));
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    const outcomes = await runPoller(clock, poller, 5);
    expect(client.maxInFlight).toBe(1);
    expect(client.calls.slice(0, 5)).toEqual([0, 3000, 6000, 9000, 12000]);
    expect(outcomes.slice(0, 5).map((o) => o.observed.monotonicMs)).toEqual([2500, 5500, 8500, 11500, 14500]);
  });

  it('polls at once on start, even when the clock moves on every reading (real clocks do)', async () => {
    class MovingClock extends FakeClock {
      override monotonic(): number {
        this.t += 0.001;
        return this.t;
      }
    }
    const clock = new MovingClock();
    const client = new ScriptedClient(clock, () => ({ body: EMPTY, latencyMs: 10 }));
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    await runPoller(clock, poller, 2);
    expect(client.calls[0]).toBeLessThan(1);
    expect(client.calls[1]).toBeGreaterThanOrEqual(1000);
    expect(client.calls[1]).toBeLessThan(1001);
  });

  it('waits for a slow consumer before polling again', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, () => ({ body: EMPTY, latencyMs: 10 }));
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    let consuming = false;
    let overlapped = false;
    const slowConsumer = async (): Promise<void> => {
      consuming = true;
      await new Promise<void>((resolve) => clock.setTimeout(resolve, 1700));
      consuming = false;
    };
    const originalGet = client.getScheduledEvents.bind(client);
    client.getScheduledEvents = (signal) => {
      if (consuming) overlapped = true;
      return originalGet(signal);
    };
    await runPoller(clock, poller, 4, slowConsumer);
    expect(overlapped).toBe(false);
    expect(client.calls.slice(0, 4)).toEqual([0, 2000, 4000, 6000]);
  });

  it('does not drift over 1,000 ticks with varying latency', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, (call) => ({ body: EMPTY, latencyMs: (call * 37) % 400 }));
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    const outcomes = await runPoller(clock, poller, 1000);
    expect(outcomes).toHaveLength(1000);
    expect(client.calls.slice(0, 1000)).toEqual(Array.from({ length: 1000 }, (_, n) => n * 1000));
    expect(outcomes[999]!.observed.wallMs).toBe(clock.wallStart + 999_000 + ((999 * 37) % 400));
  }, 60_000);

  it('reports failures as failures with a consecutive count, never as an empty document', async () => {
    const clock = new FakeClock();
    const script = (call: number): Answer =>
      call >= 1 && call <= 3
        ? { error: new ImdsError('invalid-response', 'IMDS scheduled events answer has an empty body') }
        : { body: LIVE_MIGRATION[1] };
    const client = new ScriptedClient(clock, script);
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    const outcomes = await runPoller(clock, poller, 6);
    expect(outcomes.map((o) => o.kind)).toEqual([
      'document',
      'failure',
      'failure',
      'failure',
      'document',
      'document',
    ]);
    for (const failure of outcomes.slice(1, 4)) {
      expect(failure).not.toHaveProperty('document');
      expect(failure).toMatchObject({ kind: 'failure', reason: 'invalid-response' });
    }
    expect(outcomes.slice(1, 4).map((o) => (o.kind === 'failure' ? o.consecutiveFailures : 0))).toEqual([
      1, 2, 3,
    ]);
    // The document after the failures is the same as before: not a change (no phantom Events: [] in between).
    expect(outcomes.map((o) => (o.kind === 'document' ? o.changed : null))).toEqual([
      true,
      null,
      null,
      null,
      false,
      false,
    ]);
  });

  it('compares documents by content, not by incarnation only', async () => {
    const clock = new FakeClock();
    const a = '{"DocumentIncarnation":7,"Events":[{"EventId":"e1","EventStatus":"Scheduled"}]}';
    const b = '{"DocumentIncarnation":7,"Events":[{"EventId":"e1","EventStatus":"Started"}]}';
    const bodies = [a, a, b, b, LIVE_MIGRATION[0]];
    const client = new ScriptedClient(clock, (call) => ({ body: bodies[call] ?? LIVE_MIGRATION[0] }));
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    const outcomes = await runPoller(clock, poller, 5);
    expect(outcomes.map((o) => o.kind === 'document' && o.changed)).toEqual([true, false, true, false, true]);
  });

  it('hands the previous answer to the client: an answer returned as-is is unchanged, without a re-parse', async () => {
    const clock = new FakeClock();
    const a = '{"DocumentIncarnation":7,"Events":[{"EventId":"e1","EventStatus":"Scheduled"}]}';
    const bodies = [a, a, `${a} `, LIVE_MIGRATION[0], LIVE_MIGRATION[0]];
    const scripted = new ScriptedClient(clock, (call) => ({ body: bodies[call] ?? LIVE_MIGRATION[0] }));
    const passed: Array<string | undefined> = [];
    // Like ImdsClient: the same bytes as `previous` → `previous` itself.
    const client: ScheduledEventsReader = {
      getScheduledEvents: async (signal, previous) => {
        passed.push(previous?.body);
        const answer = await scripted.getScheduledEvents(signal);
        return previous?.body === answer.body ? previous : { ...answer, raw: Buffer.from(answer.body) };
      },
    };
    const poller = new ImdsPoller({ client, intervalMs: 1000, clock, logger: pino({ level: 'silent' }) });
    const outcomes = (await runPoller(clock, poller, 5)) as PollDocumentOutcome[];
    expect(passed).toEqual([undefined, a, a, `${a} `, LIVE_MIGRATION[0]]);
    expect(outcomes.map((o) => o.changed)).toEqual([true, false, false, true, false]);
    expect(outcomes[1]!.document).toBe(outcomes[0]!.document); // the same object: nothing parsed again
    expect(outcomes[2]!.document).not.toBe(outcomes[0]!.document); // other bytes, same content: parsed, unchanged
    expect(outcomes[4]!.document).toBe(outcomes[3]!.document);
  });

  it('backs off after transient failures but never polls faster than the interval', async () => {
    for (const random of [() => 0, () => 0.5, () => 0.999]) {
      const clock = new FakeClock();
      const client = new ScriptedClient(clock, () => ({
        error: new ImdsError('server-error', 'IMDS server error 503', { httpStatus: 503 }),
        latencyMs: 30,
      }));
      const poller = new ImdsPoller({
        client,
        intervalMs: 1000,
        maxBackoffMs: 8000,
        random,
        clock,
        logger: pino({ level: 'silent' }),
      });
      await runPoller(clock, poller, 12);
      const gaps = client.calls.slice(1).map((t, i) => t - client.calls[i]!);
      expect(gaps.length).toBeGreaterThanOrEqual(11);
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(1000);
        expect(gap % 1000).toBe(0);
        expect(gap).toBeLessThanOrEqual(8000);
      }
      if (random() > 0.9) expect(Math.max(...gaps)).toBe(8000);
    }
  });

  it('honours Retry-After from a 429', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, (call) =>
      call === 1
        ? { error: new ImdsError('throttled', 'IMDS throttled', { httpStatus: 429, retryAfterMs: 4200 }) }
        : { body: EMPTY },
    );
    const poller = new ImdsPoller({ client, clock, random: () => 0, logger: pino({ level: 'silent' }) });
    await runPoller(clock, poller, 4);
    expect(client.calls.slice(0, 4)).toEqual([0, 1000, 6000, 7000]);
  });

  it('keeps the normal interval after non-retryable failures (400/404/invalid answers)', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, () => ({
      error: new ImdsError(
        'bad-request',
        'IMDS rejected the request (400: Bad request. api-version is invalid)',
      ),
    }));
    const poller = new ImdsPoller({ client, clock, random: () => 0.999, logger: pino({ level: 'silent' }) });
    await runPoller(clock, poller, 5);
    expect(client.calls.slice(0, 5)).toEqual([0, 1000, 2000, 3000, 4000]);
  });

  it('does not carry a streak of non-transient failures into the backoff of the first transient one', async () => {
    // 20 answers of 404, then 503s, then documents. With random() = 0.999 the delay of a transient failure is
    // just under min(cap, interval * 2^(n-1)); n must count only consecutive transient failures, so the first
    // 503 after the 404 streak waits one interval (not the whole 10 s cap) and the next one two.
    const clock = new FakeClock();
    const script = (call: number): Answer => {
      if (call < 20) return { error: new ImdsError('not-found', 'IMDS answered 404', { httpStatus: 404 }) };
      if (call < 22)
        return { error: new ImdsError('server-error', 'IMDS server error 503', { httpStatus: 503 }) };
      return { body: EMPTY };
    };
    const client = new ScriptedClient(clock, script);
    const poller = new ImdsPoller({ client, clock, random: () => 0.999, logger: pino({ level: 'silent' }) });
    await runPoller(clock, poller, 24);
    const gaps = client.calls.slice(1, 24).map((t, i) => t - client.calls[i]!);
    // 404 → next poll one interval later (19 gaps), the 1st 503 → 1 interval, the 2nd 503 → 2 intervals.
    expect(gaps).toEqual([...Array.from({ length: 20 }, () => 1000), 1000, 2000, 1000]);
  });

  it('logs a failure once per change of state and logs the recovery', async () => {
    const clock = new FakeClock();
    const script = (call: number): Answer => {
      if (call < 2) return { body: EMPTY };
      if (call < 12)
        return { error: new ImdsError('server-error', 'IMDS server error 503', { httpStatus: 503 }) };
      if (call < 17) return { error: new ImdsError('timeout', 'IMDS did not answer within 5000 ms') };
      return { body: EMPTY };
    };
    const client = new ScriptedClient(clock, script);
    const { logger, lines } = logCapture();
    const poller = new ImdsPoller({ client, clock, random: () => 0, logger });
    await runPoller(clock, poller, 30);
    const messages = lines.map((l) => l.msg);
    expect(messages).toEqual([
      'IMDS poll failed: IMDS server error 503',
      'IMDS poll failed: IMDS did not answer within 5000 ms',
      'IMDS polling recovered after 15 failed poll(s)',
    ]);
    expect(lines.map((l) => l.level)).toEqual([40, 40, 30]);
  });

  it('stops promptly when aborted during a hanging request and emits nothing for it', async () => {
    const clock = new FakeClock();
    const client = new ScriptedClient(clock, (call) => ({
      body: EMPTY,
      latencyMs: call === 0 ? 0 : 600_000,
    }));
    const poller = new ImdsPoller({ client, clock, logger: pino({ level: 'silent' }) });
    const outcomes: PollOutcome[] = [];
    const controller = new AbortController();
    const done = poller.start(controller.signal, (o) => {
      outcomes.push(o);
    });
    await clock.runUntil(() => client.calls.length >= 2);
    controller.abort();
    await done;
    expect(outcomes).toHaveLength(1);
    expect(client.inFlight).toBe(0);
  });
});

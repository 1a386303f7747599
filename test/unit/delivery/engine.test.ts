import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter, retryDelayMs } from '../../../src/backoff.ts';
import { DEFAULT_RESCAN_INTERVAL_MS, DeliveryEngine, type EngineSink } from '../../../src/delivery/engine.ts';
import { type Logger, silentLogger } from '../../../src/log.ts';
import { type Outbox, openStore, type Store } from '../../../src/store/index.ts';
import {
  captureLogger,
  destinationRefusal,
  flush,
  makeRecord,
  permanent,
  retryable,
  ScriptedSink,
} from '../../support/delivery.ts';
import { DeliveryEventRecorder } from '../../support/delivery-events.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { makeTempDir } from '../../support/tmp.ts';

let tmp: { dir: string; cleanup: () => void };
let clock: FakeClock;
let store: Store;
let engine: DeliveryEngine | undefined;
let recorder: DeliveryEventRecorder;
const events = {
  get delivered() {
    return recorder.of('delivered');
  },
  get retry() {
    return recorder.of('retry');
  },
  get dead() {
    return recorder.of('deadLettered');
  },
};

beforeEach(() => {
  tmp = makeTempDir('sef-engine-');
  clock = new FakeClock(Date.UTC(2026, 0, 1));
  store = openStore({ stateDir: tmp.dir, logger: silentLogger(), now: () => clock.now() });
  recorder = new DeliveryEventRecorder();
});
afterEach(async () => {
  if (engine !== undefined) {
    const stopping = engine.stop(0);
    await clock.advance(2000);
    await stopping;
  }
  engine = undefined;
  store.close();
  tmp.cleanup();
});

function startEngine(
  sinks: EngineSink[],
  options: { random?: () => number; rescanIntervalMs?: number; logger?: Logger; outbox?: Outbox } = {},
) {
  engine = new DeliveryEngine({
    store: options.outbox ?? store,
    sinks,
    clock,
    random: options.random ?? (() => 1),
    logger: options.logger ?? silentLogger(),
    ...(options.rescanIntervalMs === undefined ? {} : { rescanIntervalMs: options.rescanIntervalMs }),
    observer: recorder.observer,
  });
  engine.start();
  return engine;
}

function commit(from: number, to: number, sinks: string[]): void {
  const deliveries = [];
  for (let i = from; i <= to; i++) deliveries.push({ record: makeRecord(i), sinks });
  store.commit({ upTo: to }, deliveries);
  engine?.notify();
}

/** The store as the engine sees it (Outbox), counting the engine's reads of the queues. */
function countingOutbox(s: Store): { outbox: Outbox; reads: () => number } {
  let reads = 0;
  return {
    outbox: {
      pending: (sink, limit) => {
        reads++;
        return s.pending(sink, limit);
      },
      ack: (sink, seqs) => s.ack(sink, seqs),
      recordFailure: (sink, seqs, failure) => s.recordFailure(sink, seqs, failure),
      deadLetter: (sink, seqs, why) => s.deadLetter(sink, seqs, why),
      enforceCapsByReason: (sink, caps, nowMs) => s.enforceCapsByReason(sink, caps, nowMs),
      enforceDeadLetterCaps: (sink, caps) => s.enforceDeadLetterCaps(sink, caps),
      compact: () => s.compact(),
    },
    reads: () => reads,
  };
}

const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `rec-${from + i}`);

describe('retryDelayMs', () => {
  it('is full jitter under an exponential ceiling capped at maxMs, and honours Retry-After', () => {
    const opts = { initialMs: 1000, maxMs: 300_000 };
    expect(retryDelayMs(1, opts, () => 1)).toBe(1000);
    expect(retryDelayMs(4, opts, () => 1)).toBe(8000);
    expect(retryDelayMs(4, opts, () => 0.5)).toBe(4000);
    expect(retryDelayMs(50, opts, () => 1)).toBe(300_000);
    expect(retryDelayMs(5000, opts, () => 0.999)).toBeLessThanOrEqual(300_000);
    expect(retryDelayMs(1, opts, () => 1, 42_000)).toBe(42_000);
  });

  it('caps every Retry-After at MAX_RETRY_AFTER_MS (1 h), whatever the backoff cap', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
    expect(parseRetryAfter('999999', 0)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 19 Sep 2125 18:02:00 GMT', Date.parse('2025-09-19T18:00:00Z'))).toBe(
      MAX_RETRY_AFTER_MS,
    );
    expect(parseRetryAfter('120', 0)).toBe(120_000);
    expect(retryDelayMs(1, { initialMs: 1000, maxMs: 6 * 3_600_000 }, () => 1, 999_999_000)).toBe(
      MAX_RETRY_AFTER_MS,
    );
  });
});

describe('DeliveryEngine', () => {
  it('delivers in commit order, in batches up to maxBatch, and removes rows only after success', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    startEngine([{ sink }]);
    commit(1, 25, ['a']);
    await clock.advance(0);
    expect(sink.delivered).toEqual(ids(1, 25));
    expect(sink.calls.map((c) => c.ids.length)).toEqual([10, 10, 5]);
    expect(store.pending('a', 100)).toEqual([]);
    expect(events.delivered.reduce((n, e) => n + e.count, 0)).toBe(25);
  });

  it('delivers a lone record after 30 idle days at once, without waiting for a timer', async () => {
    const sink = new ScriptedSink('a', clock);
    startEngine([{ sink }], { rescanIntervalMs: 3_600_000 });
    await clock.advance(30 * 24 * 3_600_000);
    commit(1, 1, ['a']);
    await flush(); // no clock advance at all: the commit notification alone wakes the worker
    expect(sink.delivered).toEqual(['rec-1']);
    expect(events.delivered[0]?.latenciesMs).toEqual([0]);
  });

  it('retries with persisted exponential backoff, then delivers', async () => {
    const sink = new ScriptedSink('a', clock);
    let failures = 3;
    sink.failWith = () => (failures-- > 0 ? retryable() : undefined);
    startEngine([{ sink }]);
    commit(1, 2, ['a']);
    await clock.advance(0);
    expect(events.retry.map((r) => r.delayMs)).toEqual([1000]);
    expect(store.pending('a', 1)[0]).toMatchObject({ attempts: 1, nextAttemptAt: clock.now() + 1000 });
    await clock.advance(999);
    expect(sink.calls).toHaveLength(1);
    await clock.advance(1 + 2000 + 4000);
    expect(events.retry.map((r) => [r.attempts, r.delayMs, r.code])).toEqual([
      [1, 1000, 'http-503'],
      [2, 2000, 'http-503'],
      [3, 4000, 'http-503'],
    ]);
    expect(sink.delivered).toEqual(['rec-1', 'rec-2']);
    expect(events.delivered[0]?.latenciesMs).toEqual([7000, 7000]);
  });

  it('logs one info line when a failing sink recovers: attempts and how long it failed', async () => {
    const sink = new ScriptedSink('a', clock);
    let failures = 3;
    sink.failWith = () => (failures-- > 0 ? retryable() : undefined);
    const { logger, lines } = captureLogger();
    startEngine([{ sink }], { logger });
    commit(1, 1, ['a']);
    await clock.advance(1000 + 2000 + 4000);
    expect(sink.delivered).toEqual(['rec-1']);
    commit(2, 2, ['a']); // a later healthy delivery logs nothing more
    await clock.advance(0);
    expect(sink.delivered).toEqual(['rec-1', 'rec-2']);
    const recovered = lines().filter((l) => String(l.msg).startsWith('sink recovered'));
    expect(recovered).toEqual([
      expect.objectContaining({
        level: 30,
        component: 'delivery',
        sink: 'a',
        attempts: 3,
        failingForMs: 7000,
        msg: 'sink recovered: delivered after 3 failed attempts over 7 s',
      }),
    ]);
  });

  it('honours Retry-After and treats non-DeliveryError throws as retryable', async () => {
    const sink = new ScriptedSink('a', clock);
    const errors = [
      Object.assign(retryable('http-429'), {}),
      new TypeError('socket hang up'),
      undefined,
    ] as Array<Error | undefined>;
    const first = errors[0] as { retryAfterMs?: number };
    Object.defineProperty(first, 'retryAfterMs', { value: 42_000 });
    sink.failWith = () => errors.shift();
    startEngine([{ sink }]);
    commit(1, 1, ['a']);
    await clock.advance(41_999);
    expect(sink.calls).toHaveLength(1);
    await clock.advance(1);
    expect(sink.calls).toHaveLength(2);
    expect(events.retry.map((r) => r.code)).toEqual(['http-429', 'error']);
    await clock.advance(2000);
    expect(sink.delivered).toEqual(['rec-1']);
  });

  it('caps the backoff at maxMs and never gives up on retryable errors', async () => {
    const sink = new ScriptedSink('a', clock);
    sink.failWith = () => retryable();
    startEngine([{ sink, backoff: { initialMs: 1000, maxMs: 60_000 } }]);
    commit(1, 1, ['a']);
    await clock.advance(24 * 3_600_000);
    expect(events.retry.length).toBeGreaterThan(1400);
    expect(Math.max(...events.retry.map((r) => r.delayMs))).toBe(60_000);
    expect(store.pending('a', 10)).toHaveLength(1);
    expect(store.listDeadLetters()).toEqual([]);
  });

  it('dead-letters a permanent failure and keeps the rest flowing', async () => {
    const sink = new ScriptedSink('a', clock, 1);
    sink.failWith = (batch) => (batch[0]?.id === 'rec-2' ? permanent() : undefined);
    startEngine([{ sink }]);
    commit(1, 3, ['a']);
    await clock.advance(0);
    expect(sink.delivered).toEqual(['rec-1', 'rec-3']);
    expect(store.listDeadLetters().map((d) => [d.recordId, d.reason, d.error])).toEqual([
      ['rec-2', 'permanent', 'http-400: destination rejected the record (http-400)'],
    ]);
    expect(events.dead).toEqual([{ sink: 'a', count: 1, reason: 'permanent', code: 'http-400' }]);
  });

  it('keeps a sink that rejects everything to its dead-letter cap: the oldest dropped for good, loudly, as an event', async () => {
    const sink = new ScriptedSink('a', clock, 1);
    sink.failWith = () => permanent();
    const { logger, lines } = captureLogger();
    const e = startEngine([{ sink, caps: { maxDeadLetterRows: 3 } }], { logger });
    commit(1, 5, ['a']);
    await clock.advance(0);
    expect(store.listDeadLetters({ sink: 'a' }).map((d) => d.recordId)).toEqual(['rec-3', 'rec-4', 'rec-5']);
    const dropped = recorder.of('deadLettersDropped');
    expect(dropped.reduce((n, d) => n + d.count, 0)).toBe(2);
    expect(dropped.every((d) => d.sink === 'a' && d.bytes > 0)).toBe(true);
    expect(store.stats()[0]).toMatchObject({ sink: 'a', pending: 0, deadLetters: 3, deadLettersDropped: 2 });
    const loud = lines().filter((l) => String(l.msg).startsWith("dead letters over the sink's caps"));
    expect(loud.length).toBe(dropped.length);
    expect(loud[0]).toMatchObject({ level: 50, sink: 'a', droppedRows: 1, maxDeadLetterRows: 3 });
    expect(String(loud[0]?.msg)).toContain('for good');
    expect(String(loud[0]?.msg)).toContain('delivery.caps.maxDeadLetterRows');

    // A cap lowered while stopped (a restart, a reload that rebuilds the sink) applies when the worker starts.
    await e.removeSink('a', 0);
    e.addSink({ sink: new ScriptedSink('a', clock), caps: { maxDeadLetterRows: 1 } });
    await clock.advance(0);
    expect(store.listDeadLetters({ sink: 'a' }).map((d) => d.recordId)).toEqual(['rec-5']);
    expect(store.stats()[0]?.deadLettersDropped).toBe(4);
  });

  it('uses failedIndex: earlier records delivered, the offending one dead-lettered, later ones re-sent', async () => {
    const sink = new ScriptedSink('a', clock, 5);
    let once = true;
    sink.failWith = () => {
      if (!once) return undefined;
      once = false;
      return permanent('MessageTooLarge', 2);
    };
    startEngine([{ sink }]);
    commit(1, 5, ['a']);
    await clock.advance(0);
    expect(store.listDeadLetters().map((d) => d.recordId)).toEqual(['rec-3']);
    expect(sink.calls.map((c) => c.ids)).toEqual([ids(1, 5), ['rec-4', 'rec-5']]);
    expect(events.delivered.flatMap((e) => e.recordIds)).toEqual(['rec-1', 'rec-2', 'rec-4', 'rec-5']);
  });

  it('isolates a permanent failure without failedIndex by re-delivering one record at a time', async () => {
    const sink = new ScriptedSink('a', clock, 5);
    sink.failWith = (batch) => (batch.some((r) => r.id === 'rec-3') ? permanent() : undefined);
    startEngine([{ sink }]);
    commit(1, 7, ['a']);
    await clock.advance(0);
    expect(sink.calls.map((c) => c.ids)).toEqual([
      ids(1, 5),
      ['rec-1'],
      ['rec-2'],
      ['rec-3'],
      ['rec-4'],
      ['rec-5'],
      ['rec-6', 'rec-7'],
    ]);
    expect(sink.delivered).toEqual(['rec-1', 'rec-2', 'rec-4', 'rec-5', 'rec-6', 'rec-7']);
    expect(store.listDeadLetters().map((d) => d.recordId)).toEqual(['rec-3']);
  });

  it('keeps a healthy sink flowing while another sink is down', async () => {
    const down = new ScriptedSink('down', clock);
    down.failWith = () => retryable('connection-refused');
    const healthy = new ScriptedSink('healthy', clock);
    startEngine([{ sink: down }, { sink: healthy }]);
    for (let i = 1; i <= 50; i++) {
      commit(i, i, ['down', 'healthy']);
      await clock.advance(60_000);
    }
    expect(healthy.delivered).toEqual(ids(1, 50));
    const latencies = events.delivered.filter((e) => e.sink === 'healthy').flatMap((e) => e.latenciesMs);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(1000); // generous: it is 0 on the fake clock
    expect(down.delivered).toEqual([]);
    expect(store.pending('down', 100)).toHaveLength(50);
  });

  it('moves rows beyond the caps to dead letters with reason overflow, loudly', async () => {
    const sink = new ScriptedSink('a', clock);
    sink.failWith = () => retryable();
    startEngine([{ sink, caps: { maxPendingRows: 5 } }]);
    commit(1, 8, ['a']);
    await clock.advance(5000);
    expect(store.pending('a', 100).map((r) => r.recordId)).toEqual(ids(4, 8));
    expect(store.listDeadLetters().map((d) => `${d.recordId}:${d.reason}`)).toEqual([
      'rec-1:overflow',
      'rec-2:overflow',
      'rec-3:overflow',
    ]);
    expect(events.dead).toContainEqual({ sink: 'a', count: 3, reason: 'overflow' });
  });

  it('round-trips dead letter → replay → delivered', async () => {
    const sink = new ScriptedSink('a', clock, 1);
    let reject = true;
    sink.failWith = (batch) => (reject && batch[0]?.id === 'rec-1' ? permanent('http-410') : undefined);
    startEngine([{ sink }]);
    commit(1, 2, ['a']);
    await clock.advance(0);
    expect(sink.delivered).toEqual(['rec-2']);
    reject = false;
    expect(store.replayDeadLetters({ sink: 'a' })).toBe(1);
    engine?.notify();
    await clock.advance(0);
    expect(sink.delivered).toEqual(['rec-2', 'rec-1']);
    expect(store.stats()).toEqual([]); // nothing pending, no dead letters left
  });

  it('stop() aborts an in-flight delivery at the deadline and keeps its rows pending', async () => {
    const sink = new ScriptedSink('a', clock);
    sink.gate = new Promise(() => {}); // never confirms
    const e = startEngine([{ sink }]);
    commit(1, 3, ['a']);
    await clock.advance(0);
    expect(sink.calls).toHaveLength(1);
    let stopped = false;
    const stopping = e.stop(5000).then(() => {
      stopped = true;
    });
    await clock.advance(4999);
    expect(stopped).toBe(false);
    await clock.advance(1);
    await stopping;
    expect(stopped).toBe(true);
    expect(store.pending('a', 10).map((r) => [r.recordId, r.attempts])).toEqual([
      ['rec-1', 0],
      ['rec-2', 0],
      ['rec-3', 0],
    ]);
    expect(events.retry).toEqual([]);
    engine = undefined;
  });

  it('stop() lets an in-flight delivery that confirms before the deadline be acknowledged', async () => {
    const sink = new ScriptedSink('a', clock);
    let confirm: () => void = () => {};
    sink.gate = new Promise((r) => {
      confirm = r;
    });
    const e = startEngine([{ sink }]);
    commit(1, 2, ['a']);
    await clock.advance(0);
    const stopping = e.stop(5000);
    await clock.advance(1000);
    confirm();
    await clock.advance(0);
    await stopping;
    expect(store.pending('a', 10)).toEqual([]);
    expect(sink.calls).toHaveLength(1); // no new work taken after stop()
    engine = undefined;
  });

  describe('adding and removing a sink while running (the one worker lifecycle; reload uses it)', () => {
    it('a sink added while running delivers what its queue already held, then what is committed next', async () => {
      const a = new ScriptedSink('a', clock);
      const e = startEngine([{ sink: a }]);
      commit(1, 2, ['a', 'b']); // rows for b before b has a worker (e.g. a sink removed, then added back)
      await clock.advance(0);
      expect(a.delivered).toEqual(ids(1, 2));
      expect(store.pending('b', 10)).toHaveLength(2);
      const b = new ScriptedSink('b', clock);
      e.addSink({ sink: b });
      expect(e.sinks).toEqual(['a', 'b']);
      await clock.advance(0);
      expect(b.delivered).toEqual(ids(1, 2));
      commit(3, 3, ['a', 'b']);
      await clock.advance(0);
      expect(b.delivered).toEqual(ids(1, 3));
      expect(() => e.addSink({ sink: new ScriptedSink('b', clock) })).toThrow(/two sinks are named "b"/);
    });

    it('removeSink lets the in-flight delivery be acknowledged, closes the sink and keeps the rest pending; a worker added again continues without re-delivering', async () => {
      const old = new ScriptedSink('a', clock, 2);
      let confirm: () => void = () => {};
      old.gate = new Promise((r) => {
        confirm = r;
      });
      const e = startEngine([{ sink: old }]);
      commit(1, 5, ['a']);
      await clock.advance(0);
      expect(old.calls.map((c) => c.ids)).toEqual([ids(1, 2)]); // in flight
      let removed = false;
      const removing = e.removeSink('a', 5000).then(() => {
        removed = true;
      });
      await clock.advance(1000);
      expect(removed).toBe(false);
      confirm();
      await clock.advance(0);
      await removing;
      expect(old.closes).toBe(1);
      expect(e.sinks).toEqual([]);
      expect(old.calls).toHaveLength(1); // no new work after removal began
      expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(ids(3, 5));
      commit(6, 6, ['a']); // nothing delivers a's rows now, nothing drops them
      await clock.advance(60_000);
      expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(ids(3, 6));
      const rebuilt = new ScriptedSink('a', clock);
      e.addSink({ sink: rebuilt });
      await clock.advance(0);
      expect(rebuilt.delivered).toEqual(ids(3, 6)); // acknowledged rows 1-2 are not sent again
      expect(store.pending('a', 10)).toEqual([]);
    });

    it('removeSink aborts an in-flight delivery at the deadline; its rows stay pending, attempts unchanged', async () => {
      const sink = new ScriptedSink('a', clock);
      sink.gate = new Promise(() => {}); // never confirms
      const other = new ScriptedSink('b', clock);
      const e = startEngine([{ sink }, { sink: other }]);
      commit(1, 2, ['a', 'b']);
      await clock.advance(0);
      const removing = e.removeSink('a', 3000);
      await clock.advance(3000);
      await removing;
      expect(store.pending('a', 10).map((r) => [r.recordId, r.attempts])).toEqual([
        ['rec-1', 0],
        ['rec-2', 0],
      ]);
      expect(events.retry).toEqual([]);
      commit(3, 3, ['a', 'b']);
      await clock.advance(0);
      expect(other.delivered).toEqual(ids(1, 3)); // the other sink never noticed
      await e.removeSink('no-such-sink', 0); // nothing to remove: nothing happens
    });
  });

  describe('idle cost: event-driven, no polling', () => {
    it('an idle worker sets only the coarse rescan timer and reads its queue once a minute, not every 2 s', async () => {
      const { outbox, reads } = countingOutbox(store);
      startEngine([{ sink: new ScriptedSink('a', clock) }, { sink: new ScriptedSink('b', clock) }], {
        outbox,
      });
      await clock.advance(0);
      expect(DEFAULT_RESCAN_INTERVAL_MS).toBeGreaterThanOrEqual(60_000);
      expect(reads()).toBe(2); // one look at each queue at start
      expect(clock.pendingTimers).toBe(2); // each worker's rescan, nothing else
      await clock.advance(DEFAULT_RESCAN_INTERVAL_MS - 1);
      expect(reads()).toBe(2);
      await clock.advance(1);
      expect(reads()).toBe(4);
      await clock.advance(10 * DEFAULT_RESCAN_INTERVAL_MS);
      expect(reads()).toBe(24); // 2 sinks × 10 rescans; at the old 2 s interval it would be 600 more
      expect(clock.pendingTimers).toBe(2);
    });

    it('a failing sink reads its queue once per attempt: after a failure it waits for the retry it scheduled', async () => {
      const { outbox, reads } = countingOutbox(store);
      const sink = new ScriptedSink('a', clock);
      sink.failWith = () => retryable();
      startEngine([{ sink }], { outbox, rescanIntervalMs: Number.POSITIVE_INFINITY });
      commit(1, 20, ['a']);
      await clock.advance(1000 + 2000 + 4000 + 8000);
      expect(events.retry.map((r) => r.delayMs)).toEqual([1000, 2000, 4000, 8000, 16_000]);
      // One look at start (empty), then one read per attempt; not a second one after each failure that only
      // learns the retry is not due yet (it was 1 + 2 per attempt: 11 reads here).
      expect(reads()).toBe(1 + 5);
      expect(sink.calls.map((c) => c.ids.length)).toEqual([10, 10, 10, 10, 10]);
    });

    it('without the rescan an idle engine has no timer at all, and a commit alone wakes it', async () => {
      const sink = new ScriptedSink('a', clock);
      startEngine([{ sink }], { rescanIntervalMs: Number.POSITIVE_INFINITY });
      await clock.advance(0);
      expect(clock.pendingTimers).toBe(0);
      commit(1, 2, ['a']);
      await flush(); // no clock advance: the commit notification wakes the worker
      expect(sink.delivered).toEqual(ids(1, 2));
      expect(recorder.of('drained')).toEqual([{ sink: 'a' }]);
      expect(clock.pendingTimers).toBe(0); // idle again, still no timer
      commit(3, 3, ['a']);
      await flush();
      expect(sink.delivered).toEqual(ids(1, 3));
    });

    it('the coarse rescan picks up rows another process added without notifying (deadletters replay)', async () => {
      const sink = new ScriptedSink('a', clock);
      startEngine([{ sink }]);
      await clock.advance(1000);
      // What `deadletters replay` does from another process: rows appear, nobody calls notify().
      store.commit({ upTo: 1 }, [{ record: makeRecord(1), sinks: ['a'] }]);
      await clock.advance(DEFAULT_RESCAN_INTERVAL_MS - 1001);
      expect(sink.delivered).toEqual([]);
      await clock.advance(1);
      expect(sink.delivered).toEqual(['rec-1']);
    });

    it('dead-letters expired rows (caps.maxAgeMs) at their expiry while waiting for a far retry, not at the retry', async () => {
      const sink = new ScriptedSink('a', clock);
      sink.failWith = () => retryable();
      const maxAgeMs = 10 * 60_000;
      startEngine(
        [
          {
            sink,
            caps: { maxAgeMs },
            backoff: { initialMs: 3_600_000, maxMs: 3_600_000 }, // next attempt 1 h after each failure
          },
        ],
        { rescanIntervalMs: Number.POSITIVE_INFINITY },
      );
      const t0 = clock.now();
      commit(1, 1, ['a']);
      await clock.advance(5 * 60_000);
      commit(2, 2, ['a']); // committed 5 min later; the worker sleeps until rec-1's retry or expiry
      await clock.advance(5 * 60_000); // t0 + maxAge: not yet older than maxAge
      expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(['rec-1', 'rec-2']);
      expect(events.dead).toEqual([]);
      await clock.advance(1); // t0 + maxAge + 1 ms: rec-1 expires, rec-2 gets its first attempt
      expect(events.dead).toEqual([{ sink: 'a', count: 1, reason: 'expired' }]);
      expect(store.listDeadLetters().map((d) => `${d.recordId}:${d.reason}`)).toEqual(['rec-1:expired']);
      expect(sink.calls.map((c) => [c.ids, c.at - t0])).toEqual([
        [['rec-1'], 0],
        [['rec-2'], maxAgeMs + 1],
      ]);
      await clock.advance(5 * 60_000 - 1); // rec-2 committed at t0 + 5 min: not yet
      expect(events.dead).toHaveLength(1);
      await clock.advance(1);
      expect(events.dead).toEqual([
        { sink: 'a', count: 1, reason: 'expired' },
        { sink: 'a', count: 1, reason: 'expired' },
      ]);
      expect(store.pending('a', 10)).toEqual([]);
      expect(sink.calls).toHaveLength(2); // no retry was due: the expiry alone woke the worker
      expect(clock.pendingTimers).toBe(0); // empty queue, no rescan configured: no timer left
    });
  });
});

/**
 * The two classes of permanent failure (docs/delivery.md): a record failure dead-letters the record; a
 * destination failure (DeliveryError.scope 'destination') pauses the sink — records stay pending, one record
 * probes on the probe backoff (random() = 1 here: every probe delay is its ceiling, 10 s, 20 s, 40 s, … up to
 * 5 min), the sink resumes by itself at the first delivery.
 */
const pendingIds = (sink: string) => store.pending(sink, 1000).map((r) => r.recordId);

describe('a destination refusal pauses the sink', () => {
  it('keeps every record pending, probes with one record on a slow backoff, and dead-letters nothing', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    sink.failWith = () => destinationRefusal('http-403');
    startEngine([{ sink }]);
    commit(1, 25, ['a']);
    await clock.advance(0);
    expect(sink.calls.map((c) => c.ids.length)).toEqual([10]); // the first attempt is a full batch
    expect(engine!.paused()).toEqual([
      {
        sink: 'a',
        code: 'http-403',
        message: expect.stringContaining('fix: grant the role'),
        since: clock.now(),
      },
    ]);
    // 10 s, 20 s, 40 s, 80 s, 160 s, then 300 s (the cap) each
    await clock.advance(10_000 + 20_000 + 40_000 + 80_000 + 160_000 + 300_000 + 300_000);
    expect(sink.calls.map((c) => c.ids.length)).toEqual([10, 1, 1, 1, 1, 1, 1, 1]);
    expect(sink.calls.slice(1).every((c) => c.ids[0] === 'rec-1')).toBe(true); // always the head of the queue
    expect(recorder.of('paused').map((p) => [p.probes, p.probeInMs])).toEqual([
      [1, 10_000],
      [2, 20_000],
      [3, 40_000],
      [4, 80_000],
      [5, 160_000],
      [6, 300_000],
      [7, 300_000],
      [8, 300_000],
    ]);
    expect(new Set(recorder.of('paused').map((p) => p.since)).size).toBe(1);
    expect(pendingIds('a')).toEqual(ids(1, 25));
    expect(store.listDeadLetters({ sink: 'a' })).toEqual([]);
    expect(recorder.of('deadLettered')).toEqual([]);
    expect(recorder.of('retry')).toEqual([]);
    // the next probe time is persisted (a restart does not probe early)
    expect(store.pending('a', 1)[0]).toMatchObject({ attempts: 8, nextAttemptAt: clock.now() + 300_000 });
    expect(store.pending('a', 1)[0]?.lastError).toMatch(/^http-403: /);
  });

  it('resumes by itself once the destination accepts: one probe record, then full batches; zero dead letters', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    let refusing = true;
    sink.failWith = () => (refusing ? destinationRefusal('http-401') : undefined);
    const { logger, lines } = captureLogger();
    startEngine([{ sink }], { logger });
    commit(1, 25, ['a']);
    await clock.advance(10_000 + 20_000);
    expect(engine!.paused().map((p) => p.sink)).toEqual(['a']);
    refusing = false; // the role assignment propagated
    await clock.advance(40_000);
    expect(sink.delivered).toEqual(ids(1, 25));
    expect(sink.calls.map((c) => c.ids.length)).toEqual([10, 1, 1, 1, 10, 10, 4]);
    expect(engine!.paused()).toEqual([]);
    expect(recorder.of('resumed')).toEqual([{ sink: 'a', code: 'http-401', pausedForMs: 70_000 }]);
    expect(store.listDeadLetters({ sink: 'a' })).toEqual([]);
    expect(store.pending('a', 10)).toEqual([]);

    // One error line for the cause (with its fix), debug for the same cause again, one info line on resume.
    const errors = lines().filter((l) => l.level === 50);
    expect(errors).toEqual([
      expect.objectContaining({
        component: 'delivery',
        sink: 'a',
        code: 'http-401',
        msg: expect.stringMatching(/^sink paused: .*fix: grant the role.*records stay pending/),
      }),
    ]);
    expect(lines().filter((l) => String(l.msg).startsWith('sink still paused'))).toHaveLength(2);
    expect(lines().filter((l) => String(l.msg).startsWith('sink resumed'))).toEqual([
      expect.objectContaining({
        level: 30,
        code: 'http-401',
        pausedForMs: 70_000,
        msg: 'sink resumed: the destination accepts records again after 1 min 10 s paused (http-401)',
      }),
    ]);
    expect(lines().filter((l) => String(l.msg).startsWith('sink recovered'))).toEqual([]);
  });

  it('logs each distinct cause once at error level, and again after the sink delivered in between', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    const answers: Array<Error | undefined> = [
      destinationRefusal('http-403'),
      destinationRefusal('http-403'),
      destinationRefusal('tls'),
      destinationRefusal('http-403'),
      undefined,
      destinationRefusal('http-403'),
    ];
    sink.failWith = () => answers.shift();
    const { logger, lines } = captureLogger();
    startEngine([{ sink }], { logger });
    commit(1, 3, ['a']);
    await clock.advance(10_000 + 20_000 + 40_000 + 80_000);
    expect(sink.delivered).toEqual(['rec-1']);
    expect(recorder.of('resumed')).toHaveLength(1);
    commit(4, 4, ['a']);
    await clock.advance(0);
    const causes = lines()
      .filter((l) => l.level === 50)
      .map((l) => l.code);
    expect(causes).toEqual(['http-403', 'tls', 'http-403']);
    expect(engine!.paused()).toEqual([expect.objectContaining({ sink: 'a', code: 'http-403' })]);
  });

  it('acknowledges the records confirmed before the refusal (failedIndex) and keeps the rest pending', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    let first = true;
    sink.failWith = (batch) => {
      if (!first) return destinationRefusal('http-404');
      first = false;
      for (const r of batch.slice(0, 3)) sink.delivered.push(r.id); // the destination took three
      return destinationRefusal('http-404', 3);
    };
    startEngine([{ sink }]);
    commit(1, 6, ['a']);
    await clock.advance(0);
    expect(recorder.of('delivered').map((d) => d.recordIds)).toEqual([ids(1, 3)]);
    expect(pendingIds('a')).toEqual(ids(4, 6));
    expect(store.listDeadLetters({ sink: 'a' })).toEqual([]);
    await clock.advance(10_000);
    expect(sink.calls.at(-1)?.ids).toEqual(['rec-4']);
  });

  it('a record failure answered to a probe dead-letters that record and resumes the sink', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    const answers: Array<Error | undefined> = [destinationRefusal('http-401'), permanent('http-400')];
    sink.failWith = () => answers.shift();
    startEngine([{ sink }]);
    commit(1, 4, ['a']);
    await clock.advance(10_000);
    expect(store.listDeadLetters({ sink: 'a' }).map((d) => [d.recordId, d.reason])).toEqual([
      ['rec-1', 'permanent'],
    ]);
    expect(recorder.of('resumed')).toEqual([{ sink: 'a', code: 'http-401', pausedForMs: 10_000 }]);
    expect(sink.delivered).toEqual(ids(2, 4));
    expect(engine!.paused()).toEqual([]);
  });

  it('a retryable failure while paused keeps the pause and the probe pace', async () => {
    const sink = new ScriptedSink('a', clock, 10);
    const answers: Array<Error | undefined> = [
      destinationRefusal('http-403'),
      retryable('http-503'),
      destinationRefusal('http-403'),
    ];
    sink.failWith = () => answers.shift();
    startEngine([{ sink }]);
    commit(1, 2, ['a']);
    await clock.advance(10_000);
    expect(recorder.of('retry').map((r) => [r.code, r.delayMs])).toEqual([['http-503', 20_000]]);
    expect(engine!.paused()).toEqual([expect.objectContaining({ code: 'http-403' })]);
    await clock.advance(20_000);
    expect(recorder.of('paused').map((p) => [p.probes, p.probeInMs])).toEqual([
      [1, 10_000],
      [3, 40_000],
    ]);
    await clock.advance(40_000);
    expect(sink.delivered).toEqual(ids(1, 2));
    expect(engine!.paused()).toEqual([]);
  });

  it('pauses only the refusing sink: the others keep flowing', async () => {
    const refusing = new ScriptedSink('a', clock, 10);
    refusing.failWith = () => destinationRefusal('tls');
    const healthy = new ScriptedSink('b', clock, 10);
    startEngine([{ sink: refusing }, { sink: healthy }]);
    commit(1, 5, ['a', 'b']);
    await clock.advance(0);
    expect(healthy.delivered).toEqual(ids(1, 5));
    expect(engine!.paused().map((p) => p.sink)).toEqual(['a']);
  });
});

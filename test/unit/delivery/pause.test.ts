/**
 * The delivery engine's two classes of permanent failure (docs/delivery.md): a record failure dead-letters the
 * record; a destination failure (DeliveryError.scope 'destination') pauses the sink — records stay pending, one
 * record probes on the probe backoff, the sink resumes by itself at the first delivery. Fake clock, real SQLite.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryEngine, type EngineSink } from '../../../src/delivery/index.ts';
import { type Logger, silentLogger } from '../../../src/log.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import {
  captureLogger,
  destinationRefusal,
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

beforeEach(() => {
  tmp = makeTempDir('sef-pause-');
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

/** random() = 1: every probe delay is its ceiling (10 s, 20 s, 40 s, … up to 5 min). */
function startEngine(sinks: EngineSink[], logger: Logger = silentLogger()): DeliveryEngine {
  engine = new DeliveryEngine({ store, sinks, clock, random: () => 1, logger, observer: recorder.observer });
  engine.start();
  return engine;
}

function commit(from: number, to: number, sinks: string[]): void {
  const deliveries = [];
  for (let i = from; i <= to; i++) deliveries.push({ record: makeRecord(i), sinks });
  store.commit({ upTo: to }, deliveries);
  engine?.notify();
}

const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `rec-${from + i}`);
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
    startEngine([{ sink }], logger);
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
    startEngine([{ sink }], logger);
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

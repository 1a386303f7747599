/**
 * A sink down for the equivalent of 72 hours with 10,000 pending records, on a compressed (fake) clock, with a
 * restart (store closed and reopened, new engine) in the middle of the outage. Then the sink recovers and
 * everything drains in commit order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryEngine, type RetryEvent } from '../../../src/delivery/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { makeRecord, retryable, ScriptedSink, seededRandom } from '../../support/delivery.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { makeTempDir } from '../../support/tmp.ts';

const HOUR = 3_600_000;
const RECORDS = 10_000;
const CAP_MS = 5 * 60_000;

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = makeTempDir('sef-outage-');
});
afterAll(() => tmp.cleanup());

/**
 * The work is real, not waiting: 72 h of full-jitter backoff (capped at 5 min) is about 1,700 failed attempts,
 * each one synchronous=FULL transaction rewriting its 100-row batch's bookkeeping (≈ 290 KB to the WAL, ≈ 500 MB
 * in all, each fsync'd), plus 100 commits and 10,000 records drained: about 9 s of CPU (user + sys, vitest
 * included) and 10–20 s alone on the 2-core CI machine. When the whole suite and other processes share the CPU
 * and the disk (load ~20) the fsyncs queue: it took 38–57 s. Hence 120 s, twice the worst seen under that load.
 */
const OUTAGE_TEST_TIMEOUT_MS = 120_000;

describe('72 h outage with 10,000 pending records', () => {
  it('drops nothing, stays bounded on disk, caps backoff, survives a restart, then drains in order', {
    timeout: OUTAGE_TEST_TIMEOUT_MS,
  }, async ({ annotate }) => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const random = seededRandom(7);
    const retries: RetryEvent[] = [];
    let down = true;
    const sink = new ScriptedSink('webhook', clock, 100);
    // Alternate connection-refused and 503, as a real outage does.
    sink.failWith = () =>
      down ? retryable(sink.calls.length % 2 === 0 ? 'connection-refused' : 'http-503') : undefined;
    const caps = { maxPendingRows: 50_000, maxPendingBytes: 64 * 1024 * 1024 };

    const start = (s: Store) => {
      const engine = new DeliveryEngine({
        store: s,
        sinks: [{ sink, caps }],
        clock,
        random,
        logger: silentLogger(),
        rescanIntervalMs: HOUR,
        closeSinks: false,
        observer: {
          delivery: (e) => {
            if (e.type === 'retry') retries.push(e);
          },
        },
      });
      engine.start();
      return engine;
    };

    let store = openStore({ stateDir: tmp.dir, logger: silentLogger(), now: () => clock.now() });
    let engine = start(store);
    // 10,000 records arrive over the first 36 hours, 100 per commit.
    for (let i = 0; i < RECORDS; i += 100) {
      const deliveries = Array.from({ length: 100 }, (_, k) => ({
        record: makeRecord(i + k + 1),
        sinks: ['webhook'],
      }));
      store.commit({ upTo: i + 100 }, deliveries);
      engine.notify();
      await clock.advance((36 * HOUR) / (RECORDS / 100));
    }
    expect(store.stats()[0]).toMatchObject({ pending: RECORDS, deadLetters: 0 });

    // Restart in the middle of the outage.
    const beforeRestart = store.pending('webhook', 1)[0];
    const stopping = engine.stop(1000);
    await clock.advance(1000);
    await stopping;
    store.close();
    const restartAt = clock.now();
    const callsBeforeRestart = sink.calls.length;
    store = openStore({ stateDir: tmp.dir, logger: silentLogger(), now: () => clock.now() });
    expect(store.pending('webhook', 1)[0]).toMatchObject({
      attempts: beforeRestart?.attempts,
      nextAttemptAt: beforeRestart?.nextAttemptAt,
    });
    engine = start(store);
    await clock.advance(0);
    // No retry storm: nothing is attempted before the persisted next-attempt time.
    const firstAfterRestart = sink.calls[callsBeforeRestart];
    expect(
      firstAfterRestart === undefined || firstAfterRestart.at >= (beforeRestart?.nextAttemptAt ?? 0),
    ).toBe(true);
    expect(sink.calls.length - callsBeforeRestart).toBeLessThanOrEqual(
      beforeRestart!.nextAttemptAt <= restartAt ? 1 : 0,
    );

    await clock.advance(36 * HOUR);
    const stats = store.stats()[0];
    expect(stats).toMatchObject({ pending: RECORDS, deadLetters: 0 });
    expect(sink.delivered).toEqual([]);
    expect(Math.max(...retries.map((r) => r.delayMs))).toBeLessThanOrEqual(CAP_MS);
    expect(retries.some((r) => r.delayMs > CAP_MS / 2)).toBe(true); // the cap was actually reached
    const usage = store.diskUsage();
    await annotate(
      `outage: ${RECORDS} pending records, ${stats?.pendingBytes} payload bytes; on disk db=${usage.dbBytes} ` +
        `wal=${usage.walBytes} shm=${usage.shmBytes} total=${usage.totalBytes} bytes ` +
        `(+${usage.reserveBytes} reserve); ${sink.calls.length} attempts in 72 h, longest delay ` +
        `${Math.max(...retries.map((r) => r.delayMs))} ms`,
    );
    // Bounded: about the payload plus SQLite overhead and one WAL (≤ 25 MiB for 10,000 records of ~1.5 KiB).
    expect(usage.totalBytes).toBeLessThanOrEqual(2 * (stats?.pendingBytes ?? 0) + 5 * 1024 * 1024);
    expect(usage.totalBytes).toBeLessThanOrEqual(30 * 1024 * 1024);

    // Recovery: the head waits at most one capped backoff, then the backlog drains in order.
    down = false;
    await clock.advance(CAP_MS);
    expect(sink.delivered).toHaveLength(RECORDS);
    expect(sink.delivered).toEqual(Array.from({ length: RECORDS }, (_, i) => `rec-${i + 1}`));
    expect(store.stats()).toEqual([]);
    expect(store.integrityCheck()).toBe('ok');
    const final = engine.stop(1000);
    await clock.advance(1000);
    await final;
    store.close();
  });
});

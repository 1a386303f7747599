/**
 * Per-sink isolation: two webhook sinks fed the same records; sink A is healthy, then down (HTTP 503, then
 * hanging requests), then recovers. Sink B's latency is measured in every phase, and A's where it delivers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpSinkServer } from '../test/support/http-sink-server.ts';
import { createDeliveryHarness, type DeliveryHarness, withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { makeRecord } from './lib/records.ts';
import { round, roundSamples, summarize } from './lib/stats.ts';

const A = 'sink-a';
const B = 'sink-b';

interface PhaseResult {
  b: number[];
  a: number[];
  aPendingAtEnd: number;
}

/** Commits `count` records to both sinks one at a time, measuring B (and A when `measureA`). */
async function phase(
  harness: DeliveryHarness,
  count: number,
  measureA: boolean,
  offset: number,
): Promise<PhaseResult> {
  const b: number[] = [];
  const a: number[] = [];
  for (let i = 0; i < count; i++) {
    const record = makeRecord(offset + i);
    harness.commit([record]);
    const t0 = performance.now();
    const waits = [harness.acked(B, record.id), ...(measureA ? [harness.acked(A, record.id)] : [])];
    const [tb, ta] = await withTimeout(Promise.all(waits), 60_000, `acknowledgement of record ${offset + i}`);
    b.push((tb as number) - t0);
    if (ta !== undefined) a.push(ta - t0);
    await sleep(2);
  }
  const aPendingAtEnd = harness.store.stats().find((q) => q.sink === A)?.pending ?? 0;
  return { b, a, aPendingAtEnd };
}

export const isolation: Benchmark = {
  name: 'isolation',
  title: 'Per-sink isolation (one sink down, the other unaffected)',
  method:
    'In one process: one SQLite outbox, two `webhook` sinks (A and B) each pointed at its own recording HTTP ' +
    'server on 127.0.0.1, and the DeliveryEngine. Every record is committed for both sinks, one at a time; the ' +
    "time from commit to B acknowledging it is measured in every phase (and A's where A delivers). Phases: " +
    'both healthy; A answers HTTP 503 to everything (A retries with backoff 100 ms → 2 s cap, i.e. far more ' +
    "often than the default, to stress the shared process); A's requests hang until its 2 s timeout; A " +
    'recovers and drains its backlog while B keeps receiving new records.',
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const count = ctx.smoke ? 3 : 300;
    const serverA = await HttpSinkServer.start();
    const serverB = await HttpSinkServer.start();
    const harness = await createDeliveryHarness({
      entries: () => [
        { name: A, type: 'webhook', url: serverA.url('/a'), timeoutMs: 2000 },
        { name: B, type: 'webhook', url: serverB.url('/b') },
      ],
      engineOverrides: { [A]: { backoff: { initialMs: 100, maxMs: 2000 } } },
    });
    const results: Record<string, PhaseResult & { aDrainSeconds?: number }> = {};
    try {
      harness.start();
      await phase(harness, ctx.smoke ? 1 : 10, true, 0); // warm-up
      results['both healthy'] = await phase(harness, count, true, 1000);
      ctx.log('both healthy done');
      serverA.setDefault({ status: 503, body: 'down' });
      results['A answers 503'] = await phase(harness, count, false, 2000);
      ctx.log('A 503 done');
      serverA.setDefault({ hang: true });
      results['A hangs (2 s timeout)'] = await phase(harness, count, false, 3000);
      ctx.log('A hanging done');
      serverA.setDefault({ status: 200, body: 'ok' });
      const backlog = harness.store.stats().find((q) => q.sink === A)?.pending ?? 0;
      const drainStart = performance.now();
      const drained = harness.drained(A);
      const recovering = await phase(harness, count, false, 4000);
      const drainedAt = await withTimeout(drained, 120_000, 'sink A draining its backlog');
      results['A recovering (drains its backlog)'] = {
        ...recovering,
        aDrainSeconds: round((drainedAt - drainStart) / 1000, 2),
        aPendingAtEnd: backlog,
      };
      ctx.log('recovery done');
    } finally {
      await harness.close();
      await serverA.close();
      await serverB.close();
    }
    const rows = Object.entries(results).map(([name, r]) => {
      const b = summarize(r.b);
      const a = summarize(r.a);
      return [
        name,
        b.count,
        b.p50,
        b.p99,
        b.max,
        r.a.length > 0 ? a.p50 : null,
        r.a.length > 0 ? a.p99 : null,
        name.startsWith('A recovering') ? null : r.aPendingAtEnd,
      ];
    });
    const recovery = results['A recovering (drains its backlog)'];
    return {
      parameters: { recordsPerPhase: count, aBackoff: { initialMs: 100, maxMs: 2000 }, aTimeoutMs: 2000 },
      tables: [
        {
          title: 'Commit → acknowledged (ms) per phase',
          columns: ['phase', 'records', 'B p50', 'B p99', 'B max', 'A p50', 'A p99', 'A pending at end'],
          rows,
        },
      ],
      raw: Object.fromEntries(
        Object.entries(results).map(([k, r]) => [k, { ...r, b: roundSamples(r.b), a: roundSamples(r.a) }]),
      ),
      notes: recovery
        ? [
            `After recovery, A delivered its backlog of ${recovery.aPendingAtEnd} records in ${recovery.aDrainSeconds} s ` +
              '(including its remaining backoff wait) while B kept its latency.',
          ]
        : [],
    };
  },
};

/**
 * Detection latency: the simulator's document changes → the forwarder has committed the record, at 1,000 ms
 * and 200 ms poll intervals, with the simulator in real time and changes at random phases of the poll grid.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimulator } from '../src/simulator/index.ts';
import { withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { startInProcessForwarder, toggleRebootEvent } from './lib/pipeline.ts';
import { roundSamples, summarize } from './lib/stats.ts';

/** One sample: change the document at a random phase, wait for the matching record to be committed. */
export async function detectionSamples(
  pollIntervalMs: number,
  count: number,
  log: (m: string) => void,
): Promise<number[]> {
  const sim = await startSimulator({ timeScale: 1 });
  const forwarder = await startInProcessForwarder({ endpoint: sim.url, pollIntervalMs });
  const samples: number[] = [];
  try {
    let eventId: string | undefined;
    for (let i = 0; i < count; i++) {
      await sleep(Math.random() * pollIntervalMs); // random phase relative to the poll ticks
      const t0 = performance.now();
      const change = toggleRebootEvent(sim, eventId);
      eventId = change.eventId;
      const { transition } = change;
      const { at } = await withTimeout(
        forwarder.committed(eventId, transition),
        10 * pollIntervalMs + 10_000,
        `the ${transition} record of ${eventId}`,
      );
      samples.push(at - t0);
      if (transition === 'canceled') eventId = undefined;
      if ((i + 1) % 50 === 0) log(`${pollIntervalMs} ms: ${i + 1}/${count}`);
    }
  } finally {
    await forwarder.stop();
    await sim.close();
  }
  return samples;
}

export const detection: Benchmark = {
  name: 'detection',
  title: 'Detection latency (document change → record committed)',
  method:
    'The IMDS simulator runs in real time (timeScale 1) and the whole forwarder (the Forwarder class `run` ' +
    'uses, no sinks) runs in the same process. After a random delay uniform in [0, poll interval) — i.e. a ' +
    "random phase of the fixed-rate poll grid — the benchmark changes the document through the simulator's " +
    'admin API (alternately injects a Reboot and removes it, giving a `scheduled` and a `canceled` record) and ' +
    'measures with performance.now() until the pipeline observer reports that record committed to SQLite. ' +
    'Expected: uniform on [0, interval] plus request + transform + commit time, i.e. ≈ interval/2 on average.',
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const plan = ctx.smoke
      ? [
          { intervalMs: 1000, count: 2 },
          { intervalMs: 200, count: 3 },
        ]
      : [
          { intervalMs: 1000, count: 100 },
          { intervalMs: 200, count: 200 },
        ];
    const raw: Record<string, number[]> = {};
    const rows: Array<Array<string | number>> = [];
    for (const { intervalMs, count } of plan) {
      const samples = await detectionSamples(intervalMs, count, ctx.log);
      raw[`${intervalMs}ms`] = roundSamples(samples);
      const s = summarize(samples);
      rows.push([intervalMs, s.count, s.min, s.mean, s.p50, s.p90, s.p99, s.max, intervalMs / 2]);
      ctx.log(`${intervalMs} ms: mean ${s.mean} ms, p50 ${s.p50} ms, p99 ${s.p99} ms`);
    }
    return {
      parameters: { plan, timeScale: 1, changes: 'alternately inject a Reboot / remove it' },
      tables: [
        {
          title: 'Document change → record committed (ms)',
          columns: ['poll interval', 'samples', 'min', 'mean', 'p50', 'p90', 'p99', 'max', 'interval/2'],
          rows,
        },
      ],
      raw,
      notes: [],
    };
  },
};

/**
 * Delivery latency per sink: record committed to the outbox → the sink acknowledged it (the destination
 * confirmed and the outbox row was removed), one record at a time, on loopback.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { enableClientNoDelay } from '../test/support/event-hubs-double/index.ts';
import { createDeliveryHarness, withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { makeRecord } from './lib/records.ts';
import { roundSamples, summarize } from './lib/stats.ts';
import { SINK_KINDS, type SinkKind, sinkEntry, startTargets } from './lib/targets.ts';

/** A sink kind, optionally with the test-only TCP_NODELAY patch (Event Hubs: what Nagle costs). */
interface Variant {
  label: string;
  kind: SinkKind;
  noDelay?: boolean;
}

const VARIANTS: Variant[] = [
  ...SINK_KINDS.map((kind) => ({ label: kind, kind })),
  { label: 'eventhubs (TCP_NODELAY)', kind: 'eventhubs', noDelay: true },
];

export const delivery: Benchmark = {
  name: 'delivery',
  title: 'Delivery latency per sink (committed → acknowledged)',
  method:
    'In one process: a real SQLite outbox in a temporary directory, one real sink built through the config ' +
    'schema and sink registry, and the DeliveryEngine. One record (~1 KiB, produced by the real transform) is ' +
    'committed, the engine is notified as the pipeline does, and the time until the engine reports the record ' +
    'acknowledged (destination confirmed + outbox row deleted) is measured with performance.now(); then the ' +
    'next record. 10 warm-up records per sink are not counted. Destinations on 127.0.0.1: file (fsync per ' +
    'batch), exec (`sh -c "cat > /dev/null"` per record), webhook/slack/teams → the recording HTTP server ' +
    '(Slack/Teams rate limit set to 0 here; their default of one message per second would dominate), ' +
    'eventhubs → the AMQP double through the real @azure/event-hubs SDK, otel → the OTLP/HTTP receiver ' +
    '(http/protobuf). "eventhubs (TCP_NODELAY)" repeats Event Hubs with the test-only patch that sets ' +
    "TCP_NODELAY on the SDK's sockets, to show what Nagle's algorithm + delayed ACK cost.",
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const samplesPerSink = ctx.smoke ? 3 : 300;
    const warmup = ctx.smoke ? 1 : 10;
    const targets = await startTargets();
    const raw: Record<string, { latencyMs: number[]; commitMs: number[] }> = {};
    try {
      for (const variant of VARIANTS) {
        const restore = variant.noDelay ? enableClientNoDelay() : undefined;
        const harness = await createDeliveryHarness({
          entries: (dir) => [sinkEntry(variant.kind, targets, { dir, chatMinIntervalMs: 0 })],
        });
        try {
          harness.start();
          const latencyMs: number[] = [];
          const commitMs: number[] = [];
          for (let i = 0; i < warmup + samplesPerSink; i++) {
            const record = makeRecord(i);
            const commitTook = harness.commit([record]);
            const t0 = performance.now();
            const t1 = await withTimeout(
              harness.acked(variant.kind, record.id),
              60_000,
              `${variant.label} acknowledging record ${i}`,
            );
            if (i >= warmup) {
              latencyMs.push(t1 - t0);
              commitMs.push(commitTook);
            }
            await sleep(1);
          }
          raw[variant.label] = { latencyMs: roundSamples(latencyMs), commitMs: roundSamples(commitMs) };
          const s = summarize(latencyMs);
          ctx.log(`${variant.label}: p50 ${s.p50} ms, p99 ${s.p99} ms`);
        } finally {
          await harness.close();
          restore?.();
        }
      }
    } finally {
      await targets.close();
    }
    const rows = Object.entries(raw).map(([label, r]) => {
      const s = summarize(r.latencyMs);
      const c = summarize(r.commitMs);
      return [label, s.count, s.p50, s.p90, s.p99, s.max, c.p50];
    });
    return {
      parameters: { samplesPerSink, warmupPerSink: warmup, recordsPerDelivery: 1, chatMinIntervalMs: 0 },
      tables: [
        {
          title: 'Committed → acknowledged, one record at a time (ms)',
          columns: ['sink', 'samples', 'p50', 'p90', 'p99', 'max', 'outbox commit p50'],
          rows,
        },
      ],
      raw,
      notes: [],
    };
  },
};

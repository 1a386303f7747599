/** Backlog drain rate per sink: 10,000 records already pending in the outbox, engine started, time to empty. */
import { createDeliveryHarness, withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { makeRecord } from './lib/records.ts';
import { round } from './lib/stats.ts';
import { SINK_KINDS, sinkEntry, startTargets, type Targets } from './lib/targets.ts';

/** What the destination itself counted (not only the engine's acknowledgements). */
function receivedAt(kind: string, targets: Targets): number | null {
  switch (kind) {
    case 'webhook':
      return targets.webhook.requests.length;
    case 'slack':
      return targets.slack.requests.length;
    case 'teams':
      return targets.teams.requests.length;
    case 'eventhubs':
      return targets.eventHubs.received('records').length;
    case 'otel':
      return targets.otlp.acceptedRecords().length;
    default:
      return null;
  }
}

export const drain: Benchmark = {
  name: 'drain',
  title: 'Backlog drain rate per sink (10,000 records)',
  method:
    'In one process: 10,000 records (~1 KiB each) are committed to a fresh SQLite outbox for one sink ' +
    '(1,000 per transaction) before the DeliveryEngine starts; then the engine starts and the time until the ' +
    "sink's queue is empty (every row acknowledged and deleted) is measured. Batches are each sink's maximum " +
    '(file 100, eventhubs 100, otel 100; webhook/slack/teams/exec deliver one record per request/process). ' +
    'Slack and Teams run with their rate limit set to 0: with their default of one message per second a ' +
    "10,000-record backlog takes 10,000 s by design. The destination's own count is checked against 10,000.",
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const total = ctx.smoke ? 50 : 10_000;
    const targets = await startTargets();
    const rows: Array<Array<string | number | null>> = [];
    const raw: Record<string, unknown> = {};
    try {
      for (const kind of SINK_KINDS) {
        const before = receivedAt(kind, targets) ?? 0;
        const harness = await createDeliveryHarness({
          entries: (dir) => [sinkEntry(kind, targets, { dir, chatMinIntervalMs: 0 })],
        });
        try {
          const records = Array.from({ length: total }, (_, i) => makeRecord(i));
          for (let i = 0; i < total; i += 1000) harness.commit(records.slice(i, i + 1000));
          const bytes = harness.store.stats().find((q) => q.sink === kind)?.pendingBytes ?? 0;
          const drained = new Promise<number>((resolve) =>
            harness.engine.on('drained', (e) => {
              if (e.sink === kind) resolve(performance.now());
            }),
          );
          const t0 = performance.now();
          harness.start();
          const t1 = await withTimeout(drained, 30 * 60_000, `${kind} draining ${total} records`);
          const seconds = (t1 - t0) / 1000;
          const received = receivedAt(kind, targets);
          const counted = received === null ? null : received - before;
          const rate = round(total / seconds, 0);
          rows.push([kind, total, round(seconds, 2), rate, counted]);
          raw[kind] = {
            records: total,
            pendingBytes: bytes,
            seconds: round(seconds, 3),
            recordsPerSecond: rate,
            received: counted,
            acked: harness.deliveredCount(kind),
          };
          ctx.log(`${kind}: ${total} records in ${round(seconds, 2)} s (${rate}/s)`);
        } finally {
          await harness.close();
        }
      }
    } finally {
      await targets.close();
    }
    return {
      parameters: { records: total, commitBatch: 1000, chatMinIntervalMs: 0 },
      tables: [
        {
          title: `Draining a ${total.toLocaleString('en-US')}-record backlog`,
          columns: ['sink', 'records', 'seconds', 'records/s', 'received by destination'],
          rows,
        },
      ],
      raw,
      notes: [
        '"received by destination" is empty for file and exec (the engine acknowledgements are in the raw JSON).',
      ],
    };
  },
};

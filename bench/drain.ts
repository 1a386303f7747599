/**
 * Backlog drain rate per sink: 10,000 records already pending in the outbox, engine started, time to empty.
 * Each sink is measured in fresh child processes, once with Node's default V8 settings and once with the V8
 * settings `run` ships (src/cli/heap.ts), alternating which goes first, so the two can be compared in one run.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { endStartup } from '../src/cli/heap.ts';
import { createDeliveryHarness, withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { makeRecord } from './lib/records.ts';
import { round } from './lib/stats.ts';
import { SINK_KINDS, type SinkKind, sinkEntry, startTargets, type Targets } from './lib/targets.ts';

export const HEAP_PROFILES = ['node-defaults', 'as-shipped'] as const;
export type HeapProfile = (typeof HEAP_PROFILES)[number];
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

export interface DrainResult {
  kind: SinkKind;
  profile: HeapProfile;
  records: number;
  pendingBytes: number;
  seconds: number;
  recordsPerSecond: number;
  received: number | null;
  acked: number;
}

/** One sink, one heap profile, in this process (the child side: bench/lib/drain-child.ts). */
export async function drainOnce(kind: SinkKind, profile: HeapProfile, total: number): Promise<DrainResult> {
  const targets = await startTargets();
  try {
    const before = receivedAt(kind, targets) ?? 0;
    const harness = await createDeliveryHarness({
      entries: (dir) => [sinkEntry(kind, targets, { dir, chatMinIntervalMs: 0 })],
    });
    try {
      const records = Array.from({ length: total }, (_, i) => makeRecord(i));
      for (let i = 0; i < total; i += 1000) harness.commit(records.slice(i, i + 1000));
      const bytes = harness.store.stats().find((q) => q.sink === kind)?.pendingBytes ?? 0;
      const drained = harness.drained(kind);
      // As in `run`: start-up is over when the delivery engine starts (the pipeline is ready).
      if (profile === 'as-shipped') endStartup();
      const t0 = performance.now();
      harness.start();
      const t1 = await withTimeout(drained, 30 * 60_000, `${kind} draining ${total} records`);
      const seconds = (t1 - t0) / 1000;
      const received = receivedAt(kind, targets);
      return {
        kind,
        profile,
        records: total,
        pendingBytes: bytes,
        seconds: round(seconds, 3),
        recordsPerSecond: round(total / seconds, 0),
        received: received === null ? null : received - before,
        acked: harness.deliveredCount(kind),
      };
    } finally {
      await harness.close();
    }
  } finally {
    await targets.close();
  }
}

const run = promisify(execFile);

/** Runs drainOnce in a fresh child process (bench/lib/drain-child.ts), so each profile starts from a new heap. */
async function drainInChild(kind: SinkKind, profile: HeapProfile, total: number): Promise<DrainResult> {
  const { stdout } = await run(
    process.execPath,
    [join(import.meta.dirname, 'lib', 'drain-child.ts'), kind, profile, String(total)],
    {
      maxBuffer: 1024 * 1024,
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as DrainResult;
}

export const drain: Benchmark = {
  name: 'drain',
  title: 'Backlog drain rate per sink (10,000 records)',
  method:
    'For each sink: 10,000 records (~1 KiB each) are committed to a fresh SQLite outbox for one sink ' +
    '(1,000 per transaction) before the DeliveryEngine starts; then the engine starts and the time until the ' +
    "sink's queue is empty (every row acknowledged and deleted) is measured. Each measurement runs in a fresh " +
    'child process with its own destination (the loopback servers run in that process too), twice per sink: ' +
    "with Node's default V8 settings and with the settings `run` ships (src/cli/heap.ts: young generation kept " +
    'at 1 MiB, optimizing compilers off until start-up ends, which here is when the engine starts), in ' +
    "alternating order. Batches are each sink's maximum " +
    '(file 100, eventhubs 100, otel 100; webhook/slack/teams/exec deliver one record per request/process). ' +
    'Slack and Teams run with their rate limit set to 0: with their default of one message per second a ' +
    "10,000-record backlog takes 10,000 s by design. The destination's own count is checked against 10,000.",
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const total = ctx.smoke ? 50 : 10_000;
    const results: DrainResult[] = [];
    for (const [i, kind] of SINK_KINDS.entries()) {
      const order = i % 2 === 0 ? HEAP_PROFILES : [...HEAP_PROFILES].reverse();
      for (const profile of order) {
        const result = await drainInChild(kind, profile, total);
        results.push(result);
        ctx.log(
          `${kind} (${profile}): ${total} records in ${result.seconds} s (${result.recordsPerSecond}/s)`,
        );
      }
    }
    const of = (kind: SinkKind, profile: HeapProfile) =>
      results.find((r) => r.kind === kind && r.profile === profile) as DrainResult;
    const rows = SINK_KINDS.map((kind) => {
      const shipped = of(kind, 'as-shipped');
      const defaults = of(kind, 'node-defaults');
      return [
        kind,
        total,
        shipped.seconds,
        shipped.recordsPerSecond,
        shipped.received,
        defaults.recordsPerSecond,
        round(shipped.recordsPerSecond / defaults.recordsPerSecond, 2),
      ];
    });
    return {
      parameters: { records: total, commitBatch: 1000, chatMinIntervalMs: 0, heapProfiles: HEAP_PROFILES },
      tables: [
        {
          title: `Draining a ${total.toLocaleString('en-US')}-record backlog`,
          columns: [
            'sink',
            'records',
            'seconds',
            'records/s',
            'received by destination',
            'records/s with Node defaults',
            'ratio',
          ],
          rows,
        },
      ],
      raw: Object.fromEntries(
        SINK_KINDS.map((kind) => [
          kind,
          { asShipped: of(kind, 'as-shipped'), nodeDefaults: of(kind, 'node-defaults') },
        ]),
      ),
      notes: [
        '"seconds" and "records/s" are with the V8 settings `run` ships; "ratio" is that rate divided by the rate ' +
          'with Node defaults measured in the same run (1 = as fast).',
        '"received by destination" is empty for file and exec (the engine acknowledgements are in the raw JSON).',
      ],
    };
  },
};

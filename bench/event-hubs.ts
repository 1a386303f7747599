/**
 * Event Hubs sink benchmark against the in-process AMQP test double (real SDK, real AMQP over loopback, real
 * SQLite outbox and DeliveryEngine):
 *  1. backlog: 10,000 committed records drained to the double → records/s;
 *  2. steady state: records committed one at a time → committed→acked latency p50/p99.
 * Variants: one VM (one forwarder, the production shape) with the stock SDK socket (Nagle on) and with
 * TCP_NODELAY forced on the client; and 20 interleaved VMs (worst case for key-run batching). Writes bench/results/event-hubs.json and prints it.
 *
 *   node bench/event-hubs.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DeliveryEngine } from '../src/delivery/engine.ts';
import { silentLogger } from '../src/log.ts';
import { EventHubsSink, eventHubsOptionsSchema } from '../src/sinks/event-hubs/index.ts';
import { openStore } from '../src/store/index.ts';
import { enableClientNoDelay, startEventHubsDouble } from '../test/support/event-hubs-double/index.ts';
import { vmRecord } from '../test/support/records.ts';
import { makeTempDir } from '../test/support/tmp.ts';
import { waitFor } from '../test/support/wait.ts';

const BACKLOG = 10_000;
const STEADY = 500;
const STEADY_INTERVAL_MS = 5;

export interface VariantResult {
  clientNoDelay: boolean;
  /** Distinct VMs (partition keys) in commit order, interleaved; 1 = one forwarder on one VM (production). */
  vms: number;
  backlog: { records: number; seconds: number; recordsPerSecond: number; transfers: number };
  steady: {
    records: number;
    intervalMs: number;
    latencyMs: { p50: number; p90: number; p99: number; max: number };
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function runVariant(clientNoDelay: boolean, VMS: number): Promise<VariantResult> {
  const restore = clientNoDelay ? enableClientNoDelay() : () => {};
  const tmp = makeTempDir('sef-bench-eh-');
  const double = await startEventHubsDouble({ hubs: { lifecycle: 4 } });
  const store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
  const env = { BENCH_EH_CONN: double.connectionString('lifecycle') };
  const sink = new EventHubsSink(
    'eventhubs',
    eventHubsOptionsSchema(() => env).parse({ connectionString: { env: 'BENCH_EH_CONN' } }),
    silentLogger(),
  );
  try {
    // 1. backlog
    for (let i = 0; i < BACKLOG; i += 500) {
      store.commit(
        { upTo: i },
        Array.from({ length: 500 }, (_, k) => ({
          record: vmRecord(i + k, { vm: `vm-${(i + k) % VMS}` }),
          sinks: ['eventhubs'],
        })),
      );
    }
    const latencies: number[] = []; // steady state only
    let steady = false;
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink }],
      logger: silentLogger(),
      closeSinks: false,
      observer: {
        delivery: (e) => {
          if (steady && e.type === 'delivered') latencies.push(...e.latenciesMs);
        },
      },
    });
    const transfersBefore = double.stats().transfers;
    const started = performance.now();
    engine.start();
    await waitFor(() => double.received('lifecycle').length >= BACKLOG, 'the backlog to drain', {
      timeoutMs: 300_000,
      intervalMs: 5,
    });
    await waitFor(() => (store.stats().find((s) => s.sink === 'eventhubs')?.pending ?? 0) === 0, 'acks', {
      timeoutMs: 60_000,
      intervalMs: 5,
    });
    const seconds = (performance.now() - started) / 1000;
    const transfers = double.stats().transfers - transfersBefore;

    // 2. steady state
    steady = true;
    for (let i = 0; i < STEADY; i++) {
      store.commit({ steady: i }, [
        { record: vmRecord(BACKLOG + i, { vm: `vm-${i % VMS}` }), sinks: ['eventhubs'] },
      ]);
      engine.notify();
      await new Promise((r) => setTimeout(r, STEADY_INTERVAL_MS));
    }
    await waitFor(() => latencies.length >= STEADY, 'steady-state acks', { timeoutMs: 60_000 });
    await engine.stop(5000);
    latencies.sort((a, b) => a - b);
    return {
      clientNoDelay,
      vms: VMS,
      backlog: {
        records: BACKLOG,
        seconds: Number(seconds.toFixed(3)),
        recordsPerSecond: Math.round(BACKLOG / seconds),
        transfers,
      },
      steady: {
        records: STEADY,
        intervalMs: STEADY_INTERVAL_MS,
        latencyMs: {
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          max: latencies.at(-1) ?? Number.NaN,
        },
      },
    };
  } finally {
    await sink.close();
    store.close();
    await double.close();
    tmp.cleanup();
    restore();
  }
}

/** Runs the benchmark and returns (and writes) the result. */
export async function runEventHubsBench(): Promise<Record<string, unknown>> {
  const variants = [await runVariant(false, 1), await runVariant(true, 1), await runVariant(false, 20)];
  const result = {
    benchmark: 'event-hubs',
    description:
      'DeliveryEngine + SQLite outbox + Event Hubs sink (real @azure/event-hubs SDK) → in-process AMQP test double on 127.0.0.1',
    node: process.version,
    cpus: (await import('node:os')).availableParallelism(),
    at: new Date().toISOString(),
    partitions: 4,
    sinkMaxBatch: 100,
    variants,
    notes: [
      'latency = store commit time → engine ack (DeliveryEngine "delivered" event), millisecond resolution',
      'clientNoDelay=false is the stock SDK socket (Nagle on); loopback delayed-ACK adds ~40 ms steps to round trips',
      'the sink batches consecutive records with the same partition key; vms=20 interleaves keys, so every record is its own transfer',
    ],
  };
  const file = join(import.meta.dirname, 'results', 'event-hubs.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

if (import.meta.main) {
  const result = await runEventHubsBench();
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

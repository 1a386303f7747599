/**
 * `npm run bench [-- NAME...] [--smoke] [--duration 30s] [--out DIR]`: runs the benchmarks (all, or the named
 * ones), writes each one's raw JSON with machine info to bench/results/<name>.json and prints a summary.
 * Everything runs on 127.0.0.1 and stops by itself. `node bench/report.ts` then regenerates
 * docs/performance.md from the JSON files.
 *
 *   --smoke        tiny sample counts and durations (checks the harness; the numbers mean nothing)
 *   --duration D   footprint idle sampling window (e.g. 60s, 10m, or ms); default 60s
 *   --package TGZ  footprint: measure this package tarball instead of `npm pack` of the working tree
 *   --out DIR      where the JSON goes (default bench/results)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { delivery } from './delivery.ts';
import { detection } from './detection.ts';
import { drain } from './drain.ts';
import { endToEnd } from './end-to-end.ts';
import { fleet } from './fleet.ts';
import { footprint } from './footprint.ts';
import { isolation } from './isolation.ts';
import type { Benchmark, BenchResultFile, ResultTable } from './lib/harness.ts';
import { loadAverage, machineInfo } from './lib/machine.ts';

/** Every benchmark, in the order `npm run bench` runs them. */
export const BENCHMARKS: readonly Benchmark[] = [
  detection,
  delivery,
  endToEnd,
  isolation,
  drain,
  footprint,
  fleet,
];

export const DEFAULT_RESULTS_DIR = join(import.meta.dirname, 'results');

/** Parses "600000", "90s", "10m" into ms. */
export function parseDurationMs(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (match === null) throw new Error(`--duration "${value}": expected a number of ms, or e.g. 90s, 10m`);
  const n = Number(match[1]);
  const unit = match[2] ?? 'ms';
  return Math.round(unit === 'm' ? n * 60_000 : unit === 's' ? n * 1000 : n);
}

function formatTable(table: ResultTable): string {
  const cells = [table.columns, ...table.rows.map((r) => r.map((c) => (c === null ? '–' : String(c))))];
  const widths = table.columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
  return [`  ${table.title}`, ...cells.map((r) => `    ${line(r)}`)].join('\n');
}

export interface RunOptions {
  names: string[];
  smoke: boolean;
  durationMs: number | undefined;
  outDir: string;
  packageTarball?: string | undefined;
}

/** Runs the selected benchmarks one after another; returns the files written. */
export async function runBenchmarks(options: RunOptions): Promise<string[]> {
  const unknown = options.names.filter((n) => !BENCHMARKS.some((b) => b.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`,
    );
  }
  const selected =
    options.names.length === 0 ? BENCHMARKS : BENCHMARKS.filter((b) => options.names.includes(b.name));
  mkdirSync(options.outDir, { recursive: true });
  const written: string[] = [];
  for (const bench of selected) {
    const log = (message: string) => process.stderr.write(`[${bench.name}] ${message}\n`);
    log(`starting${options.smoke ? ' (smoke)' : ''}`);
    const before = loadAverage();
    const startedAt = new Date();
    const t0 = performance.now();
    const output = await bench.run({
      smoke: options.smoke,
      durationMs: options.durationMs,
      packageTarball: options.packageTarball,
      log,
    });
    const file: BenchResultFile = {
      name: bench.name,
      title: bench.title,
      method: bench.method,
      smoke: options.smoke,
      machine: machineInfo(),
      loadAverage: { before, after: loadAverage() },
      startedAt: startedAt.toISOString(),
      wallSeconds: Math.round((performance.now() - t0) / 100) / 10,
      ...output,
    };
    const path = join(options.outDir, `${bench.name}.json`);
    writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
    written.push(path);
    process.stdout.write(
      `\n== ${bench.title} (${file.wallSeconds} s, load ${before.join(' ')} → ${file.loadAverage.after.join(' ')})\n`,
    );
    for (const table of output.tables) process.stdout.write(`${formatTable(table)}\n`);
    for (const note of output.notes) process.stdout.write(`  note: ${note}\n`);
    process.stdout.write(`  → ${path}\n`);
  }
  return written;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      smoke: { type: 'boolean', default: false },
      duration: { type: 'string' },
      out: { type: 'string' },
      package: { type: 'string' },
    },
  });
  await runBenchmarks({
    names: positionals,
    smoke: values.smoke,
    durationMs: values.duration === undefined ? undefined : parseDurationMs(values.duration),
    outDir: values.out ?? DEFAULT_RESULTS_DIR,
    packageTarball: values.package,
  });
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}

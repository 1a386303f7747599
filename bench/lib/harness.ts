/**
 * The shape every benchmark has and the JSON it writes to bench/results/<name>.json. bench/report.ts turns
 * these files into docs/performance.md, so the document always shows the committed numbers.
 */
import type { MachineInfo } from './machine.ts';

/** A table for the summary and for docs/performance.md. Cells are numbers (ms, records/s, MiB...) or text. */
export interface ResultTable {
  title: string;
  columns: string[];
  rows: Array<Array<string | number | null>>;
}

/** What a benchmark run hands back. */
export interface BenchOutput {
  /** The knobs this run used (sample counts, intervals, durations). */
  parameters: Record<string, unknown>;
  tables: ResultTable[];
  /** Raw measurements (samples in ms, time series...) for anyone who wants to recompute. */
  raw: Record<string, unknown>;
  /** Observations worth reading next to the numbers (caveats of this run). */
  notes: string[];
}

/** Passed to every benchmark. */
export interface BenchContext {
  /** Tiny sample counts and short durations (the smoke test); numbers are meaningless then. */
  smoke: boolean;
  /** Override of the footprint's idle sampling window, in ms (one sample per second). */
  durationMs: number | undefined;
  /** footprint: measure this package tarball instead of a fresh `npm pack` of the working tree. */
  packageTarball?: string | undefined;
  /** Progress line on stderr. */
  log(message: string): void;
}

export interface Benchmark {
  name: string;
  title: string;
  /** How it is measured (rendered in docs/performance.md). */
  method: string;
  run(ctx: BenchContext): Promise<BenchOutput>;
}

/** One bench/results/<name>.json file. */
export interface BenchResultFile extends BenchOutput {
  name: string;
  title: string;
  method: string;
  smoke: boolean;
  machine: MachineInfo;
  /** os.loadavg() before and after the run (1, 5, 15 min): other work on the machine shows here. */
  loadAverage: { before: number[]; after: number[] };
  startedAt: string;
  wallSeconds: number;
}

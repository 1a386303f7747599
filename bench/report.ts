/**
 * `node bench/report.ts [--results DIR] [--out FILE] [--check]`: regenerates docs/performance.md from the
 * committed bench/results/*.json, so the document never drifts from the measured numbers. With --check it
 * only compares and exits 1 when the document is out of date.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { VariantResult } from './event-hubs.ts';
import type { BenchResultFile, ResultTable } from './lib/harness.ts';
import { BENCHMARKS, DEFAULT_RESULTS_DIR } from './run.ts';

export const DEFAULT_DOC = join(import.meta.dirname, '..', 'docs', 'performance.md');

function cell(value: string | number | null): string {
  if (value === null) return '–';
  if (typeof value === 'number')
    return Number.isInteger(value) && Math.abs(value) >= 1000 ? value.toLocaleString('en-US') : String(value);
  return value.replaceAll('|', '\\|');
}

function markdownTable(table: ResultTable): string {
  const head = `| ${table.columns.map(cell).join(' | ')} |`;
  const rule = `|${table.columns.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`;
  const rows = table.rows.map((r) => `| ${r.map(cell).join(' | ')} |`);
  return [`**${table.title}**`, '', head, rule, ...rows].join('\n');
}

function gib(bytes: number): string {
  return `${Math.round((bytes / 1024 ** 3) * 10) / 10} GiB`;
}

/** Reads every result file present, in the order `npm run bench` runs them. */
export function readResults(dir: string): BenchResultFile[] {
  return BENCHMARKS.map((b) => join(dir, `${b.name}.json`))
    .filter((path) => existsSync(path))
    .map((path) => JSON.parse(readFileSync(path, 'utf8')) as BenchResultFile);
}

/**
 * Runs of a benchmark at other parameters, kept beside its main result as `<name>.<label>.json` (for example
 * `fleet.40000-vms-postgres.json`, written with `--out DIR` and copied there): each becomes its own section
 * after the main ones, titled by its label and showing its parameters, in label order.
 */
export function readVariantResults(dir: string): Array<{ label: string; file: BenchResultFile }> {
  if (!existsSync(dir)) return [];
  const names = new Set(BENCHMARKS.map((b) => b.name));
  return readdirSync(dir)
    .map((entry) => /^([a-z-]+)\.([a-z0-9-]+)\.json$/.exec(entry))
    .filter((m): m is RegExpExecArray => m !== null && names.has(m[1]!))
    .sort((a, b) => cmpText(a[0], b[0]))
    .map((m) => ({
      label: m[2]!,
      file: JSON.parse(readFileSync(join(dir, m[0]), 'utf8')) as BenchResultFile,
    }));
}

const cmpText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

type Row = Array<string | number | null>;
const rowsOf = (file: BenchResultFile, table = 0): Row[] => file.tables[table]?.rows ?? [];

/** One headline line per benchmark, computed from its first table (so the summary cannot drift either). */
const HEADLINES: Record<string, (file: BenchResultFile) => string> = {
  detection: (f) =>
    `Detection (change → committed): ${rowsOf(f)
      .map((r) => `${r[0]} ms polling: mean ${r[3]} ms, p50 ${r[4]} ms, p99 ${r[6]} ms (${r[1]} samples)`)
      .join('; ')}.`,
  delivery: (f) =>
    `Delivery (committed → acknowledged), per sink: ${rowsOf(f)
      .map((r) => `${r[0]} p50 ${r[2]} / p99 ${r[4]} ms`)
      .join(', ')}.`,
  'end-to-end': (f) =>
    `IMDS change → acknowledged at 1 s polling: ${rowsOf(f)
      .slice(1)
      .map((r) => `${String(r[0]).replace('acknowledged by ', '')} p50 ${r[4]} ms, p99 ${r[6]} ms`)
      .join('; ')}.`,
  isolation: (f) =>
    `Isolation: sink B ${rowsOf(f)
      .map((r) => `${r[0]}: p50 ${r[2]} / p99 ${r[3]} ms`)
      .join('; ')}.`,
  drain: (f) =>
    `Backlog drain (records/s, with the V8 settings \`run\` ships; ratio to Node defaults in the same run): ${rowsOf(
      f,
    )
      .map((r) => `${r[0]} ${cell(r[3] ?? null)}${r[6] === undefined ? '' : ` (${r[6]}×)`}`)
      .join(', ')}.`,
  footprint: (f) => {
    const rows = rowsOf(f, 1);
    const ratios = rows.filter((r) => !String(r[0]).startsWith('written'));
    const written = rows.find((r) => String(r[0]).startsWith('written'));
    return (
      'Footprint of the installed package and of the linux-x64 single executable at idle 1 s polling, as ratios ' +
      'to a minimal node:http poller in the same run (stdout sink / every sink type / single executable with the ' +
      `stdout sink): ${ratios.map((r) => `${r[0]} ${r[1]}× / ${r[2]}× / ${cell(r[3] ?? null)}×`).join('; ')}` +
      `${written === undefined ? '' : `; written ${written[1]} / ${written[2]} / ${cell(written[3] ?? null)} KiB per minute`}.`
    );
  },
  fleet: (f) => {
    const ingest = rowsOf(f)
      .map(
        (r) =>
          `${r[0]} ${cell(r[2] ?? null)} records/s (last/first 10% of batches ${r[5]}×${
            r[6] === '' || r[6] === undefined ? '' : `; ${r[6]}× the rate at N/10`
          }), ${r[10]}× the body per record`,
      )
      .join('; ');
    const apis = f.tables
      .filter((t) => t.columns[0] === 'API')
      .map((t) => {
        const worst = [...t.rows].sort((a, b) => Number(b[3]) - Number(a[3]))[0];
        const missed = t.rows
          .filter((r) => String(r.at(-1)).includes('MISSED'))
          .map((r) => `${r[0]} (${r[1]})`);
        return (
          `${t.title.split(':')[0]} slowest p95 ${worst?.[3]} ms (${worst?.[0]}, ${worst?.[1]})` +
          `${missed.length > 0 ? `, targets missed by ${missed.join(', ')}` : ', every API target met'}`
        );
      })
      .join('; ');
    const exports = rowsOf(f, f.tables.length - 1);
    const growth = Math.max(...exports.map((r) => Number(r[5])));
    return `Fleet history: ingest ${ingest}. ${apis}. CSV export RSS growth at most ${growth} MiB.`;
  },
};

/** The whole docs/performance.md text. */
export function renderReport(
  results: readonly BenchResultFile[],
  variants: ReadonlyArray<{ label: string; file: BenchResultFile }> = [],
): string {
  const out: string[] = [
    '# Performance',
    '',
    '<!-- Generated by `node bench/report.ts` from bench/results/*.json. Do not edit by hand: rerun the',
    '     benchmarks (`npm run bench`) and then the report. -->',
    '',
    'Every figure below was measured by `npm run bench` (code in `bench/`, raw samples in',
    '`bench/results/<name>.json`) on the machine described with each benchmark. Everything runs on',
    '127.0.0.1: the IMDS simulator, the recording HTTP server, the OTLP receiver and the Event Hubs AMQP',
    "double are the project's own test servers, so the numbers show the forwarder's own cost, not a",
    "network's. Latencies are in milliseconds; percentiles are nearest-rank over the stated sample count",
    '(with 100 samples, p99 is the second-largest value).',
    '',
    '## Reproduce',
    '',
    '```sh',
    'npm run bench                          # every benchmark (about 50 minutes; footprint 4, fleet about 25)',
    'SEF_BENCH_FLEET_VMS=2000 npm run bench -- fleet   # the fleet benchmark at another size (N and N/10 VMs)',
    'npm run bench -- detection footprint   # only these',
    'npm run bench -- footprint --duration 5m    # longer idle window (default 60 one-second samples)',
    'npm run bench -- footprint --package old.tgz  # footprint of another build (e.g. `npm pack` of an older commit)',
    'npm run bench -- --smoke --out /tmp/b  # tiny sample counts: checks the harness, numbers meaningless',
    'node bench/report.ts                   # regenerate this page from bench/results/*.json',
    'node bench/report.ts --check           # exit 1 if this page is out of date',
    '```',
    '',
  ];
  if (results.length === 0) out.push('No results yet.', '');
  const smoke = results.filter((r) => r.smoke).map((r) => r.name);
  if (smoke.length > 0) out.push(`> **Smoke results** (meaningless numbers): ${smoke.join(', ')}.`, '');
  if (results.length > 0) {
    out.push('## Summary', '');
    for (const r of results) {
      const headline = HEADLINES[r.name];
      if (headline !== undefined) out.push(`- ${headline(r)}`);
    }
    out.push('');
  }
  const section = (r: BenchResultFile) => {
    const m = r.machine;
    for (const table of r.tables) out.push(markdownTable(table), '');
    for (const note of r.notes) out.push(`- ${note}`);
    if (r.notes.length > 0) out.push('');
    out.push(
      `<sub>Run ${r.startedAt} (${r.wallSeconds} s) on ${m.cpuModel}, ${m.cores} cores, ${gib(m.memoryBytes)}, ` +
        `${m.os} (${m.platform}/${m.arch}), Node ${m.node}, commit ${m.gitCommit?.slice(0, 12) ?? 'unknown'}` +
        `${m.gitDirty === true ? ' (with uncommitted changes)' : ''}; ` +
        `load average (1/5/15 min) ${r.loadAverage.before.join(' / ')} before, ${r.loadAverage.after.join(' / ')} after. ` +
        `Parameters: \`${JSON.stringify(r.parameters)}\`.</sub>`,
      '',
    );
  };
  for (const r of results) {
    out.push(`## ${r.title}`, '', `\`npm run bench -- ${r.name}\``, '', r.method, '');
    section(r);
  }
  for (const { label, file } of variants) {
    out.push(
      `## ${file.name} at other parameters: ${label}`,
      '',
      `\`npm run bench -- ${file.name}\` with the parameters below (bench/results/${file.name}.${label}.json). ` +
        `The method is the one of the section above; where its text names a size, a repetition count or the ` +
        `heartbeats, this run's parameters (at the end of this section) apply instead.`,
      '',
    );
    section(file);
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** The section for bench/results/event-hubs.json, written by the Event Hubs sink's own bench/event-hubs.ts. */
export function renderEventHubsSection(json: {
  description: string;
  node: string;
  cpus: number;
  at: string;
  variants: VariantResult[];
  notes: string[];
}): string {
  const rows = json.variants.map((v) => [
    v.vms === 1 ? 'one VM' : `${v.vms} interleaved VMs`,
    v.clientNoDelay ? 'on (test patch)' : 'off (stock SDK)',
    v.backlog.records,
    v.backlog.seconds,
    v.backlog.recordsPerSecond,
    v.backlog.transfers,
    v.steady.latencyMs.p50,
    v.steady.latencyMs.p99,
    v.steady.latencyMs.max,
  ]);
  const table = markdownTable({
    title: 'Backlog drain and steady committed → acked latency (ms, millisecond resolution)',
    columns: [
      'partition keys',
      'TCP_NODELAY',
      'backlog',
      'seconds',
      'records/s',
      'AMQP transfers',
      'p50',
      'p99',
      'max',
    ],
    rows,
  });
  return [
    '## Event Hubs sink in depth',
    '',
    "`node bench/event-hubs.ts` (the Event Hubs sink's own benchmark; not part of `npm run bench`)",
    '',
    `${json.description}. Steady state: ${json.variants[0]?.steady.records ?? 0} records committed every ` +
      `${json.variants[0]?.steady.intervalMs ?? 0} ms.`,
    '',
    table,
    '',
    ...json.notes.map((n) => `- ${n}`),
    '',
    `<sub>Run ${json.at}, Node ${json.node}, ${json.cpus} cores (same machine).</sub>`,
    '',
  ].join('\n');
}

function main(): void {
  const { values } = parseArgs({
    options: {
      results: { type: 'string' },
      out: { type: 'string' },
      check: { type: 'boolean', default: false },
    },
  });
  const dir = values.results ?? DEFAULT_RESULTS_DIR;
  let text = renderReport(readResults(dir), readVariantResults(dir));
  const eventHubs = join(dir, 'event-hubs.json');
  if (existsSync(eventHubs))
    text += `\n${renderEventHubsSection(JSON.parse(readFileSync(eventHubs, 'utf8')))}`;
  const target = values.out ?? DEFAULT_DOC;
  if (values.check) {
    const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
    if (current !== text) {
      process.stderr.write(`${target} is out of date: run node bench/report.ts\n`);
      process.exit(1);
    }
    return;
  }
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
}

if (import.meta.main) main();

/**
 * Footprint: the forwarder as a child process polling the simulator at 1 Hz while nothing happens, with a
 * minimal config (stdout sink) and with every sink type configured. RSS and CPU come from /proc every few
 * seconds; startup time is spawn → the first Scheduled Events request the simulator receives.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningSimulator, startSimulator } from '../src/simulator/index.ts';
import { makeTempDir } from '../test/support/tmp.ts';
import { waitFor } from '../test/support/wait.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import {
  canReadProcessUsage,
  type ProcessSample,
  readProcessUsage,
  spawnForwarder,
  stopForwarder,
} from './lib/process.ts';
import { round, summarize } from './lib/stats.ts';
import { SINK_KINDS, type SinkKind, sinkEntry, startTargets, type Targets } from './lib/targets.ts';

const CONFIGS = ['minimal', 'all-sinks'] as const;
type ConfigName = (typeof CONFIGS)[number];
const EH_ENV = 'SEF_BENCH_EH_CONNECTION';

interface Launch {
  args: string[];
  env: NodeJS.ProcessEnv;
}

/** Command line for one configuration, polling `endpoint` at 1 Hz with a fresh state directory. */
function launch(config: ConfigName, endpoint: string, dir: string, targets: Targets): Launch {
  const stateDir = join(dir, 'state');
  const common = ['--imds-endpoint', endpoint, '--poll-interval', '1000', '--state-dir', stateDir];
  if (config === 'minimal') return { args: [...common, '--sink', 'stdout'], env: {} };
  const kinds: Array<SinkKind | 'stdout'> = ['stdout', ...SINK_KINDS];
  const sinks = kinds.map((kind) => {
    const entry = sinkEntry(kind, targets, { dir });
    // The connection string comes from the environment, with the config's own "${ENV}" secret syntax.
    if (kind === 'eventhubs') entry.connectionString = `\${${EH_ENV}}`;
    return entry;
  });
  const file = join(dir, 'forwarder.yaml');
  writeFileSync(file, JSON.stringify({ sinks }, null, 2)); // JSON is YAML
  return {
    args: [...common, '--config', file],
    env: { [EH_ENV]: targets.eventHubs.connectionString('records') },
  };
}

function firstRequestAt(sim: RunningSimulator, vm: string, endpoint: string): number | undefined {
  const entry = sim.admin.requests().log.find((e) => e.vm === vm && e.endpoint === endpoint);
  return entry === undefined ? undefined : Date.parse(entry.at);
}

/** Spawn → first Scheduled Events GET at the simulator, in ms (also the first instance-metadata GET). */
async function measureStartup(
  sim: RunningSimulator,
  config: ConfigName,
  run: number,
  targets: Targets,
): Promise<{ firstPollMs: number; identityMs: number; stopMs: number }> {
  const vm = `startup-${config}-${run}`;
  const tmp = makeTempDir('sef-bench-startup-');
  try {
    const { args, env } = launch(config, sim.vmUrl(vm), tmp.dir, targets);
    const spawnedAt = Date.now();
    const child = spawnForwarder(args, { logFile: join(tmp.dir, 'forwarder.log'), env });
    try {
      const polledAt = await waitFor(
        () => firstRequestAt(sim, vm, 'scheduledevents'),
        `first poll of ${vm}`,
        {
          timeoutMs: 60_000,
        },
      );
      const identityAt = firstRequestAt(sim, vm, 'instance') ?? polledAt;
      return { firstPollMs: polledAt - spawnedAt, identityMs: identityAt - spawnedAt, stopMs: 0 };
    } finally {
      await stopForwarder(child);
    }
  } finally {
    tmp.cleanup();
  }
}

interface Running {
  config: ConfigName;
  vm: string;
  child: ChildProcess;
  samples: ProcessSample[];
  dir: { dir: string; cleanup: () => void };
}

export const footprint: Benchmark = {
  name: 'footprint',
  title: 'Footprint: RSS and CPU while idle, startup time',
  method:
    'The forwarder runs as a child process (`node src/cli/main.ts run`, TypeScript executed by Node type ' +
    'stripping) against the IMDS simulator at 1 Hz polling, once with the minimal config (`--sink stdout`) and ' +
    'once with every sink type configured (stdout, file, exec, webhook, slack, teams, eventhubs → the AMQP ' +
    'double, otel → the OTLP receiver). Both run at the same time against one simulator (each as its own VM ' +
    'identity). Ten seconds in, one Scheduled event is injected so every sink connects and delivers once; then ' +
    'nothing changes. RSS (VmRSS) and CPU time (utime+stime) are read from /proc/<pid> every 5 s. Startup: ' +
    'spawn → first Scheduled Events request received by the simulator, with a fresh state directory each time ' +
    '(includes creating the SQLite database and fetching the VM identity).',
  async run(ctx: BenchContext): Promise<BenchOutput> {
    if (!canReadProcessUsage()) throw new Error('footprint needs /proc (Linux) to read RSS and CPU time');
    const durationMs = ctx.durationMs ?? (ctx.smoke ? 4000 : 600_000);
    const sampleEveryMs = ctx.smoke ? 1000 : 5000;
    const warmupAtMs = ctx.smoke ? 1500 : 10_000;
    const startupRuns = ctx.smoke ? 1 : 5;
    const sim = await startSimulator({ timeScale: 1 });
    const targets = await startTargets();
    const running: Running[] = [];
    try {
      // Startup time (fresh state directory each run).
      const startup: Record<ConfigName, Array<{ firstPollMs: number; identityMs: number }>> = {
        minimal: [],
        'all-sinks': [],
      };
      for (let run = 0; run < startupRuns; run++) {
        for (const config of CONFIGS) {
          const result = await measureStartup(sim, config, run, targets);
          startup[config].push({ firstPollMs: result.firstPollMs, identityMs: result.identityMs });
          ctx.log(`startup ${config} #${run + 1}: first poll after ${result.firstPollMs} ms`);
        }
      }

      // Idle footprint, both configurations side by side.
      for (const config of CONFIGS) {
        const vm = `footprint-${config}`;
        const dir = makeTempDir('sef-bench-footprint-');
        const { args, env } = launch(config, sim.vmUrl(vm), dir.dir, targets);
        const child = spawnForwarder(args, { logFile: join(dir.dir, 'forwarder.log'), env });
        running.push({ config, vm, child, samples: [], dir });
      }
      const started = performance.now();
      let warmedUp = false;
      let warmupEventId = '';
      ctx.log(`footprint: sampling for ${Math.round(durationMs / 1000)} s`);
      while (performance.now() - started < durationMs) {
        const t = (performance.now() - started) / 1000;
        for (const r of running) {
          if (r.child.exitCode !== null) throw new Error(`forwarder (${r.config}) exited early; see its log`);
          r.samples.push({ t: round(t, 1), ...readProcessUsage(r.child.pid as number) });
        }
        if (!warmedUp && performance.now() - started >= warmupAtMs) {
          warmedUp = true;
          warmupEventId = sim.admin.injectEvent({
            type: 'Reboot',
            resources: running.map((r) => r.vm),
            noticeSeconds: '1h',
            autoStart: false,
          }).id;
        }
        await sleep(Math.min(sampleEveryMs, warmedUp ? sampleEveryMs : warmupAtMs));
      }
      const final = (performance.now() - started) / 1000;
      for (const r of running)
        r.samples.push({ t: round(final, 1), ...readProcessUsage(r.child.pid as number) });

      const delivered = {
        webhook: targets.webhook.requests.length,
        slack: targets.slack.requests.length,
        teams: targets.teams.requests.length,
        eventhubs: targets.eventHubs.received('records').length,
        otel: targets.otlp.acceptedRecords().length,
      };
      const polls = Object.fromEntries(
        running.map((r) => [
          r.config,
          sim.admin.requests().log.filter((e) => e.vm === r.vm && e.endpoint === 'scheduledevents').length,
        ]),
      );
      const stopMs: Record<string, number> = {};
      for (const r of running) stopMs[r.config] = Math.round(await stopForwarder(r.child));

      const rows = running.map((r) => {
        const rss = r.samples.map((s) => s.rssKiB / 1024);
        const after = r.samples.filter((s) => s.t * 1000 >= warmupAtMs + sampleEveryMs);
        const window = after.length >= 2 ? after : r.samples;
        const first = window[0] as ProcessSample;
        const last = window[window.length - 1] as ProcessSample;
        const span = Math.max(0.001, last.t - first.t);
        const cpuPercent = ((last.cpuSeconds - first.cpuSeconds) / span) * 100;
        const intervals = window.slice(1).map((s, i) => {
          const prev = window[i] as ProcessSample;
          return ((s.cpuSeconds - prev.cpuSeconds) / Math.max(0.001, s.t - prev.t)) * 100;
        });
        const rssSummary = summarize(rss);
        return {
          config: r.config,
          rssFirstMiB: round((r.samples[0]?.rssKiB ?? 0) / 1024, 1),
          rssMedianMiB: round(rssSummary.p50, 1),
          rssMaxMiB: round(rssSummary.max, 1),
          rssEndMiB: round((r.samples[r.samples.length - 1]?.rssKiB ?? 0) / 1024, 1),
          cpuAvgPercent: round(cpuPercent, 2),
          cpuPeakIntervalPercent: round(Math.max(0, ...intervals), 2),
          cpuSecondsTotal: round(last.cpuSeconds, 2),
          idleWindowSeconds: round(span, 1),
          polls: polls[r.config] ?? 0,
        };
      });
      const startupRows = CONFIGS.map((config) => {
        const s = summarize(startup[config].map((x) => x.firstPollMs));
        const identity = summarize(startup[config].map((x) => x.identityMs));
        return [config, s.count, s.min, s.p50, s.max, identity.p50];
      });
      return {
        parameters: {
          durationSeconds: durationMs / 1000,
          sampleEverySeconds: sampleEveryMs / 1000,
          pollIntervalMs: 1000,
          startupRuns,
          sinksAllConfig: ['stdout', ...SINK_KINDS],
          warmupEventAtSeconds: warmupAtMs / 1000,
        },
        tables: [
          {
            title: `Idle polling at 1 Hz for ${Math.round(durationMs / 60_000) || round(durationMs / 60_000, 2)} min (CPU after the warm-up event)`,
            columns: [
              'config',
              'RSS first (MiB)',
              'RSS median (MiB)',
              'RSS max (MiB)',
              'RSS end (MiB)',
              'CPU avg (% of one core)',
              'CPU peak 5 s (%)',
              'CPU total (s)',
              'polls',
            ],
            rows: rows.map((r) => [
              r.config,
              r.rssFirstMiB,
              r.rssMedianMiB,
              r.rssMaxMiB,
              r.rssEndMiB,
              r.cpuAvgPercent,
              r.cpuPeakIntervalPercent,
              r.cpuSecondsTotal,
              r.polls,
            ]),
          },
          {
            title: 'Startup: spawn → first Scheduled Events poll (ms)',
            columns: ['config', 'runs', 'min', 'p50', 'max', 'p50 spawn → identity request'],
            rows: startupRows,
          },
        ],
        raw: {
          startup,
          rows,
          samples: Object.fromEntries(running.map((r) => [r.config, r.samples])),
          warmupEventId,
          warmupDelivered: delivered,
          stopMs,
        },
        notes: [
          `The warm-up event reached: ${Object.entries(delivered)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')} (per sink; 1 expected each).`,
          `Graceful stop (SIGTERM → exit): ${Object.entries(stopMs)
            .map(([k, v]) => `${k} ${v} ms`)
            .join(', ')}.`,
        ],
      };
    } finally {
      for (const r of running) {
        await stopForwarder(r.child);
        r.dir.cleanup();
      }
      await targets.close();
      await sim.close();
    }
  },
};

/**
 * Footprint: the package bin as installed (bench/lib/package.ts) beside a minimal `node:http` poller written
 * here, same Node binary, same run, against one simulator on 127.0.0.1 at 1 Hz while nothing happens. Every
 * figure is also reported as a ratio to the poller, so load from other work on the machine mostly cancels out.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningSimulator, startSimulator } from '../src/simulator/index.ts';
import { generateTestCertificate } from '../test/support/event-hubs-double/index.ts';
import { makeTempDir } from '../test/support/tmp.ts';
import { waitFor } from '../test/support/wait.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { type InstalledPackage, installPackage } from './lib/package.ts';
import {
  canReadProcessUsage,
  clockTicksPerSecond,
  type ProcessSample,
  REPO_ROOT,
  readProcessUsage,
  stopForwarder,
} from './lib/process.ts';
import { round, summarize } from './lib/stats.ts';
import { SINK_KINDS, type SinkKind, sinkEntry, startTargets, type Targets } from './lib/targets.ts';

const ALL_SUBJECTS = ['poller', 'stdout', 'all-sinks', 'executable'] as const;
type Subject = (typeof ALL_SUBJECTS)[number];
const LABEL: Record<Subject, string> = {
  poller: 'minimal node:http poller',
  stdout: 'forwarder, stdout sink',
  'all-sinks': 'forwarder, every sink type (idle)',
  executable: 'single executable (linux-x64), stdout sink',
};
/** The linux-x64 single executable of `npm run package` (scripts/package). */
const EXECUTABLE = join(REPO_ROOT, 'release', 'bin', 'linux-x64', 'scheduled-events-forwarder');

/**
 * The executable to measure: built (`--targets linux-x64 --no-archives`) when missing, except in smoke runs,
 * which measure it only when `npm run package` already built it (building takes minutes).
 */
function ensureExecutable(ctx: BenchContext): string | undefined {
  if (existsSync(EXECUTABLE)) return EXECUTABLE;
  if (ctx.smoke) return undefined;
  ctx.log('building the linux-x64 single executable (scripts/package/build.ts)');
  execFileSync(
    process.execPath,
    [join(REPO_ROOT, 'scripts', 'package', 'build.ts'), '--targets', 'linux-x64', '--no-archives'],
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return EXECUTABLE;
}
/**
 * File-backed RSS depends on how a binary's pages came into the page cache, not only on its bytes: the kernel
 * maps a whole page-cache folio at each fault, and a file written in large writes (postject writes the
 * executable in one; npm's extraction writes node in large chunks) sits in large folios. The same single
 * executable measured 60 MiB file-backed right after a copy in 1 MiB writes and 37 MiB after a copy in 64 KiB
 * writes or after being read back from disk, the same as plain node (docs/install.md, "Footprint"). So the
 * Node binary and the executable run from copies made the same way and dropped from the page cache
 * (`dd iflag=nocache count=0`, after fsync), both read from disk as after a reboot — a sidecar's steady state.
 */
function coldCopies(dir: string, executable: string | undefined): { node: string; executable?: string } {
  const copy = (from: string, to: string): string => {
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
    chmodSync(to, 0o755);
    const fd = openSync(to, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    execFileSync('dd', [`if=${to}`, 'iflag=nocache', 'count=0', 'status=none']);
    return to;
  };
  return {
    node: copy(process.execPath, join(dir, 'node', 'bin', 'node')),
    ...(executable === undefined
      ? {}
      : { executable: copy(executable, join(dir, 'executable', 'scheduled-events-forwarder')) }),
  };
}
const EH_ENV = 'SEF_BENCH_EH_CONNECTION';
/** `false`: the Event Hubs sink of the every-sink-type subject without heartbeats (its default is on). */
const EH_HEARTBEATS_ENV = 'SEF_BENCH_FOOTPRINT_EH_HEARTBEATS';
const SCHEDULED_EVENTS_PATH = '/metadata/scheduledevents?api-version=2020-07-01';

/** The reference: GET every second, JSON.parse, nothing else. */
export const MINIMAL_POLLER = `import http from 'node:http';
const url = process.argv[2];
const poll = () =>
  http
    .get(url, { headers: { Metadata: 'true' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => JSON.parse(body));
    })
    .on('error', () => {});
poll();
setInterval(poll, 1000);
`;

/**
 * The targets (ratios to the poller; bytes absolute): those of the issue that asked for this benchmark, RSS and
 * anonymous RSS tightened by #32 item 8 (every feature costs nothing where it is not configured; an idle
 * configured sink little): RSS ≤ 1.10×, anonymous ≤ 1.4×, for every subject.
 */
export const FOOTPRINT_TARGETS = {
  rssStdout: 1.1,
  anonStdout: 1.4,
  rssAllSinks: 1.1,
  anonAllSinks: 1.4,
  cpuPerPoll: 1.5,
  firstGet: 1.5,
  writtenKiBPerMinute: 4,
};

interface Setup {
  pkg: InstalledPackage;
  /** The linux-x64 single executable, when measured. */
  executable: string | undefined;
  pollerFile: string;
  /** The Node binary the poller and the package bin run on (a cold copy of this one: coldCopies). */
  node: string;
  targets: Targets;
  /** The Event Hubs double's certificate (it listens with TLS): the every-sink-type subject trusts it. */
  eventHubsCertPath: string;
  sim: RunningSimulator;
}

/** Spawns one subject polling the simulator as VM `vm`, with a fresh state directory in `dir`. */
function spawnSubject(subject: Subject, setup: Setup, vm: string, dir: string): ChildProcess {
  const log = openSync(join(dir, `${subject}.log`), 'a');
  const stdio: ['ignore', 'ignore', number] = ['ignore', 'ignore', log];
  const endpoint = setup.sim.vmUrl(vm);
  if (subject === 'poller') {
    return spawn(setup.node, [setup.pollerFile, `${endpoint}${SCHEDULED_EVENTS_PATH}`], { stdio });
  }
  const args = ['run', '--imds-endpoint', endpoint, '--poll-interval', '1000'];
  args.push('--state-dir', join(dir, 'state'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The bin's `#!/usr/bin/env node` finds this Node binary first, as the poller's.
    PATH: `${dirname(setup.node)}${delimiter}${process.env.PATH ?? ''}`,
  };
  if (subject === 'executable') {
    // The executable carries its own Node.js: no PATH entry for node, no node flags.
    args.push('--sink', 'stdout');
    return spawn(setup.executable!, args, {
      stdio,
      env: { ...process.env, PATH: '/usr/bin:/bin' },
      cwd: dir,
    });
  }
  if (subject === 'stdout') args.push('--sink', 'stdout');
  else {
    const kinds: Array<SinkKind | 'stdout'> = ['stdout', ...SINK_KINDS];
    const sinks = kinds.map((kind) => {
      const entry = sinkEntry(kind, setup.targets, { dir });
      // The connection string comes from the environment, with the config's own "${ENV}" secret syntax.
      if (kind === 'eventhubs') {
        entry.connectionString = `\${${EH_ENV}}`;
        // Heartbeats are on by default for Event Hubs (over its REST API: no SDK); the variable measures without.
        if (process.env[EH_HEARTBEATS_ENV] === 'false') entry.heartbeats = false;
      }
      return entry;
    });
    const file = join(dir, 'forwarder.yaml');
    writeFileSync(file, JSON.stringify({ sinks }, null, 2)); // JSON is YAML
    args.push('--config', file);
    env[EH_ENV] = setup.targets.eventHubs.connectionString('records');
    // A TLS namespace as in production (not the emulator form): heartbeats go over its REST API, records over AMQP.
    env.NODE_EXTRA_CA_CERTS = setup.eventHubsCertPath;
  }
  return spawn(setup.pkg.bin, args, { stdio, env, cwd: dir });
}

function requestsOf(sim: RunningSimulator, vm: string, endpoint: 'scheduledevents' | 'instance') {
  return sim.admin.requests().log.filter((e) => e.vm === vm && e.endpoint === endpoint);
}

/** Spawn → first Scheduled Events GET received by the simulator (and → first instance-metadata GET), ms. */
async function measureStart(
  subject: Subject,
  setup: Setup,
  vm: string,
): Promise<{ firstGetMs: number; identityMs: number | null }> {
  const tmp = makeTempDir('sef-bench-start-');
  try {
    const spawnedAt = Date.now();
    const child = spawnSubject(subject, setup, vm, tmp.dir);
    try {
      const first = await waitFor(
        () => requestsOf(setup.sim, vm, 'scheduledevents')[0],
        `first GET of ${vm}`,
        {
          timeoutMs: 60_000,
        },
      );
      // The forwarder sends its first Scheduled Events GET before anything else, the identity request soon after.
      const identity =
        subject === 'poller'
          ? undefined
          : await waitFor(() => requestsOf(setup.sim, vm, 'instance')[0], `first identity GET of ${vm}`, {
              timeoutMs: 60_000,
            });
      return {
        firstGetMs: Date.parse(first.at) - spawnedAt,
        identityMs: identity === undefined ? null : Date.parse(identity.at) - spawnedAt,
      };
    } finally {
      await stopForwarder(child);
    }
  } finally {
    tmp.cleanup();
  }
}

interface Idle {
  subject: Subject;
  vm: string;
  child: ChildProcess;
  samples: ProcessSample[];
  /** Wall-clock ms of the first and last sample. */
  windowMs: [number, number];
}

interface IdleFigures {
  samples: number;
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  cpuMsPerPoll: number;
  polls: number;
  writtenKiBPerMinute: number;
}

function idleFigures(r: Idle, sim: RunningSimulator): IdleFigures {
  const first = r.samples[0] as ProcessSample;
  const last = r.samples[r.samples.length - 1] as ProcessSample;
  const [from, to] = r.windowMs;
  const polls = requestsOf(sim, r.vm, 'scheduledevents').filter((e) => {
    const at = Date.parse(e.at);
    return at > from && at <= to;
  }).length;
  const minutes = Math.max(1e-9, (last.t - first.t) / 60);
  const median = (pick: (s: ProcessSample) => number) => summarize(r.samples.map(pick)).p50;
  return {
    samples: r.samples.length,
    rssMiB: round(median((s) => s.rssKiB) / 1024, 1),
    anonMiB: round(median((s) => s.anonKiB) / 1024, 1),
    fileMiB: round(median((s) => s.fileKiB) / 1024, 1),
    cpuMsPerPoll: round(((last.cpuSeconds - first.cpuSeconds) * 1000) / Math.max(1, polls), 2),
    polls,
    writtenKiBPerMinute: round((last.writeBytes - first.writeBytes) / 1024 / minutes, 1),
  };
}

const ratio = (value: number, reference: number): number | null =>
  reference > 0 ? round(value / reference, 2) : null;
const verdict = (value: number | null, max: number): string =>
  value === null ? '–' : value <= max ? 'yes' : 'no';

export const footprint: Benchmark = {
  name: 'footprint',
  title:
    'Footprint: the installed package and the single executable beside a minimal poller (idle, 1 s polling)',
  method:
    'What ships: `npm pack` builds the tarball as `npm publish` would (the `prepare` script compiles dist/), ' +
    'the benchmark unpacks it into a temporary prefix as `npm install` does and runs its bin ' +
    '(`node_modules/.bin/scheduled-events-forwarder run --sink stdout` or `--config FILE`, `#!/usr/bin/env node` resolving to the same Node ' +
    "binary as the poller), with no node flags. Dependencies are linked from this repository's " +
    "node_modules (the lockfile's versions), so no registry is needed. Beside it, in the same run and on the " +
    'same Node binary, runs a minimal poller written in the benchmark (`node:http` GET every second, ' +
    "`JSON.parse`, nothing else). All poll the project's IMDS simulator on 127.0.0.1 (each as its own VM; " +
    'the document never changes). A fourth subject is the linux-x64 single executable of `npm run package` ' +
    '(release/bin/linux-x64, built when missing; its own Node.js inside, no node on its PATH) with ' +
    '`--sink stdout`, held to the same targets as the package bin with the stdout sink. ' +
    'Configurations: `--sink stdout` without a config file, and a config file ' +
    'with every sink type (stdout, file, exec, webhook, slack, teams, eventhubs → the Event Hubs double over TLS with a key connection string, otel → ' +
    'the OTLP receiver) configured but idle: nothing to deliver, so the only sends are the heartbeats of the Event ' +
    'Hubs sink (on by default; sent over the REST API with node:https, the AMQP SDK not loaded; ' +
    'SEF_BENCH_FOOTPRINT_EH_HEARTBEATS=false turns them off). Idle: the four processes run side by side; after a settling period ' +
    'one sample per second is read from /proc/<pid>: RSS total / anonymous / file-backed (VmRSS, RssAnon, ' +
    'RssFile of /proc/<pid>/status; medians), CPU time (utime+stime of /proc/<pid>/stat, clock ticks) divided ' +
    'by the polls the simulator logged in the window, and write_bytes of /proc/<pid>/io per minute (state ' +
    'directory and log file on the same disk). Start: spawn → the first Scheduled Events GET in the ' +
    "simulator's request log, fresh state directory each time, the four subjects started in turn in each " +
    'round; median over the rounds. Ratios are to the poller of the same run, so load from other work on the ' +
    'machine largely cancels out; absolute numbers move with the load. Page cache: file-backed RSS depends on ' +
    'how a binary came into the page cache (a file written in large writes is mapped in large folios: the ' +
    'same executable measured 37 or 60 MiB file-backed), so the benchmark runs the Node binary (poller and ' +
    'package bin) and the executable from copies made the same way and dropped from the page cache first, ' +
    'both read from disk as after a reboot.',
  async run(ctx: BenchContext): Promise<BenchOutput> {
    if (!canReadProcessUsage()) throw new Error('footprint needs /proc (Linux) to read RSS, CPU and I/O');
    const sampleCount = ctx.smoke ? 3 : Math.max(2, Math.round((ctx.durationMs ?? 60_000) / 1000));
    const settleMs = ctx.smoke ? 2000 : 15_000;
    const startRounds = ctx.smoke ? 1 : 10;
    const work = makeTempDir('sef-bench-footprint-');
    const running: Idle[] = [];
    const sim = await startSimulator({ timeScale: 1 });
    const eventHubsCert = generateTestCertificate(work.dir);
    const targets = await startTargets({ eventHubsTls: eventHubsCert });
    try {
      ctx.log('packing and installing the package');
      const pkg = installPackage(join(work.dir, 'prefix'), ctx.packageTarball);
      const pollerFile = join(work.dir, 'minimal-poller.mjs');
      writeFileSync(pollerFile, MINIMAL_POLLER);
      const binaries = coldCopies(work.dir, ensureExecutable(ctx));
      const executable = binaries.executable;
      const setup: Setup = {
        pkg,
        executable,
        pollerFile,
        node: binaries.node,
        targets,
        eventHubsCertPath: eventHubsCert.certPath,
        sim,
      };
      const SUBJECTS = ALL_SUBJECTS.filter((x) => x !== 'executable' || executable !== undefined);

      const starts: Record<Subject, Array<{ firstGetMs: number; identityMs: number | null }>> = {
        poller: [],
        stdout: [],
        'all-sinks': [],
        executable: [],
      };
      for (let round_ = 0; round_ < startRounds; round_++) {
        for (const subject of SUBJECTS) {
          starts[subject].push(await measureStart(subject, setup, `start-${subject}-${round_}`));
        }
        ctx.log(
          `start round ${round_ + 1}/${startRounds}: ${SUBJECTS.map((s) => `${s} ${starts[s].at(-1)?.firstGetMs} ms`).join(', ')}`,
        );
      }

      for (const subject of SUBJECTS) {
        const vm = `idle-${subject}`;
        const dir = join(work.dir, vm);
        mkdirSync(dir);
        running.push({
          subject,
          vm,
          child: spawnSubject(subject, setup, vm, dir),
          samples: [],
          windowMs: [0, 0],
        });
      }
      ctx.log(`idle: settling ${settleMs / 1000} s, then ${sampleCount} one-second samples`);
      await sleep(settleMs);
      const t0 = performance.now();
      for (let i = 0; i < sampleCount; i++) {
        if (i > 0) await sleep(Math.max(0, t0 + i * 1000 - performance.now()));
        const t = round((performance.now() - t0) / 1000, 3);
        for (const r of running) {
          if (r.child.exitCode !== null || r.child.signalCode !== null)
            throw new Error(`${r.subject} exited early (log in ${work.dir})`);
          r.samples.push({ t, ...readProcessUsage(r.child.pid as number) });
          if (i === 0) r.windowMs[0] = Date.now();
          r.windowMs[1] = Date.now();
        }
      }
      const idle = Object.fromEntries(running.map((r) => [r.subject, idleFigures(r, sim)])) as Record<
        Exclude<Subject, 'executable'>,
        IdleFigures
      > & { executable?: IdleFigures };
      const startP50 = Object.fromEntries(
        SUBJECTS.map((s) => [s, summarize(starts[s].map((x) => x.firstGetMs)).p50]),
      ) as Record<Subject, number>;
      const exe = idle.executable;

      const p = idle.poller;
      const t = FOOTPRINT_TARGETS;
      const ratios = {
        stdout: {
          rss: ratio(idle.stdout.rssMiB, p.rssMiB),
          anon: ratio(idle.stdout.anonMiB, p.anonMiB),
          file: ratio(idle.stdout.fileMiB, p.fileMiB),
          cpuPerPoll: ratio(idle.stdout.cpuMsPerPoll, p.cpuMsPerPoll),
          firstGet: ratio(startP50.stdout, startP50.poller),
        },
        'all-sinks': {
          rss: ratio(idle['all-sinks'].rssMiB, p.rssMiB),
          anon: ratio(idle['all-sinks'].anonMiB, p.anonMiB),
          file: ratio(idle['all-sinks'].fileMiB, p.fileMiB),
          cpuPerPoll: ratio(idle['all-sinks'].cpuMsPerPoll, p.cpuMsPerPoll),
          firstGet: ratio(startP50['all-sinks'], startP50.poller),
        },
        executable: {
          rss: exe === undefined ? null : ratio(exe.rssMiB, p.rssMiB),
          anon: exe === undefined ? null : ratio(exe.anonMiB, p.anonMiB),
          file: exe === undefined ? null : ratio(exe.fileMiB, p.fileMiB),
          cpuPerPoll: exe === undefined ? null : ratio(exe.cpuMsPerPoll, p.cpuMsPerPoll),
          firstGet: exe === undefined ? null : ratio(startP50.executable, startP50.poller),
        },
      };
      const s = ratios.stdout;
      const a = ratios['all-sinks'];
      const e = ratios.executable;
      const kib = (x: Subject) => idle[x]?.writtenKiBPerMinute ?? null;
      return {
        parameters: {
          pollIntervalMs: 1000,
          idleSamples: sampleCount,
          sampleEverySeconds: 1,
          settleSeconds: settleMs / 1000,
          startRounds,
          sinksAllConfig: ['stdout', ...SINK_KINDS],
          clockTicksPerSecond: clockTicksPerSecond(),
        },
        tables: [
          {
            title: `Idle at 1 s polling, side by side (medians of ${sampleCount} one-second samples) and start → first GET (median of ${startRounds})`,
            columns: [
              'process',
              'RSS (MiB)',
              'anon (MiB)',
              'file-backed (MiB)',
              'CPU per poll (ms)',
              'written (KiB/min)',
              'start → first GET (ms)',
            ],
            rows: SUBJECTS.map((x) => [
              LABEL[x],
              idle[x]!.rssMiB,
              idle[x]!.anonMiB,
              idle[x]!.fileMiB,
              idle[x]!.cpuMsPerPoll,
              kib(x),
              startP50[x],
            ]),
          },
          {
            title: 'Ratios to the minimal poller of the same run, against the targets',
            columns: ['figure', 'stdout sink', 'every sink type', 'single executable', 'target', 'met'],
            rows: [
              [
                'RSS total',
                s.rss,
                a.rss,
                e.rss,
                t.rssStdout === t.rssAllSinks
                  ? `≤ ${t.rssStdout}`
                  : `stdout and executable ≤ ${t.rssStdout}, every sink ≤ ${t.rssAllSinks}`,
                `${verdict(s.rss, t.rssStdout)} / ${verdict(a.rss, t.rssAllSinks)} / ${verdict(e.rss, t.rssStdout)}`,
              ],
              [
                'RSS anonymous',
                s.anon,
                a.anon,
                e.anon,
                t.anonStdout === t.anonAllSinks
                  ? `≤ ${t.anonStdout}`
                  : `stdout and executable ≤ ${t.anonStdout}, every sink ≤ ${t.anonAllSinks}`,
                `${verdict(s.anon, t.anonStdout)} / ${verdict(a.anon, t.anonAllSinks)} / ${verdict(e.anon, t.anonStdout)}`,
              ],
              ['RSS file-backed', s.file, a.file, e.file, '–', '–'],
              [
                'CPU per idle poll',
                s.cpuPerPoll,
                a.cpuPerPoll,
                e.cpuPerPoll,
                `≤ ${t.cpuPerPoll}`,
                `${verdict(s.cpuPerPoll, t.cpuPerPoll)} / ${verdict(a.cpuPerPoll, t.cpuPerPoll)} / ${verdict(e.cpuPerPoll, t.cpuPerPoll)}`,
              ],
              [
                'start → first GET',
                s.firstGet,
                a.firstGet,
                e.firstGet,
                `≤ ${t.firstGet}`,
                `${verdict(s.firstGet, t.firstGet)} / ${verdict(a.firstGet, t.firstGet)} / ${verdict(e.firstGet, t.firstGet)}`,
              ],
              [
                'written per minute (KiB, absolute)',
                kib('stdout'),
                kib('all-sinks'),
                exe === undefined ? null : kib('executable'),
                `≤ ${t.writtenKiBPerMinute}`,
                `${verdict(kib('stdout'), t.writtenKiBPerMinute)} / ${verdict(kib('all-sinks'), t.writtenKiBPerMinute)} / ${exe === undefined ? '–' : verdict(kib('executable'), t.writtenKiBPerMinute)}`,
              ],
            ],
          },
          {
            title: 'Start → first request (ms)',
            columns: ['process', 'starts', 'min', 'p50', 'max', 'p50 → first instance-metadata GET'],
            rows: SUBJECTS.map((x) => {
              const first = summarize(starts[x].map((v) => v.firstGetMs));
              const ids = starts[x].map((v) => v.identityMs).filter((v): v is number => v !== null);
              return [
                LABEL[x],
                first.count,
                first.min,
                first.p50,
                first.max,
                ids.length > 0 ? summarize(ids).p50 : null,
              ];
            }),
          },
        ],
        raw: {
          package: {
            origin: pkg.origin,
            tarball: pkg.tarball.split('/').at(-1),
            tarballSha256: pkg.tarballSha256,
            command: 'node_modules/.bin/scheduled-events-forwarder run … (no node flags)',
            executable: executable ?? 'not measured (smoke run without release/: npm run package)',
            nodeBinary: `${process.execPath} (run from a cold copy)`,
          },
          minimalPoller: MINIMAL_POLLER,
          idle,
          ratios,
          starts,
          samples: Object.fromEntries(running.map((r) => [r.subject, r.samples])),
        },
        notes: [
          'CPU time has clock-tick resolution (1/' +
            `${clockTicksPerSecond()} s): over ${sampleCount} polls that is ±${round(1000 / clockTicksPerSecond() / Math.max(1, idle.poller.polls), 2)} ms per poll.`,
          'Other work on the machine inflates absolute CPU and start times; the ratios compare processes that ran ' +
            'at the same time.',
        ],
      };
    } finally {
      for (const r of running) await stopForwarder(r.child);
      await targets.close();
      await sim.close();
      work.cleanup();
    }
  },
};

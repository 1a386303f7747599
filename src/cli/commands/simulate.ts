/**
 * `simulate`: runs the IMDS simulator (src/simulator) on 127.0.0.1. The first stdout line is JSON with its
 * URL; it runs until Ctrl-C / SIGTERM, or with --exit-at-end until the scenario ends.
 * `simulate fleet`: writes a synthetic fleet's lifecycle records and its forwarders' heartbeats
 * (src/simulator/fleet.ts) as JSON lines, in time order.
 */
import type { WriteStream } from 'node:fs';
import type { Command } from 'commander';
import { errorMessage, UsageError } from '../../errors.ts';
import type { LogLevel } from '../../log.ts';
import { shutdownSignals } from '../../platform.ts';
import type { FaultInput, InjectEventInput, Scenario } from '../../simulator/index.ts';

interface SimulateOptions {
  host: string;
  port: string;
  scenario?: string;
  vmName?: string;
  timeScale?: string;
  exitAtEnd?: boolean;
  exitGrace: string;
  fault?: string[];
  inject?: string[];
  availabilitySet?: string;
  initialIncarnation?: string;
  listScenarios?: boolean;
  logLevel: string;
}

/** Repeatable option without a default value (commander would print `(default: [])` in --help). */
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Default of --exit-grace: a forwarder polling once a second sees the final document several times. */
export const EXIT_GRACE_SECONDS = 5;

function numberOption(
  value: string | undefined,
  name: string,
  min: number,
  integer: boolean,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${value}"`);
  }
  return n;
}

const describe = errorMessage;

interface SimulateFleetOptions {
  vms: string;
  days: string;
  seed: string;
  start?: string;
  end?: string;
  out: string;
  heartbeatInterval: string;
  heartbeatDays: string;
}

const DAY_MS = 86_400_000;

/** An ISO 8601 time option (epoch ms), or a usage error naming it. */
function isoTimeOption(value: string, flag: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UsageError(`${flag} must be an ISO 8601 time (e.g. 2026-01-01T00:00:00Z), got "${value}"`);
  }
  return Date.parse(value);
}

/**
 * The window's start: --start as given, else --end (default: now, to the second) minus --days, so that the
 * dashboard's default view (the last 30 days) shows the generated fleet.
 */
export function fleetWindowStart(
  opts: { start?: string | undefined; end?: string | undefined },
  days: number,
  now: () => number = Date.now,
): string {
  if (opts.start !== undefined && opts.end !== undefined) {
    throw new UsageError('give --start or --end, not both (the window is --days long)');
  }
  if (opts.start !== undefined) return new Date(isoTimeOption(opts.start, '--start')).toISOString();
  const endMs = opts.end === undefined ? Math.floor(now() / 1000) * 1000 : isoTimeOption(opts.end, '--end');
  return new Date(endMs - Math.round(days * DAY_MS)).toISOString();
}

/** Writes `text` to `stream`, waiting for 'drain' when its buffer is full. */
async function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => {
      stream.off('drain', onDrain);
      reject(error);
    };
    const onDrain = () => {
      stream.off('error', onError);
      resolve();
    };
    stream.once('drain', onDrain);
    stream.once('error', onError);
  });
}

/** `simulate fleet`: the records as JSON lines on --out (or stdout), a one-line JSON summary on stderr. */
async function simulateFleet(opts: SimulateFleetOptions): Promise<void> {
  const vms = numberOption(opts.vms, '--vms', 1, true) as number;
  const days = numberOption(opts.days, '--days', 0, false) as number;
  if (days <= 0) throw new UsageError(`--days must be a number > 0, got "${opts.days}"`);
  const seed = numberOption(opts.seed, '--seed', 0, true) as number;
  if (seed > 0xffffffff) throw new UsageError(`--seed must be <= ${0xffffffff}, got "${opts.seed}"`);
  const heartbeatIntervalSeconds = numberOption(
    opts.heartbeatInterval,
    '--heartbeat-interval',
    0,
    true,
  ) as number;
  const heartbeatDays = numberOption(opts.heartbeatDays, '--heartbeat-days', 0, false) as number;
  const start = fleetWindowStart(opts, days);
  if (opts.out === '') throw new UsageError('--out must be a file path or - (stdout)');
  const { generateFleet } = await import('../../simulator/fleet.ts');
  let fleet: ReturnType<typeof generateFleet>;
  try {
    fleet = generateFleet({ vms, days, seed, start, heartbeatIntervalSeconds, heartbeatDays });
  } catch (error) {
    throw new UsageError(describe(error));
  }
  let out: NodeJS.WritableStream = process.stdout;
  let file: WriteStream | undefined;
  if (opts.out !== '-') {
    const { createWriteStream } = process.getBuiltinModule('node:fs');
    file = createWriteStream(opts.out);
    await new Promise<void>((resolve, reject) => {
      file?.once('open', () => resolve());
      file?.once('error', (error) => reject(new UsageError(`--out ${opts.out}: ${describe(error)}`)));
    });
    out = file;
  }
  let failure: Error | undefined;
  out.on('error', (error: Error) => {
    failure ??= error;
  });
  const failed = () =>
    failure === undefined
      ? undefined
      : new Error(`writing ${opts.out === '-' ? 'stdout' : opts.out}: ${describe(failure)}`);
  let chunk = '';
  let written = 0;
  for (const record of fleet.events()) {
    chunk += `${JSON.stringify(record)}\n`;
    written++;
    if (chunk.length >= 1 << 20) {
      await write(out, chunk);
      chunk = '';
      const error = failed();
      if (error) throw error;
    }
  }
  if (chunk !== '') await write(out, chunk);
  if (file !== undefined) {
    const stream = file;
    await new Promise<void>((resolve, reject) => {
      stream.once('error', reject);
      stream.end(() => resolve());
    });
  }
  const error = failed();
  if (error) throw error;
  const { truth } = fleet;
  process.stderr.write(
    `${JSON.stringify({
      maintenanceEvents: truth.maintenanceEvents,
      records: written - fleet.heartbeatTruth.heartbeats,
      heartbeats: fleet.heartbeatTruth.heartbeats,
      silentForwarders: fleet.heartbeatTruth.stopped.length,
      unhealthyForwarders: fleet.heartbeatTruth.sick.length,
      vms: fleet.vms.length,
      affectedVmEvents: truth.counts.affectedVmEvents,
      start: fleet.window.start,
      end: fleet.window.end,
      seed,
    })}\n`,
  );
}

export function register(program: Command): void {
  const simulate = program
    .command('simulate')
    .description(
      'Run a local IMDS simulator (Scheduled Events, instance metadata, managed identity tokens) for tests ' +
        'and drills. Prints {"url": ...} as the first line; admin API under <url>/admin.',
    )
    .option('--host <host>', 'interface to bind (keep it on loopback)', '127.0.0.1')
    .option('--port <port>', 'port (0 = any free port)', '0')
    .option('--scenario <file-or-name>', 'scenario YAML file or bundled name (see --list-scenarios)')
    .option('--vm-name <name>', 'name of the VM served at the root paths')
    .option('--time-scale <x>', "simulated seconds per real second (default: the scenario's, else 1)")
    .option('--exit-at-end', 'exit when the scenario ends (after --exit-grace)')
    .option(
      '--exit-grace <seconds>',
      'with --exit-at-end: keep serving the final document this many real seconds after the scenario ended, so ' +
        'a forwarder polling it sees the last change',
      String(EXIT_GRACE_SECONDS),
    )
    .option(
      '--fault <spec>',
      'fault from the start, JSON or kind[:name=value,...], e.g. status:status=503,count=2 (repeatable)',
      collect,
    )
    .option(
      '--inject <json>',
      'event to inject at start, e.g. \'{"type":"Freeze","noticeSeconds":60}\' (repeatable)',
      collect,
    )
    .option('--availability-set <name>', 'availability set of VMs registered without one')
    .option('--initial-incarnation <n>', 'DocumentIncarnation of new VMs')
    .option('--list-scenarios', 'print the bundled scenarios as JSON lines and exit')
    .option('--log-level <level>', 'log level (logs go to stderr)', 'info')
    .action(async (opts: SimulateOptions) => {
      const [{ listScenarios, loadScenario, parseFaultSpec, startSimulator }, { createLogger }] =
        await Promise.all([import('../../simulator/index.ts'), import('../../log.ts')]);
      if (opts.listScenarios) {
        for (const s of listScenarios()) process.stdout.write(`${JSON.stringify(s)}\n`);
        return;
      }
      const port = numberOption(opts.port, '--port', 0, true);
      if (port !== undefined && port > 65535) throw new UsageError(`--port must be <= 65535, got ${port}`);
      const timeScale = numberOption(opts.timeScale, '--time-scale', 0, false);
      const initialIncarnation = numberOption(opts.initialIncarnation, '--initial-incarnation', 0, true);
      const exitGraceMs =
        (numberOption(opts.exitGrace, '--exit-grace', 0, false) ?? EXIT_GRACE_SECONDS) * 1000;
      if (opts.exitAtEnd && !opts.scenario) throw new UsageError('--exit-at-end needs --scenario');
      let scenario: Scenario | undefined;
      if (opts.scenario) {
        try {
          scenario = loadScenario(opts.scenario);
        } catch (error) {
          throw new UsageError(describe(error));
        }
      }
      const faults: FaultInput[] = (opts.fault ?? []).map((spec) => {
        try {
          return parseFaultSpec(spec);
        } catch (error) {
          throw new UsageError(`--fault "${spec}": ${describe(error)}`);
        }
      });
      const injects: InjectEventInput[] = (opts.inject ?? []).map((text) => {
        try {
          return JSON.parse(text) as InjectEventInput;
        } catch (error) {
          throw new UsageError(`--inject "${text}" is not JSON: ${describe(error)}`);
        }
      });
      const logger = createLogger({ level: opts.logLevel as LogLevel });
      const sim = await startSimulator({
        host: opts.host,
        ...(port !== undefined ? { port } : {}),
        ...(opts.vmName ? { vmName: opts.vmName } : {}),
        ...(scenario ? { scenario } : {}),
        ...(timeScale !== undefined ? { timeScale } : {}),
        ...(opts.availabilitySet ? { availabilitySet: opts.availabilitySet } : {}),
        ...(initialIncarnation !== undefined ? { initialIncarnation } : {}),
        faults,
        logger,
      });
      try {
        for (const event of injects) sim.admin.injectEvent(event);
      } catch (error) {
        await sim.close();
        throw new UsageError(`--inject: ${describe(error)}`);
      }
      const primary = sim.admin.vms()[0]?.identity.name;
      process.stdout.write(
        `${JSON.stringify({ url: sim.url, admin: `${sim.url}/admin`, vm: primary, scenario: scenario?.name ?? null })}\n`,
      );

      const reason = await new Promise<string>((resolve) => {
        for (const signal of shutdownSignals()) process.once(signal, () => resolve(signal));
        if (opts.exitAtEnd) {
          void sim.admin.scenarioEnded().then(() => {
            logger.info(
              { graceSeconds: exitGraceMs / 1000 },
              'scenario ended: serving the final document until the exit grace (--exit-grace) has passed',
            );
            setTimeout(() => resolve('scenario-ended'), exitGraceMs).unref(); // the server keeps the process up
          });
        }
      });
      const approvals = sim.admin.approvals();
      await sim.close();
      process.stdout.write(`${JSON.stringify({ stopped: reason, approvals })}\n`);
    });
  simulate
    .command('fleet')
    .description(
      "Write a synthetic fleet's lifecycle records and heartbeats as JSON lines, one CloudEvent per line like the file sink, in " +
        'time order, for a window ending now (the same records for a seed and a fixed --start or --end); prints a ' +
        'one-line JSON summary on stderr. See docs/simulator.md.',
    )
    .option('--vms <n>', 'VMs in the fleet', '10000')
    .option('--days <d>', 'length of the window in days', '90')
    .option('--seed <s>', 'PRNG seed (integer)', '1')
    .option('--end <iso>', 'end of the window (ISO 8601; default: now)')
    .option(
      '--start <iso>',
      'start of the window instead (ISO 8601; the window is then [start, start + days))',
    )
    .option('--out <file>', 'output file, - for stdout', '-')
    .option(
      '--heartbeat-interval <seconds>',
      "every forwarder's heartbeat interval (some forwarders stop, some report problems); 0: no heartbeats",
      '3600',
    )
    .option(
      '--heartbeat-days <d>',
      'heartbeats over the last this many days of the window only (0: the whole window; 24 lines per VM per day)',
      '3',
    )
    .action(async (opts: SimulateFleetOptions) => simulateFleet(opts));
}

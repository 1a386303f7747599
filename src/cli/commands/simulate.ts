/**
 * `simulate`: runs the IMDS simulator (src/simulator) on 127.0.0.1. The first stdout line is JSON with its
 * URL; it runs until Ctrl-C / SIGTERM, or with --exit-at-end until the scenario ends.
 */
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

export function register(program: Command): void {
  program
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
}

/**
 * `demo`: a self-contained tour. Starts the IMDS simulator on 127.0.0.1 with config/demo.scenario.yaml
 * (time-scaled: about 12 s), runs the forwarder against it with the stdout sink in a temporary state
 * directory, prints every lifecycle record (one JSON per line), and stops cleanly when the scenario is over
 * and every record is printed — or on Ctrl-C.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { sleep, systemClock } from '../../clock.ts';
import { errorMessage, UsageError } from '../../errors.ts';
import type { LogLevel } from '../../log.ts';
import { handleShutdownSignals } from './run.ts';

const { mkdtempSync, rmSync } = process.getBuiltinModule('node:fs');

/** The bundled demo scenario. */
export const DEMO_SCENARIO = join(import.meta.dirname, '..', '..', '..', 'config', 'demo.scenario.yaml');

export interface DemoOptions {
  scenario?: string;
  timeScale?: string;
  pollInterval?: string;
  logLevel?: string;
}

export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'Start the IMDS simulator with a short scenario and run the forwarder against it, printing every record.',
    )
    // No path as the shown default: in the release executable the demo scenario is embedded, not a file.
    .option(
      '--scenario <file-or-name>',
      'scenario YAML file or bundled simulator scenario name (default: the built-in demo scenario; ' +
        '`simulate --list-scenarios` lists the others)',
    )
    .option('--time-scale <x>', "simulated seconds per real second (default: the scenario's)")
    .option('--poll-interval <ms>', 'poll interval in milliseconds', '200')
    .option('--log-level <level>', 'forwarder log level (logs go to stderr)', 'warn')
    .action(async (opts: DemoOptions) => {
      process.exitCode = await runDemo(opts);
    });
}

/** Runs the demo; resolves with the exit code. */
export async function runDemo(opts: DemoOptions): Promise<number> {
  const [{ loadConfigForCli }, { createLogger }, { Forwarder }, { loadScenario, startSimulator }] =
    await Promise.all([
      import('../../config/index.ts'),
      import('../../log.ts'),
      import('../../pipeline/index.ts'),
      import('../../simulator/index.ts'),
    ]);
  let scenario: ReturnType<typeof loadScenario>;
  try {
    scenario = loadScenario(opts.scenario ?? DEMO_SCENARIO);
  } catch (error) {
    // A scenario that is not found or not valid is a usage error (exit code 2), as for `simulate`.
    throw new UsageError(errorMessage(error));
  }
  const stateDir = mkdtempSync(join(tmpdir(), 'sef-demo-'));
  const timeScale = opts.timeScale === undefined ? undefined : Number(opts.timeScale);
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    scenario,
    ...(timeScale === undefined ? {} : { timeScale }),
  });
  try {
    const config = loadConfigForCli({
      imdsEndpoint: simulator.url,
      pollInterval: opts.pollInterval ?? '200',
      stateDir,
      sink: ['stdout'],
      logLevel: opts.logLevel ?? 'warn',
    });
    const logger = createLogger({ level: config.log.level as LogLevel });
    process.stderr.write(
      `demo: IMDS simulator at ${simulator.url}; forwarder state in ${stateDir}; records follow on stdout ` +
        '(Ctrl-C to stop)\n',
    );
    const forwarder = new Forwarder({ config, logger });
    const controller = new AbortController();
    const finish = async () => {
      await simulator.admin.scenarioEnded();
      // Let the forwarder see the final document, then wait until every record is printed.
      const seen = forwarder.stats.outcomes;
      while (!controller.signal.aborted) {
        const pending = forwarder.store?.stats().reduce((n, q) => n + q.pending, 0) ?? 0;
        if (forwarder.stats.outcomes >= seen + 2 && pending === 0) break;
        await sleep(systemClock, config.imds.pollIntervalMs, controller.signal);
      }
      process.stderr.write('demo: scenario finished\n');
      controller.abort();
    };
    void finish();
    const stats = await handleShutdownSignals(logger, controller, () => forwarder.run(controller.signal));
    process.stderr.write(`demo: ${stats.records} record(s) from ${stats.outcomes} poll(s)\n`);
    return 0;
  } finally {
    await simulator.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

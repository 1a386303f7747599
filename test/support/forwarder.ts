/**
 * The forwarder against the IMDS simulator, in-process or as the CLI: the `run` arguments (poll every 200 ms, a
 * state directory, records to a file sink), the same configuration built the CLI's way, and a running
 * in-process Forwarder with its AbortController.
 */
import { type Config, loadConfigForCli } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import { Forwarder, type ForwarderOptions, type ForwarderStats } from '../../src/pipeline/forwarder.ts';

export interface SimulatorRun {
  /** The simulator's URL (RunningSimulator.url). */
  imdsEndpoint: string;
  stateDir: string;
  /** A file sink's path (JSONL); undefined: no --sink (the caller adds its own). */
  out?: string | undefined;
  /** Default 200. */
  pollIntervalMs?: number;
}

/** `run --imds-endpoint URL --poll-interval 200 --state-dir DIR [--sink file:OUT]`. */
export function runArgs(run: SimulatorRun): string[] {
  return [
    'run',
    '--imds-endpoint',
    run.imdsEndpoint,
    '--poll-interval',
    String(run.pollIntervalMs ?? 200),
    '--state-dir',
    run.stateDir,
    ...(run.out === undefined ? [] : ['--sink', `file:${run.out}`]),
  ];
}

/** The configuration `run` builds from runArgs(run). */
export function simulatorConfig(run: SimulatorRun): Config {
  return loadConfigForCli({
    imdsEndpoint: run.imdsEndpoint,
    pollInterval: run.pollIntervalMs ?? 200,
    stateDir: run.stateDir,
    sink: run.out === undefined ? [] : [`file:${run.out}`],
  });
}

export interface RunningForwarder {
  forwarder: Forwarder;
  /** forwarder.run(): settles once stopped. */
  running: Promise<ForwarderStats>;
  controller: AbortController;
  /** Aborts the run and waits for it to finish. */
  stop(): Promise<ForwarderStats>;
}

/** Starts a Forwarder (silent logger unless given) and returns it running. */
export function startForwarder(
  options: Omit<ForwarderOptions, 'logger'> & Partial<Pick<ForwarderOptions, 'logger'>>,
): RunningForwarder {
  const forwarder = new Forwarder({ logger: silentLogger(), ...options });
  const controller = new AbortController();
  const running = forwarder.run(controller.signal);
  return {
    forwarder,
    running,
    controller,
    stop: () => {
      controller.abort();
      return running;
    },
  };
}

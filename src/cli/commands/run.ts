/**
 * `run`: the forwarder. Options override the config file (--config); without a file and without --sink,
 * records go to stdout. SIGTERM/SIGINT (SIGINT/SIGBREAK on Windows) stop it gracefully: polling stops,
 * in-flight deliveries get shutdownDeadlineMs, the store is closed, exit code 0. A second signal exits at
 * once (everything is committed; nothing is lost). SIGHUP (not on Windows) reloads the configuration: the file
 * and the same options are read and validated again and the changes applied live (src/pipeline/reload.ts).
 */
import type { Command } from 'commander';
import type { CliConfigOptions, Config } from '../../config/index.ts';
import type { PeriodicSendEvent } from '../../delivery/periodic.ts';
import type { Logger } from '../../log.ts';
import type { Forwarder } from '../../pipeline/index.ts';
import { shutdownSignals } from '../../platform.ts';
import { redactedMessage } from '../../redact.ts';

/** Repeatable option without a default value (commander would print `(default: [])` in --help). */
const append = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

import { endStartup } from '../heap.ts';
import { ReloadRequests } from '../reload-signal.ts';

/** How `run` reloads: the requests (SIGHUP) and what reads the configuration again. */
export interface ReloadOptions {
  requests: ReloadRequests;
  load: () => Promise<Config>;
}

/** Adds the options shared by commands that load the configuration like `run` does. */
export function addRunOptions(command: Command): Command {
  return command
    .option('--config <file>', 'YAML config file (options below override it)')
    .option('--imds-endpoint <url>', 'IMDS base URL (default http://169.254.169.254)')
    .option('--api-version <version>', 'Scheduled Events api-version (default 2020-07-01)')
    .option('--poll-interval <ms>', 'poll interval in milliseconds, at least 200 (default 1000)')
    .option('--state-dir <dir>', 'state directory for the SQLite outbox')
    .option('--allow-temporary-disk', 'allow the state directory on the Azure temporary disk')
    .option(
      '--sink <spec>',
      'sink: "stdout" or "file:PATH" (repeatable; replaces the config file sinks; default without --config: stdout)',
      append,
    )
    .option('--log-level <level>', 'fatal | error | warn | info | debug | trace | silent')
    .option('--record <file>', 'append every distinct Scheduled Events document to this capture (JSON lines)')
    .option('--replay <file>', 'replay a capture instead of polling IMDS')
    .option('--replay-speed <factor>', 'replay speed factor (0 = as fast as possible)');
}

/** Loads the config for `run`: without a config file and without --sink, the stdout sink is used. */
export async function runConfig(opts: CliConfigOptions): Promise<Config> {
  const { loadConfigForCli } = await import('../../config/index.ts');
  const sink = opts.sink ?? [];
  return loadConfigForCli({
    ...opts,
    sink: sink.length === 0 && opts.config === undefined ? ['stdout'] : sink,
  });
}

/**
 * Runs the forwarder until a shutdown signal (or the end of a replay). Returns the process exit code.
 * Exported for `demo`, which runs it in-process against the simulator.
 */
export async function runForwarder(
  config: Config,
  logger: Logger,
  options: { signal?: AbortSignal; reload?: ReloadOptions } = {},
): Promise<number> {
  const [{ StoreOpenError }, { assertStartable }] = await Promise.all([
    import('../../store/index.ts'),
    import('../../pipeline/start-checks.ts'),
  ]);
  // What `config validate` refuses too (one function), before anything starts: exit code 2 naming every problem.
  await assertStartable(config);
  // A reload reads the file again and makes the same checks: what a restart would refuse, a reload refuses.
  const given = options.reload;
  const reload: ReloadOptions | undefined =
    given === undefined
      ? undefined
      : {
          requests: given.requests,
          load: async () => {
            const next = await given.load();
            await assertStartable(next);
            return next;
          },
        };
  const controller = new AbortController();
  options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  try {
    await handleShutdownSignals(logger, controller, () =>
      runWithTelemetry(config, logger, controller.signal, reload),
    );
    return 0;
  } catch (error) {
    if (error instanceof StoreOpenError) {
      // One line, like every other fatal error of the CLI (src/cli/main.ts): not a log line beside it.
      process.stderr.write(`error: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/**
 * Runs the forwarder, with the /healthz /readyz /metrics listener when telemetry.listen.enabled (the pipeline
 * reports through a PipelineObserver; see src/telemetry/observer.ts) and with heartbeats to the sinks that take
 * them (src/telemetry/heartbeat.ts), which read the same health tracker /readyz does. Without either, no
 * telemetry module is loaded at all.
 */
async function runWithTelemetry(
  config: Config,
  logger: Logger,
  signal: AbortSignal,
  reload: ReloadOptions | undefined,
): Promise<void> {
  const { Forwarder } = await import('../../pipeline/index.ts');
  const startedAtMs = Date.now();
  const listen = config.telemetry.listen.enabled;
  const heartbeats = config.sinks.some((s) => s.enabled && s.heartbeats);
  // Start-up ends when the pipeline is ready: optimizing compilers back on (../heap.ts).
  if (!listen && !heartbeats) {
    const forwarder = new Forwarder({ config, logger, observer: { ready: endStartup } });
    await handleReloadSignal(logger, forwarder, reload, () => forwarder.run(signal));
    return;
  }
  // Only what is used is loaded: the metrics (prom-client) with the listener, the health tracker for either.
  const [health, heartbeat, { readVersion }] = await Promise.all([
    import('../../telemetry/health.ts'),
    import('../../telemetry/heartbeat.ts'),
    import('../../version.ts'),
  ]);
  let forwarder: Forwarder | undefined;
  const tracker = new health.HealthTracker({
    sinks: [], // poll interval: the built source's (PipelineObserver.sourceBuilt)
    staleAfterPolls: config.telemetry.readyPollIntervals,
    sinkReadiness: config.telemetry.readiness.sinks,
    outboxStats: () => forwarder?.store?.stats(), // /readyz: pending and oldestPendingAgeSeconds per sink
  });
  // Each sink's heartbeat sequence, kept across the rebuilds of a reload (which may also add or remove the sinks
  // that receive heartbeats: the sends are built from each configuration the pipeline runs).
  const sequences = new Map<string, number>();
  const version = readVersion();
  const periodicSends = (parts: Parameters<typeof heartbeat.heartbeatSends>[1]) =>
    heartbeat.heartbeatSends({ health: () => tracker.snapshot(), version, startedAtMs, sequences }, parts);
  const startup = startupEnd(heartbeat.heartbeatSinkNames(config));
  if (!listen) {
    const observer = health.healthObserver(tracker);
    forwarder = new Forwarder({
      config,
      logger,
      periodicSends,
      observer: {
        ...observer,
        ready: (info) => {
          startup.ready();
          observer.ready?.(info);
        },
        periodic: (event) => {
          startup.periodic(event);
          observer.periodic?.(event);
        },
      },
    });
    const running = forwarder;
    await handleReloadSignal(logger, running, reload, () => running.run(signal));
    return;
  }
  const telemetry = await import('../../telemetry/index.ts');
  // Every per-sink series exists from the first scrape, at 0 (docs/observability.md).
  const metrics = telemetry.createMetrics({
    sinks: config.sinks.filter((s) => s.enabled).map((s) => s.name),
  });
  telemetry.addPeriodicSends(
    metrics,
    heartbeat.heartbeatSinkNames(config).map((sink) => ({ kind: 'heartbeat', sink })),
  );
  const observer = telemetry.createTelemetryObserver({ metrics, health: tracker });
  const ready: typeof observer.ready = (info) => {
    startup.ready();
    observer.ready?.(info);
  };
  const periodic: typeof observer.periodic = (event) => {
    startup.periodic(event);
    observer.periodic?.(event);
  };
  forwarder = new Forwarder({ config, logger, periodicSends, observer: { ...observer, ready, periodic } });
  const running = forwarder;
  telemetry.bindOutboxStats(metrics, () => running.store?.stats() ?? []);
  const server = await telemetry.startTelemetryServer({
    host: config.telemetry.listen.host,
    port: config.telemetry.listen.port,
    metrics,
    health: () => tracker.snapshot(),
  });
  logger.info({ listen: server.url }, 'telemetry listening (/healthz, /readyz, /metrics)');
  try {
    await handleReloadSignal(logger, running, reload, () => running.run(signal));
  } finally {
    await server.close();
  }
}

/** The longest start-up waits, once the pipeline is ready, for the start heartbeats (startupEnd). */
export const STARTUP_SENDS_WAIT_MS = 10_000;

/**
 * When start-up ends (endStartup, ../heap.ts: the optimizing compilers back on, the one memory-reducing
 * collection): when the pipeline is ready and the start heartbeat of every sink that takes heartbeats was sent
 * or failed, or STARTUP_SENDS_WAIT_MS after ready, whichever comes first; `end` runs once. Sending the first heartbeat loads the
 * sink's client (for Event Hubs, the SDK and its AMQP connection); loaded after start-up had ended, it grew the
 * young generation and was compiled by the optimizing tiers, and all of it stayed resident: 23-24 MiB more RSS
 * on an idle forwarder with every sink type (the footprint benchmark, docs/performance.md).
 */
export function startupEnd(
  heartbeatSinks: readonly string[],
  end: () => void = endStartup,
): {
  ready(): void;
  periodic(event: PeriodicSendEvent): void;
} {
  const waiting = new Set(heartbeatSinks);
  let ready = false;
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  const endOnce = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    end();
  };
  return {
    ready() {
      ready = true;
      if (waiting.size === 0) return endOnce();
      timer = setTimeout(endOnce, STARTUP_SENDS_WAIT_MS);
      timer.unref();
    },
    periodic(event) {
      if (event.kind !== 'heartbeat' || event.trigger !== 'start') return;
      waiting.delete(event.sink);
      if (ready && waiting.size === 0) endOnce();
    },
  };
}

/**
 * Runs `fn` with the reload requests (`run`'s SIGHUP, taken since the command began: ../reload-signal.ts) handed
 * to `forwarder.reload(load)`. The outcome is logged by the reload itself.
 */
export async function handleReloadSignal<T>(
  logger: Logger,
  forwarder: Pick<Forwarder, 'reload'>,
  reload: ReloadOptions | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  if (reload === undefined) return fn();
  const { requests, load } = reload;
  requests.attach(() => {
    logger.info({ signal: requests.signal }, 'reloading the configuration');
    forwarder.reload(load).catch((error: unknown) => {
      logger.error({ err: redactedMessage(error) }, 'configuration reload failed');
    });
  });
  try {
    return await fn();
  } finally {
    requests.end(logger);
  }
}

/**
 * Runs `fn` with the platform's shutdown signals wired to `controller.abort()`. A second signal exits at once
 * (everything committed stays in the outbox).
 */
export async function handleShutdownSignals<T>(
  logger: Logger,
  controller: AbortController,
  fn: () => Promise<T>,
): Promise<T> {
  const signals = shutdownSignals();
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      logger.info({ signal }, 'shutting down (send the signal again to exit at once)');
      controller.abort();
    } else {
      logger.warn({ signal }, 'second signal: exiting now (everything committed stays in the outbox)');
      process.exit(1);
    }
  };
  for (const s of signals) process.on(s, onSignal);
  try {
    return await fn();
  } finally {
    for (const s of signals) process.off(s, onSignal);
  }
}

export function register(program: Command): void {
  addRunOptions(
    program
      .command('run')
      .description(
        'Poll Scheduled Events, commit every change as a CloudEvents lifecycle record and deliver it to the sinks.',
      ),
  ).action(async (opts: CliConfigOptions) => {
    // SIGHUP is taken before anything loads: one that comes while `run` starts is applied once it runs.
    const requests = new ReloadRequests();
    const config = await runConfig(opts);
    const { createLogger } = await import('../../log.ts');
    const logger = createLogger({ level: config.log.level });
    const code = await runForwarder(config, logger, { reload: { requests, load: () => runConfig(opts) } });
    process.exitCode = code;
    exitOnceStopped(logger, code);
  });
}

/** How long a stopped forwarder waits for lingering handles to close before it exits anyway. */
export const EXIT_GRACE_MS = 1000;

/**
 * The forwarder has stopped: everything is committed and every sink was closed (or abandoned after its close
 * deadline). A client that did not close in time (e.g. an SDK reconnecting to a service that dropped the
 * connection) can still hold the event loop open; a service manager's stop must never hang on it, so exit
 * after a short grace. The timer is unref'd: when nothing lingers, the process ends by itself at once.
 */
export function exitOnceStopped(logger: Logger, code: number): void {
  setTimeout(() => {
    logger.warn({ graceMs: EXIT_GRACE_MS }, 'handles still open after the forwarder stopped; exiting now');
    process.exit(code);
  }, EXIT_GRACE_MS).unref();
}

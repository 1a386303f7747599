/**
 * The `run` loop: composition and lifecycle. Opens the store (last committed state, or the initial one), builds
 * the source from the source registry (src/pipeline/compose.ts) with its identity and approval client, starts
 * the stall detector, the identity, approval and the source, then builds the sinks from the config and starts
 * the delivery engine. Each poll outcome goes through the per-outcome step (src/pipeline/step.ts: outcome →
 * transform → route → commit → notify), whose state may run ahead of the committed one
 * (src/pipeline/durability.ts). Shutdown (abort the signal): stop the source, commit what is only in memory,
 * give in-flight deliveries `shutdownDeadlineMs`, close the store.
 *
 * First poll first: the source starts right after the store is open, and the sinks are built (their SDKs
 * loaded) once the first poll was answered, or after the source's first-outcome wait (one poll interval for
 * IMDS) if it is slow; the delivery engine starts when they are ready and delivers whatever was committed
 * meanwhile. The first identity request (instance metadata) runs concurrently with the first poll. The first
 * outcome is handled (and approval started) once that identity request has settled, so the first records still
 * carry the identity whenever IMDS answers it (it is part of every record id); a failed identity request is
 * retried on later polls. With `kubernetes.labels`, the first read of the node's labels (src/kubernetes) is
 * waited for the same way (bounded), so the first records carry them too.
 */
import type { Config, SinkConfig } from '../config/index.ts';
import { configWarnings } from '../config/warnings.ts';
import { DeliveryEngine } from '../delivery/index.ts';
import { errorMessage } from '../errors.ts';
import type { KubernetesAgent } from '../kubernetes/index.ts';
import type { Logger } from '../log.ts';
import { findSinkFactory } from '../sinks/registry.ts';
import type { Sink, SinkFactory } from '../sinks/types.ts';
import { StallDetector } from '../sources/stall-detector.ts';
import type { BuiltSource, IdentitySource, Source } from '../sources/types.ts';
import { openStoreWhenPossible, type Store, storeDamage } from '../store/index.ts';
import type { ForwarderState } from '../transform/index.ts';
import { alertRefreshSends } from './alert-refresh.ts';
import { hostBootTimeMs } from './boot-time.ts';
import {
  buildApproval,
  buildKubernetes,
  buildSource,
  createSink,
  engineSink,
  givenSource,
  loadState,
  warnAboutOrphanedQueues,
} from './compose.ts';
import type { PipelineObserver } from './observer.ts';
import type { ApprovalParticipant } from './participants.ts';
import {
  collectPeriodicSends,
  createPeriodicSender,
  type PeriodicParts,
  type PeriodicSendsFactory,
  startPeriodicSender,
} from './periodic-sends.ts';
import { type PeriodicSends, Reloader } from './reload.ts';
import type { ReloadReport } from './reload-plan.ts';
import type { RoutedSink } from './route.ts';
import { RunningPipeline } from './running.ts';
import { type ForwarderStats, PipelineStep } from './step.ts';

export type { IdentitySource } from '../sources/types.ts';
export type { ForwarderStats } from './step.ts';

export interface ForwarderOptions {
  config: Config;
  logger: Logger;
  /** Overrides the source built from config (tests). */
  source?: Source;
  /** Overrides the identity built with the source (tests). */
  identity?: IdentitySource;
  /** Host boot time, epoch ms. Default: hostBootTimeMs() (honours the test-only SEF_TEST_BOOT_TIME_MS). */
  bootTimeMs?: number;
  /** Sink factories (default: the registry). */
  findFactory?: (type: string) => SinkFactory | undefined;
  /** Test hook: PRAGMA max_page_count on the store (forces SQLITE_FULL). */
  maxPageCount?: number;
  observer?: PipelineObserver;
  /** When a finite source (replay) ends: wait until every sink's queue is empty before stopping. Default true. */
  drainWhenSourceEnds?: boolean;
  /** Observation checkpoint interval while an event is tracked (default OBSERVATION_CHECKPOINT_MS; tests). */
  observationCheckpointMs?: number;
  /** Transitions kept in memory while commits fail (default MAX_WAITING_RECORDS; tests). */
  maxWaitingRecords?: number;
  /**
   * Periodic sends outside the outbox besides the pipeline's own: the heartbeats (src/telemetry/heartbeat.ts,
   * wired by the CLI), built once the sinks are (src/pipeline/periodic-sends.ts).
   */
  periodicSends?: PeriodicSendsFactory;
}

/** The running forwarder; see the module comment. */
export class Forwarder {
  readonly stats: ForwarderStats = {
    outcomes: 0,
    failures: 0,
    commits: 0,
    commitFailures: 0,
    records: 0,
    unchangedPolls: 0,
  };
  readonly #options: ForwarderOptions;
  readonly #logger: Logger;
  #store: Store | undefined;
  #engine: DeliveryEngine | undefined;
  #step: PipelineStep | undefined;
  /** Resolves once the pipeline runs (undefined when it stopped before): reloads wait for it. */
  readonly #reloader = Promise.withResolvers<Reloader | undefined>();
  /** The configuration in effect: the start-up one, then what reloads applied. */
  #config: Config;

  constructor(options: ForwarderOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.#config = options.config;
  }

  /** The store while running (tests and telemetry). */
  get store(): Store | undefined {
    return this.#store;
  }

  /** The delivery engine while running (its events reach the observer's delivery callback). */
  get engine(): DeliveryEngine | undefined {
    return this.#engine;
  }

  /**
   * Reloads the configuration with `load` (which reads and validates it again; see src/pipeline/reload.ts). A
   * request made while the forwarder starts is applied once it runs. Resolves with what was done, or undefined
   * when the forwarder stopped first.
   */
  async reload(load: () => Promise<Config>): Promise<ReloadReport | undefined> {
    const reloader = await this.#reloader.promise;
    return reloader?.request(load);
  }

  /**
   * Runs until `signal` aborts (or a finite source ends and the queues drain). Throws on startup failure. The
   * CLI's `run` makes the start checks (./start-checks.ts) before it builds a Forwarder.
   */
  async run(signal: AbortSignal): Promise<ForwarderStats> {
    const bootTimeMs = this.#options.bootTimeMs ?? hostBootTimeMs();
    const store = await this.#openStore(signal);
    if (store === undefined) {
      this.#reloader.resolve(undefined);
      this.#logger.info('stopped while waiting for the state store to open');
      return this.stats;
    }
    const running = new RunningPipeline(signal, () => this.#announceStop());
    running.onStop(() => {
      store.close();
      this.#store = undefined;
    });
    try {
      const { polling, step, engine } = await this.#start(store, running, bootTimeMs);
      await polling;
      if (!running.signal.aborted && (this.#options.drainWhenSourceEnds ?? true)) {
        if (step.aheadOfStore && step.commit({ final: true })) engine.notify();
        this.#logger.info('source finished; waiting for pending deliveries');
        await engine.whenDrained(running.signal);
      }
    } finally {
      await this.#stop(running);
    }
    return this.stats;
  }

  /** Stops every started part (in reverse); throws what the first failing stop threw, once all have run. */
  async #stop(running: RunningPipeline): Promise<void> {
    this.#reloader.resolve(undefined); // a reload that waits for the start ends here (no-op once running)
    const errors = await running.stop();
    if (errors.length > 0) throw errors[0];
    this.#logger.info(this.stats, 'forwarder stopped');
  }

  /** A full (or failing) state disk does not end the start: wait for it, not ready meanwhile (docs/delivery.md). */
  async #openStore(signal: AbortSignal): Promise<Store | undefined> {
    const { config, observer, maxPageCount } = this.#options;
    this.#store = await openStoreWhenPossible({
      stateDir: config.stateDir,
      allowTemporaryDisk: config.allowTemporaryDisk,
      logger: this.#logger.child({ component: 'store' }),
      ...(maxPageCount === undefined ? {} : { maxPageCount }),
      signal,
      onUnavailable: (error) => observer?.storeUnavailable?.({ message: error.message }),
    });
    return this.#store;
  }

  /**
   * Starts the parts in order, each registering its stop with `running` (see the module comment). The delivery
   * part registers right after the source is built, so that it stops after every part that produces records:
   * in-flight deliveries get what is left of the shutdown deadline. Resolves once the engine has started.
   */
  async #start(store: Store, running: RunningPipeline, bootTimeMs: number): Promise<StartedPipeline> {
    const { config, source: override } = this.#options;
    const state = loadState(store, this.#logger);
    const stall = new StallDetector();
    stall.setFine(state.events.length > 0);
    let identity: IdentitySource | undefined; // the identity, for the source's requests once it is built
    const built =
      override === undefined
        ? await buildSource(config, this.#logger, () => identity?.current())
        : givenSource(override, config);
    this.#registerSource(built, running);
    const sinks = this.#registerDelivery(running);
    identity = this.#options.identity ?? built.identity;
    const enabled = config.sinks.filter((s) => s.enabled);
    this.#warnAboutConfig(store);
    const { kubernetes, firstReads } = await this.#startRecordContext(identity, running);
    const approval = buildApproval(config, store, built, () => identity?.current(), this.#logger, kubernetes);
    // approval: ends running hooks / POST retries; progress stays persisted
    running.onStop(() => approval.stop());
    stall.start();
    running.onStop(() => stall.stop());
    const step = this.#createStep({
      store,
      state,
      enabled,
      identity,
      kubernetes,
      bootTimeMs,
      built,
      stall,
      approval,
    });
    this.#startApprovalWhenReady(approval, step, firstReads, running);
    // First poll first: the source starts before the sinks are built, so loading their SDKs never delays the
    // first Scheduled Events GET. Outcomes are committed to the outbox as usual meanwhile; the delivery engine
    // delivers them once it has started (it begins with whatever is pending).
    const polling = startPolling(built.source, step, running.signal);
    await firstOutcomeOrWait(step, polling, built.firstOutcomeWaitMs, running.signal);
    await this.#buildSinks(enabled, sinks, identity, polling, running);
    const engine = this.#startEngine(store, enabled, sinks, running);
    const periodic = this.#startPeriodicSends(
      { enabled, sinks, running },
      { store, identity, kubernetes, source: built.source, step },
      Promise.race([step.firstHandled, polling.then(noop, noop)]),
    );
    this.#startReloads({ engine, step, approval, store, identity, running, periodic });
    this.#announceRunning(store, built.source, enabled, bootTimeMs);
    return { polling, step, engine };
  }

  /** The source is built: its close is registered and the observer told. */
  #registerSource(built: BuiltSource, running: RunningPipeline): void {
    running.onStop(() => built.close?.());
    this.#options.observer?.sourceBuilt?.({
      source: built.source.name,
      pollIntervalMs: built.pollIntervalMs,
    });
  }

  /**
   * Registers the delivery part's stop: the engine's once it has started, else closing the sinks built so far.
   * Returns the list that #buildSinks fills.
   */
  #registerDelivery(running: RunningPipeline): Sink[] {
    const sinks: Sink[] = [];
    running.onStop(
      () =>
        this.#engine?.stop(this.#config.shutdownDeadlineMs) ??
        Promise.allSettled(sinks.map((s) => s.close?.())),
    );
    return sinks;
  }

  /** Warns about queues of sinks no longer configured, and what `config validate` warns about. */
  #warnAboutConfig(store: Store): void {
    const { config } = this.#options;
    warnAboutOrphanedQueues(store, new Set(config.sinks.map((s) => s.name)), this.#logger);
    // The warnings `config validate` prints (one function for both: src/config/warnings.ts).
    for (const warning of configWarnings(config))
      this.#logger.warn({ configKey: warning.path }, warning.message);
  }

  /**
   * Starts what every record carries besides the event: the identity (part of every record id) and, with
   * `kubernetes.labels`, the node's labels. Their first reads run beside the first poll, and the first outcome
   * waits for them (see the module comment), so polling starts at once. `firstReads`: undefined when neither
   * has a first read to wait for.
   */
  async #startRecordContext(
    identity: IdentitySource | undefined,
    running: RunningPipeline,
  ): Promise<{ kubernetes: KubernetesAgent | undefined; firstReads: Promise<unknown> | undefined }> {
    const firstIdentity = identity?.start?.(running.signal);
    if (identity !== undefined) running.onStop(() => identity.stop?.());
    const kubernetes = await buildKubernetes(this.#options.config, () => identity?.current(), this.#logger);
    if (kubernetes !== undefined) running.onStop(() => kubernetes.stop());
    const firstNodeRead = kubernetes?.start();
    const firstReads =
      firstIdentity === undefined && firstNodeRead === undefined
        ? undefined
        : Promise.allSettled([firstIdentity, firstNodeRead]);
    return { kubernetes, firstReads };
  }

  /** The per-outcome step over the started parts; it wakes the delivery engine once that has started. */
  #createStep(parts: StepParts): PipelineStep {
    const { kubernetes, built } = parts;
    const step = new PipelineStep({
      store: parts.store,
      logger: this.#logger,
      stats: this.stats,
      state: parts.state,
      routed: parts.enabled.map((s): RoutedSink => ({ name: s.name, filter: s.filter })),
      identity: parts.identity,
      kubernetes: kubernetes === undefined ? undefined : () => kubernetes.recordContext(),
      bootTimeMs: parts.bootTimeMs,
      maxGapMs: built.maxGapMs,
      stall: parts.stall,
      approval: parts.approval,
      observer: this.#options.observer,
      notify: () => this.#engine?.notify(),
      observationCheckpointMs: this.#options.observationCheckpointMs,
      maxWaitingRecords: this.#options.maxWaitingRecords,
    });
    this.#step = step;
    return step;
  }

  /** Approval starts at once, or once the first reads settled (the first outcome is held until then). */
  #startApprovalWhenReady(
    approval: ApprovalParticipant,
    step: PipelineStep,
    firstReads: Promise<unknown> | undefined,
    running: RunningPipeline,
  ): void {
    const startApproval = () => {
      if (!running.signal.aborted && !running.stopping) approval.start(step.state);
    };
    if (firstReads === undefined) startApproval();
    else step.holdFirstOutcomeUntil(firstReads.then(startApproval));
  }

  /** From now on, reloads change the running parts (src/pipeline/reload.ts). */
  #startReloads(parts: {
    engine: DeliveryEngine;
    step: PipelineStep;
    approval: ApprovalParticipant;
    store: Store;
    identity: IdentitySource | undefined;
    running: RunningPipeline;
    periodic: PeriodicSends;
  }): void {
    const { config, findFactory, observer } = this.#options;
    const { identity, running } = parts;
    const context = {
      logger: this.#logger,
      identity,
      stateDir: config.stateDir,
      imdsEndpoint: config.imds.endpoint,
    };
    const reloader = new Reloader(config, {
      ...parts,
      buildSink: (sink) => createSink(sink, findFactory ?? findSinkFactory, context),
      stopping: () => running.stopping || running.signal.aborted,
      logger: this.#logger.child({ component: 'reload' }),
      observer: {
        reloaded: (report) => {
          this.#config = reloader.config;
          observer?.reloaded?.(report);
        },
      },
    });
    this.#reloader.resolve(reloader);
  }

  /**
   * Builds the enabled sinks into `sinks`, sequentially, so that the sinks built before one that fails are
   * closed at stop. A failure ends the polling (waited for) and is thrown.
   */
  async #buildSinks(
    enabled: readonly SinkConfig[],
    sinks: Sink[],
    identity: IdentitySource | undefined,
    polling: Promise<void>,
    running: RunningPipeline,
  ): Promise<void> {
    const { config, findFactory } = this.#options;
    try {
      const find = findFactory ?? findSinkFactory;
      for (const s of enabled) {
        sinks.push(
          await createSink(s, find, {
            logger: this.#logger,
            identity,
            stateDir: config.stateDir,
            imdsEndpoint: config.imds.endpoint,
          }),
        );
      }
    } catch (error) {
      running.abort();
      await polling.catch(() => {});
      throw error;
    }
  }

  /** Starts the delivery engine over the built sinks; its events go to the observer until shutdown begins. */
  #startEngine(
    store: Store,
    enabled: readonly SinkConfig[],
    sinks: readonly Sink[],
    running: RunningPipeline,
  ): DeliveryEngine {
    const { observer } = this.#options;
    const engine = new DeliveryEngine({
      store,
      sinks: enabled.map((s, i) => engineSink(s, sinks[i]!)),
      logger: this.#logger, // the engine adds component: delivery and the sink name itself
      observer: {
        delivery: (event) => {
          if (!running.stopping) observer?.delivery?.(event);
        },
      },
    });
    this.#engine = engine;
    engine.start();
    return engine;
  }

  /**
   * The run's ONE PeriodicSender (src/pipeline/periodic-sends.ts) for the enabled sinks: the alert re-sends
   * (src/pipeline/alert-refresh.ts, from the committed state) and the heartbeats (ForwarderOptions.periodicSends,
   * src/telemetry/heartbeat.ts). It starts once the first poll outcome was handled (the identity is known then,
   * so the first heartbeat names the VM), at most one send interval after the engine started. Registered after
   * the engine, it stops before the engine closes the sinks (the heartbeats' stop-sends go out then). Returns
   * what a reload uses: `stop` removes every send before the sinks change (no stop-send: the forwarder goes on),
   * `start` adds those of the sinks that run afterwards under the configuration in effect.
   */
  #startPeriodicSends(
    parts: { enabled: readonly SinkConfig[]; sinks: readonly Sink[]; running: RunningPipeline },
    context: PeriodicContext,
    firstHandled: Promise<void>,
  ): PeriodicSends {
    const { observer, periodicSends } = this.#options;
    const { running } = parts;
    const sender = createPeriodicSender([], {
      running,
      logger: this.#logger,
      deadlineMs: () => this.#config.shutdownDeadlineMs,
      observer: observer?.periodic?.bind(observer),
    });
    const sendsOf = (sinks: PeriodicParts['sinks'], config: Config) =>
      collectPeriodicSends(this.#periodicParts(sinks, config, context), [alertRefreshSends, periodicSends]);
    const initial = sendsOf(
      parts.enabled.map((config, i) => ({ config, sink: parts.sinks[i]! })),
      this.#config,
    );
    sender.add(initial);
    const firstWithin = Math.min(...initial.map((s) => s.intervalMs), MAX_FIRST_PERIODIC_WAIT_MS);
    void Promise.race([firstHandled, delay(firstWithin, running.signal)]).then(() => {
      if (!running.signal.aborted && !running.stopping) startPeriodicSender(sender, this.#logger);
    });
    return {
      stop: () => sender.removeAll(),
      start: (sinks, config) => sender.add(sendsOf(sinks, config), { trigger: 'interval' }),
    };
  }

  /** What the periodic sends of `sinks` are built from (PeriodicParts). */
  #periodicParts(sinks: PeriodicParts['sinks'], config: Config, context: PeriodicContext): PeriodicParts {
    const { identity, kubernetes, step } = context;
    return {
      sinks,
      config,
      store: context.store,
      identity: () => identity?.current(),
      kubernetes: () => kubernetes?.recordContext(),
      source: context.source.name,
      committedState: () => step.committedState,
    };
  }

  /** Logs that the forwarder runs and tells the observer it is ready. */
  #announceRunning(store: Store, source: Source, enabled: readonly SinkConfig[], bootTimeMs: number): void {
    this.#logger.info(
      {
        stateDir: store.stateDir,
        source: source.name,
        sinks: enabled.map((s) => s.name),
        bootTime: new Date(bootTimeMs).toISOString(),
      },
      'forwarder running',
    );
    this.#options.observer?.ready?.({
      stateDir: store.stateDir,
      sinks: enabled.map((s) => s.name),
      storeDamage: storeDamage(store),
    });
  }

  /** Shutdown begins: what only memory holds (observation time, transitions waiting for the disk) is committed. */
  #announceStop(): void {
    if (this.#step?.aheadOfStore === true) {
      try {
        this.#step.commit({ final: true });
      } catch (error) {
        this.#logger.error({ err: errorMessage(error) }, 'cannot commit the in-memory state at shutdown');
      }
    }
    this.#options.observer?.stopping?.();
  }
}

/** What #start hands back to run(): the source's polling (settles when it ends) and the parts run() drives. */
interface StartedPipeline {
  polling: Promise<void>;
  step: PipelineStep;
  engine: DeliveryEngine;
}

/** What every periodic send of the run is built from besides its sink (see #periodicParts). */
interface PeriodicContext {
  store: Store;
  identity: IdentitySource | undefined;
  kubernetes: KubernetesAgent | undefined;
  source: Source;
  step: PipelineStep;
}

/**
 * The longest the periodic sends wait for the first poll outcome to be handled (IMDS's first answer can take
 * minutes after a boot): then they start with whatever is known.
 */
const MAX_FIRST_PERIODIC_WAIT_MS = 5 * 60_000;

/** The parts the per-outcome step works with (see #createStep). */
interface StepParts {
  store: Store;
  state: ForwarderState;
  enabled: readonly SinkConfig[];
  identity: IdentitySource | undefined;
  kubernetes: KubernetesAgent | undefined;
  bootTimeMs: number;
  built: BuiltSource;
  stall: StallDetector;
  approval: ApprovalParticipant;
}

/** Starts the source (unless the start was aborted); the returned polling settles when it ends. */
function startPolling(source: Source, step: PipelineStep, signal: AbortSignal): Promise<void> {
  const polling = signal.aborted ? Promise.resolve() : source.start(signal, step.onOutcome);
  polling.catch(() => {}); // awaited by run(); never an unhandled rejection while the sinks are built
  return polling;
}

/**
 * Loading a sink's SDK blocks the event loop, which would hold back the first requests on the wire: the sinks
 * are built once the first poll was answered (or the polling ended), or after the source's first-outcome wait
 * when it is slow to answer (IMDS's first call after boot can take minutes; a backlog from before the restart
 * must not wait).
 */
function firstOutcomeOrWait(
  step: PipelineStep,
  polling: Promise<void>,
  waitMs: number,
  signal: AbortSignal,
): Promise<unknown> {
  return Promise.race([
    step.firstOutcome,
    polling.then(
      () => {},
      () => {},
    ),
    delay(waitMs, signal),
  ]);
}

function noop(): void {}

/** Resolves after `ms`, or at once when `signal` aborts; never keeps the process alive by itself. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

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
import type { Config } from '../config/index.ts';
import { configWarnings } from '../config/warnings.ts';
import { DeliveryEngine, type DeliveryEngineEvent } from '../delivery/index.ts';
import type { KubernetesAgent } from '../kubernetes/index.ts';
import type { Logger } from '../log.ts';
import { findSinkFactory } from '../sinks/registry.ts';
import type { Sink, SinkFactory } from '../sinks/types.ts';
import { StallDetector } from '../sources/stall-detector.ts';
import type { BuiltSource, IdentitySource, Source } from '../sources/types.ts';
import { openStoreWhenPossible, type Store, storeDamage } from '../store/index.ts';
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
import type { RoutedSink } from './route.ts';
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

  constructor(options: ForwarderOptions) {
    this.#options = options;
    this.#logger = options.logger;
  }

  /** The store while running (tests and telemetry). */
  get store(): Store | undefined {
    return this.#store;
  }

  /** The delivery engine while running (its events reach the observer's delivery callback). */
  get engine(): DeliveryEngine | undefined {
    return this.#engine;
  }

  /** Runs until `signal` aborts (or a finite source ends and the queues drain). Throws on startup failure. */
  async run(signal: AbortSignal): Promise<ForwarderStats> {
    const { config, observer } = this.#options;
    const logger = this.#logger;
    const bootTimeMs = this.#options.bootTimeMs ?? hostBootTimeMs();

    // A full (or failing) state disk does not end the start: wait for it, not ready meanwhile (docs/delivery.md).
    const store = await openStoreWhenPossible({
      stateDir: config.stateDir,
      allowTemporaryDisk: config.allowTemporaryDisk,
      logger: logger.child({ component: 'store' }),
      ...(this.#options.maxPageCount === undefined ? {} : { maxPageCount: this.#options.maxPageCount }),
      signal,
      onUnavailable: (error) => observer?.storeUnavailable?.({ message: error.message }),
    });
    if (store === undefined) {
      logger.info('stopped while waiting for the state store to open');
      return this.stats;
    }
    this.#store = store;
    const stall = new StallDetector();
    let built: BuiltSource | undefined;
    let identity: IdentitySource | undefined;
    const internal = new AbortController();
    const onAbort = () => internal.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const sinks: Sink[] = [];
    let approval: ApprovalParticipant | undefined;
    let kubernetes: KubernetesAgent | undefined;
    let step: PipelineStep | undefined;
    let stopping = false;
    // The engine's events go to the observer until shutdown begins; 'idle' also wakes waitUntilDrained.
    let reporting = true;
    let idleWaiters: Array<() => void> = [];
    const onDelivery = (event: DeliveryEngineEvent): void => {
      if (event.type === 'idle' && idleWaiters.length > 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const wake of waiters) wake();
      }
      if (reporting) observer?.delivery?.(event);
    };
    const nextIdle = (): Promise<void> => new Promise((resolve) => idleWaiters.push(resolve));
    try {
      const state = loadState(store, logger);
      stall.setFine(state.events.length > 0);
      const override = this.#options.source;
      built =
        override === undefined
          ? await buildSource(config, logger, () => identity?.current())
          : givenSource(override, config);
      const { source } = built;
      identity = this.#options.identity ?? built.identity;

      const enabled = config.sinks.filter((s) => s.enabled);
      const routed: RoutedSink[] = enabled.map((s) => ({ name: s.name, filter: s.filter }));
      warnAboutOrphanedQueues(store, new Set(config.sinks.map((s) => s.name)), logger);
      // The warnings `config validate` prints (one function for both: src/config/warnings.ts).
      for (const warning of configWarnings(config)) logger.warn({ configKey: warning.path }, warning.message);
      stall.start();

      // The identity is part of every record id: its first request runs beside the first poll, and the first
      // outcome waits for it (see the module comment), so polling starts at once.
      const firstIdentity = identity?.start?.(internal.signal);
      kubernetes = buildKubernetes(config, () => identity?.current(), logger);
      // The node's labels are part of every record too (kubernetes.labels): read beside the first poll as well.
      const firstNodeRead = kubernetes?.start();
      approval = buildApproval(config, store, built, () => identity?.current(), logger, kubernetes);
      const agent = kubernetes;
      step = new PipelineStep({
        store,
        logger,
        stats: this.stats,
        state,
        routed,
        identity,
        kubernetes: agent === undefined ? undefined : () => agent.recordContext(),
        bootTimeMs,
        maxGapMs: built.maxGapMs,
        stall,
        approval,
        observer,
        notify: () => this.#engine?.notify(),
        observationCheckpointMs: this.#options.observationCheckpointMs,
        maxWaitingRecords: this.#options.maxWaitingRecords,
      });
      const pipeline = step;
      const participant = approval;
      const startApproval = () => {
        if (!internal.signal.aborted && !stopping) participant.start(pipeline.state);
      };
      if (firstIdentity === undefined && firstNodeRead === undefined) startApproval();
      else {
        const ready = Promise.allSettled([firstIdentity, firstNodeRead]);
        pipeline.holdFirstOutcomeUntil(ready.then(startApproval));
      }

      // First poll first: the source starts before the sinks are built, so loading their SDKs never delays the
      // first Scheduled Events GET. Outcomes are committed to the outbox as usual meanwhile; the delivery engine
      // delivers them once it has started (it begins with whatever is pending).
      const polling = internal.signal.aborted
        ? Promise.resolve()
        : source.start(internal.signal, pipeline.onOutcome);
      polling.catch(() => {}); // awaited below; never an unhandled rejection while the sinks are built
      // Loading a sink's SDK blocks the event loop, which would hold back the first requests on the wire: build
      // the sinks once the first poll was answered, or after the source's first-outcome wait when it is slow to
      // answer (IMDS's first call after boot can take minutes; a backlog from before the restart must not wait).
      await Promise.race([
        pipeline.firstOutcome,
        polling.then(
          () => {},
          () => {},
        ),
        delay(built.firstOutcomeWaitMs, internal.signal),
      ]);
      try {
        // Sequentially, so that the sinks built before one that fails are closed below.
        const find = this.#options.findFactory ?? findSinkFactory;
        for (const s of enabled) {
          sinks.push(await createSink(s, find, { logger, identity, stateDir: config.stateDir }));
        }
      } catch (error) {
        internal.abort();
        await polling.catch(() => {});
        throw error;
      }

      const engine = new DeliveryEngine({
        store,
        sinks: enabled.map((s, i) => engineSink(s, sinks[i]!)),
        logger, // the engine adds component: delivery and the sink name itself
        observer: { delivery: onDelivery },
      });
      this.#engine = engine;
      engine.start();
      logger.info(
        {
          stateDir: store.stateDir,
          source: source.name,
          sinks: enabled.map((s) => s.name),
          bootTime: new Date(bootTimeMs).toISOString(),
        },
        'forwarder running',
      );
      observer?.ready?.({
        stateDir: store.stateDir,
        sinks: enabled.map((s) => s.name),
        storeDamage: storeDamage(store),
      });
      await polling;
      if (!internal.signal.aborted && (this.#options.drainWhenSourceEnds ?? true)) {
        if (pipeline.aheadOfStore && pipeline.commit({ final: true })) engine.notify();
        logger.info('source finished; waiting for pending deliveries');
        await waitUntilDrained(store, routed, internal.signal, nextIdle);
      }
    } finally {
      stopping = true;
      signal.removeEventListener('abort', onAbort);
      // Graceful stop: what only memory holds (observation time, transitions waiting for the disk) is committed.
      if (step?.aheadOfStore === true) {
        try {
          step.commit({ final: true });
        } catch (error) {
          logger.error({ err: (error as Error).message }, 'cannot commit the in-memory state at shutdown');
        }
      }
      reporting = false;
      observer?.stopping?.();
      stall.stop();
      await approval?.stop(); // approval: ends running hooks / POST retries; progress stays persisted
      identity?.stop?.();
      kubernetes?.stop();
      if (this.#engine !== undefined) await this.#engine.stop(config.shutdownDeadlineMs);
      else await Promise.allSettled(sinks.map((s) => s.close?.()));
      built?.close?.();
      store.close();
      this.#store = undefined;
      logger.info(this.stats, 'forwarder stopped');
    }
    return this.stats;
  }
}

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

/**
 * Resolves when no enabled sink has pending rows, or when `signal` aborts. Checked now and whenever a delivery
 * worker reports its queue empty ('idle', through `nextIdle`): no timer.
 */
async function waitUntilDrained(
  store: Store,
  sinks: readonly RoutedSink[],
  signal: AbortSignal,
  nextIdle: () => Promise<void>,
): Promise<void> {
  const names = new Set(sinks.map((s) => s.name));
  const aborted = new Promise<void>((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  while (!signal.aborted) {
    const idle = nextIdle(); // before the check, so that an idle report right after it is not missed
    const pending = store.stats().filter((q) => names.has(q.sink) && q.pending > 0);
    if (pending.length === 0) return;
    await Promise.race([idle, aborted]);
  }
}

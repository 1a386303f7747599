/**
 * The `run` loop. Opens the store (last committed state, or the initial one), starts the VM identity cache and
 * the stall detector, builds the sinks from the config, starts the delivery engine, then runs the source. For
 * each poll outcome: transform(previous committed state) → ONE commit of the new state plus the records routed
 * to every enabled sink whose filter matches → wake the delivery engine.
 *
 * First poll first: the source starts right after the store is open, and the sinks are built (their SDKs
 * loaded) once the first poll was answered, or after one poll interval if IMDS is slow; the delivery engine
 * starts when they are ready and delivers whatever was committed meanwhile. The first identity request
 * (instance metadata) runs concurrently with the first poll. The first outcome is handled (and approval started) once that identity request has
 * settled, so the first records still carry the identity whenever IMDS answers it (it is part of every
 * record id); a failed identity request is retried on later polls, as before.
 *
 * A failed commit (disk full, I/O error) keeps the previous committed state: the next poll's diff produces the
 * same records again, so nothing is lost once the store recovers; polling never stops. Shutdown (abort the
 * signal): stop the source, give in-flight deliveries `shutdownDeadlineMs`, close the store.
 */
import { ApprovalCoordinator } from '../approval/index.ts';
import type { Config, SinkConfig } from '../config/index.ts';
import { DeliveryEngine, type EngineSink } from '../delivery/index.ts';
import type { Logger } from '../log.ts';
import { findSinkFactory } from '../sinks/registry.ts';
import type { Sink, SinkFactory } from '../sinks/types.ts';
import { ImdsClient, ImdsPoller, VmIdentityCache } from '../sources/imds/index.ts';
import { ReplaySource } from '../sources/replay/index.ts';
import { StallDetector } from '../sources/stall-detector.ts';
import type { PollOutcome, Source, VmIdentity } from '../sources/types.ts';
import { openStore, type Store, StoreWriteError } from '../store/index.ts';
import { type ForwarderState, initialState, restoreState, transform } from '../transform/index.ts';
import { hostBootTimeMs } from './boot-time.ts';
import type { PipelineObserver } from './observer.ts';
import { type RoutedSink, routeRecords } from './route.ts';

/** Anything that supplies the VM identity (the IMDS cache in production). */
export interface IdentitySource {
  current(): VmIdentity | undefined;
  refresh(): Promise<VmIdentity | undefined>;
  start?(signal?: AbortSignal): Promise<VmIdentity | undefined>;
  stop?(): void;
}

export interface ForwarderOptions {
  config: Config;
  logger: Logger;
  /** Overrides the source built from config (tests). */
  source?: Source;
  /** Overrides the identity cache built from config (tests). */
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
}

/** Counters for the run (also handy in tests). */
export interface ForwarderStats {
  outcomes: number;
  failures: number;
  commits: number;
  commitFailures: number;
  records: number;
}

/** Builds the configured source: the IMDS poller (with its client) or the replay source. */
function buildSource(config: Config, logger: Logger): { source: Source; client: ImdsClient | undefined } {
  if (config.source.type === 'replay') {
    return {
      source: new ReplaySource({ file: config.source.file, speed: config.source.speed, logger }),
      client: undefined,
    };
  }
  const client = new ImdsClient({
    endpoint: config.imds.endpoint,
    apiVersion: config.imds.apiVersion,
    instanceApiVersion: config.imds.instanceApiVersion,
    firstRequestTimeoutMs: config.imds.firstRequestTimeoutMs,
    requestTimeoutMs: config.imds.requestTimeoutMs,
    logger: logger.child({ component: 'imds' }),
  });
  const poller = new ImdsPoller({
    client,
    intervalMs: config.imds.pollIntervalMs,
    logger: logger.child({ component: 'poller' }),
    ...(config.imds.captureFile === undefined ? {} : { captureFile: config.imds.captureFile }),
  });
  return { source: poller, client };
}

/** The running forwarder; see the module comment. */
export class Forwarder {
  readonly stats: ForwarderStats = { outcomes: 0, failures: 0, commits: 0, commitFailures: 0, records: 0 };
  readonly #options: ForwarderOptions;
  readonly #logger: Logger;
  #state: ForwarderState = initialState();
  #store: Store | undefined;
  #engine: DeliveryEngine | undefined;
  #routed: RoutedSink[] = [];
  #consecutiveCommitFailures = 0;
  #lastCommitErrorLogMs = 0;
  #lastIdentityAttemptMs = Date.now();
  /** Until the first identity request has settled (and approval started): the first outcome waits for it. */
  #beforeFirstOutcome: Promise<void> | undefined;
  /** Resolves when the source delivers its first outcome (the first GET was answered). */
  readonly #firstOutcome = Promise.withResolvers<void>();

  constructor(options: ForwarderOptions) {
    this.#options = options;
    this.#logger = options.logger;
  }

  /** The store while running (tests and telemetry). */
  get store(): Store | undefined {
    return this.#store;
  }

  /** The delivery engine while running (telemetry subscribes to its events). */
  get engine(): DeliveryEngine | undefined {
    return this.#engine;
  }

  /** Runs until `signal` aborts (or a finite source ends and the queues drain). Throws on startup failure. */
  async run(signal: AbortSignal): Promise<ForwarderStats> {
    const { config, observer } = this.#options;
    const logger = this.#logger;
    const bootTimeMs = this.#options.bootTimeMs ?? hostBootTimeMs();
    const maxGapMs = 2 * config.imds.pollIntervalMs + config.imds.requestTimeoutMs;

    const store = openStore({
      stateDir: config.stateDir,
      allowTemporaryDisk: config.allowTemporaryDisk,
      logger: logger.child({ component: 'store' }),
      ...(this.#options.maxPageCount === undefined ? {} : { maxPageCount: this.#options.maxPageCount }),
    });
    this.#store = store;
    let client: ImdsClient | undefined;
    const stall = new StallDetector();
    let identity: IdentitySource | undefined;
    const internal = new AbortController();
    const onAbort = () => internal.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const sinks: Sink[] = [];
    let approval: ApprovalCoordinator | undefined;
    let stopping = false;
    try {
      this.#state = this.#loadState(store);
      const built = this.#options.source === undefined ? buildSource(config, logger) : undefined;
      const source = this.#options.source ?? built!.source;
      client = built?.client;
      identity =
        this.#options.identity ??
        (client === undefined
          ? undefined
          : new VmIdentityCache({
              client,
              refreshIntervalMs: config.imds.identityRefreshMs,
              logger: logger.child({ component: 'identity' }),
            }));

      const enabled = config.sinks.filter((s) => s.enabled);
      this.#routed = enabled.map((s) => ({ name: s.name, filter: s.filter }));
      this.#warnAboutOrphanedQueues(store, new Set(config.sinks.map((s) => s.name)));
      if (enabled.length === 0) {
        logger.warn('no sinks enabled: records are committed to the state directory but delivered nowhere');
      }
      stall.start();

      // The identity is part of every record id: its first request runs beside the first poll, and the first
      // outcome waits for it (see the module comment), so polling starts at once.
      const firstIdentity = identity?.start?.(internal.signal);

      // --- approval (src/approval, docs/approval.md): resumes persisted progress against the loaded state.
      approval = new ApprovalCoordinator({
        config: config.approval,
        store,
        client,
        identity: () => identity?.current(),
        pollIntervalMs: config.imds.pollIntervalMs,
        logger: logger.child({ component: 'approval' }),
      });
      const startApproval = (coordinator: ApprovalCoordinator) => {
        this.#beforeFirstOutcome = undefined;
        if (!internal.signal.aborted && !stopping) coordinator.start(this.#state);
      };
      if (firstIdentity === undefined) startApproval(approval);
      else {
        const coordinator = approval;
        this.#beforeFirstOutcome = firstIdentity.then(
          () => startApproval(coordinator),
          () => startApproval(coordinator),
        );
      }
      // --- end approval

      // First poll first: the source starts before the sinks are built, so loading their SDKs never delays the
      // first Scheduled Events GET. Outcomes are committed to the outbox as usual meanwhile; the delivery engine
      // delivers them once it has started (it begins with whatever is pending).
      const deps = { identity, bootTimeMs, maxGapMs, stall, store, approval };
      const polling = internal.signal.aborted
        ? Promise.resolve()
        : source.start(internal.signal, (outcome) => this.#onOutcome(outcome, deps));
      polling.catch(() => {}); // awaited below; never an unhandled rejection while the sinks are built
      // Loading a sink's SDK blocks the event loop, which would hold back the first requests on the wire: build
      // the sinks once the first poll was answered, or after one poll interval when IMDS is slow to answer (its
      // first call after boot can take minutes; a backlog from before the restart must not wait for that).
      await Promise.race([
        this.#firstOutcome.promise,
        polling.then(
          () => {},
          () => {},
        ),
        delay(config.imds.pollIntervalMs, internal.signal),
      ]);
      try {
        // Sequentially, so that the sinks built before one that fails are closed below.
        for (const s of enabled) sinks.push(await this.#createSink(s, identity));
      } catch (error) {
        internal.abort();
        await polling.catch(() => {});
        throw error;
      }

      const engine = new DeliveryEngine({
        store,
        sinks: enabled.map((s, i) => engineSink(s, sinks[i]!)),
        logger: logger.child({ component: 'delivery' }),
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
      observer?.ready?.({ stateDir: store.stateDir, sinks: enabled.map((s) => s.name) });
      await polling;
      if (!internal.signal.aborted && (this.#options.drainWhenSourceEnds ?? true)) {
        logger.info('source finished; waiting for pending deliveries');
        await waitUntilDrained(store, this.#routed, internal.signal);
      }
    } finally {
      stopping = true;
      signal.removeEventListener('abort', onAbort);
      observer?.stopping?.();
      stall.stop();
      await approval?.stop(); // approval: ends running hooks / POST retries; progress stays persisted
      identity?.stop?.();
      if (this.#engine !== undefined) await this.#engine.stop(config.shutdownDeadlineMs);
      else await Promise.allSettled(sinks.map((s) => s.close?.()));
      client?.close();
      store.close();
      this.#store = undefined;
      logger.info(this.stats, 'forwarder stopped');
    }
    return this.stats;
  }

  #loadState(store: Store): ForwarderState {
    const saved = store.loadState<unknown>();
    if (saved === undefined) return initialState();
    try {
      return restoreState(saved);
    } catch (error) {
      // Never crash-loop on a state this build cannot read: start fresh and say so loudly.
      this.#logger.error(
        { err: (error as Error).message },
        'cannot use the saved forwarder state; starting from an empty state (events seen again produce records again)',
      );
      return initialState();
    }
  }

  /** Builds one sink; a factory loads its implementation here (see SinkFactory.create). */
  async #createSink(sink: SinkConfig, identity: IdentitySource | undefined): Promise<Sink> {
    const find = this.#options.findFactory ?? findSinkFactory;
    const factory = find(sink.type);
    if (factory === undefined) throw new Error(`sink ${sink.name}: unknown sink type "${sink.type}"`);
    return factory.create(sink.name, sink.options, {
      logger: this.#logger.child({ component: 'sink', sink: sink.name }),
      vm: () => identity?.current(),
      stateDir: this.#options.config.stateDir,
    });
  }

  #warnAboutOrphanedQueues(store: Store, configured: Set<string>): void {
    for (const queue of store.stats()) {
      if (!configured.has(queue.sink) && queue.pending > 0) {
        this.#logger.warn(
          { sink: queue.sink, pending: queue.pending },
          'pending records for a sink that is no longer configured stay in the outbox (see `outbox status`)',
        );
      }
    }
  }

  async #onOutcome(
    outcome: PollOutcome,
    deps: {
      identity: IdentitySource | undefined;
      bootTimeMs: number;
      maxGapMs: number;
      stall: StallDetector;
      store: Store;
      approval?: ApprovalCoordinator | undefined;
    },
  ): Promise<void> {
    this.#firstOutcome.resolve();
    if (this.#beforeFirstOutcome !== undefined) await this.#beforeFirstOutcome;
    this.stats.outcomes++;
    this.#options.observer?.outcome?.(outcome);
    if (outcome.kind === 'failure') {
      this.stats.failures++;
      return; // a failed poll never changes state (the poller logs failures once per streak)
    }
    const previous = this.#state;
    // The identity is fetched at start (i.e. after every reboot) and refreshed periodically; while it is still
    // unknown, retry at most every 30 s so a broken instance endpoint never slows polling down.
    if (deps.identity !== undefined && deps.identity.current() === undefined) {
      const now = Date.now();
      if (now - this.#lastIdentityAttemptMs >= 30_000) {
        this.#lastIdentityAttemptMs = now;
        await deps.identity.refresh();
      }
    }
    const approvals = deps.approval?.pendingApprovals() ?? []; // approval: decided, not yet committed
    const result = transform(previous, {
      outcome,
      vm: deps.identity?.current(),
      hostBootTimeMs: deps.bootTimeMs,
      maxStallMs: deps.stall.takeMaxStallMs(),
      maxGapMs: deps.maxGapMs,
      approvals,
    });
    // transform() returns the previous state object itself when nothing changed; every document poll moves
    // lastObservedAtMs (reboot awareness needs it durable), so there is nothing else to compare.
    if (result.records.length === 0 && result.state === previous) return;
    const deliveries = routeRecords(result.records, this.#routed);
    try {
      deps.store.commit(result.state, deliveries);
    } catch (error) {
      if (!(error instanceof StoreWriteError)) throw error;
      this.#commitFailed(error, result.records.length);
      return; // keep the previous committed state: the next poll's diff re-produces these records
    }
    this.#state = result.state;
    deps.approval?.afterCommit({ state: result.state, records: result.records, approvals }); // approval
    this.stats.commits++;
    this.stats.records += result.records.length;
    if (this.#consecutiveCommitFailures > 0) {
      this.#logger.info(
        { failedCommits: this.#consecutiveCommitFailures },
        'state store writable again; pending transitions committed',
      );
      this.#consecutiveCommitFailures = 0;
    }
    const rows = deliveries.reduce((n, d) => n + d.sinks.length, 0);
    this.#options.observer?.committed?.({ records: result.records, rows, outcome });
    if (rows > 0) this.#engine?.notify(); // before the engine starts, it finds the rows when it does
    for (const record of result.records) {
      this.#logger.debug({ id: record.id, type: record.type, subject: record.subject }, 'record committed');
    }
  }

  #commitFailed(error: StoreWriteError, records: number): void {
    this.stats.commitFailures++;
    this.#consecutiveCommitFailures++;
    const consecutive = this.#consecutiveCommitFailures;
    this.#options.observer?.commitFailed?.({ message: error.message, full: error.full, consecutive });
    const now = Date.now();
    // First failure, then at most every 30 s: clear, but no log flood while the disk stays full.
    if (consecutive === 1 || now - this.#lastCommitErrorLogMs >= 30_000) {
      this.#lastCommitErrorLogMs = now;
      this.#logger.error(
        {
          err: error.message,
          diskFull: error.full,
          consecutiveFailures: consecutive,
          pendingRecords: records,
        },
        error.full
          ? 'cannot commit: the disk holding the state directory is full; still polling, nothing is lost — the ' +
              'transitions are committed as soon as space returns'
          : 'cannot commit to the state store; still polling, the transitions are retried on the next poll',
      );
    }
  }
}

/** Engine configuration for one sink (config maxAgeHours → the store's maxAgeMs). */
function engineSink(config: SinkConfig, sink: Sink): EngineSink {
  const { delivery } = config;
  return {
    sink,
    ...(delivery.maxBatch === undefined ? {} : { maxBatch: delivery.maxBatch }),
    backoff: delivery.backoff,
    caps: {
      maxPendingRows: delivery.caps.maxPendingRows,
      maxPendingBytes: delivery.caps.maxPendingBytes,
      maxAgeMs: Math.round(delivery.caps.maxAgeHours * 3_600_000),
    },
  };
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

/** Resolves when no enabled sink has pending rows, or when `signal` aborts. */
async function waitUntilDrained(
  store: Store,
  sinks: readonly RoutedSink[],
  signal: AbortSignal,
): Promise<void> {
  const names = new Set(sinks.map((s) => s.name));
  while (!signal.aborted) {
    const pending = store.stats().filter((q) => names.has(q.sink) && q.pending > 0);
    if (pending.length === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 100);
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
}

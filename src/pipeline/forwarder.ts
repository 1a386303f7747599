/**
 * The `run` loop. Opens the store (last committed state, or the initial one), starts the VM identity cache and
 * the stall detector, starts the source, then builds the sinks from the config and starts the delivery engine.
 *
 * The transform state lives in memory and may run ahead of the committed one (src/pipeline/durability.ts):
 * - a changed document (or approvals): transform(in-memory state) → ONE commit of the new state plus the
 *   records routed to every enabled sink whose filter matches → wake the delivery engine;
 * - an unchanged document: observeUnchanged() in memory, no write (the observation time is committed with the
 *   next commit, on graceful shutdown, or by the once-a-minute checkpoint while an event is tracked).
 *
 * A failed commit (disk full, I/O error) keeps the transitions in memory, in order, with their observation
 * times (at most MAX_WAITING_RECORDS), and every later poll retries them first, so they are committed in order
 * as soon as the disk takes writes; polling never stops. Beyond the bound, or when the process dies meanwhile,
 * the pipeline falls back to the last committed state and the next diff infers conservatively. Shutdown (abort
 * the signal): stop the source, commit what is only in memory, give in-flight deliveries `shutdownDeadlineMs`,
 * close the store.
 *
 * First poll first: the source starts right after the store is open, and the sinks are built (their SDKs
 * loaded) once the first poll was answered, or after one poll interval if IMDS is slow; the delivery engine
 * starts when they are ready and delivers whatever was committed meanwhile. The first identity request
 * (instance metadata) runs concurrently with the first poll. The first outcome is handled (and approval
 * started) once that identity request has settled, so the first records still carry the identity whenever
 * IMDS answers it (it is part of every record id); a failed identity request is retried on later polls.
 */
import { ApprovalCoordinator } from '../approval/index.ts';
import { ConfigError } from '../config/errors.ts';
import type { Config, SinkConfig } from '../config/index.ts';
import { DeliveryEngine, type EngineSink } from '../delivery/index.ts';
import type { LifecycleRecord, PollOutcome, VmIdentity } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { findSinkFactory } from '../sinks/registry.ts';
import type { Sink, SinkFactory } from '../sinks/types.ts';
import { ImdsClient, ImdsPoller, VmIdentityCache } from '../sources/imds/index.ts';
import { ReplaySource } from '../sources/replay/index.ts';
import { StallDetector } from '../sources/stall-detector.ts';
import type { Source } from '../sources/types.ts';
import { openStoreWhenPossible, type Store, StoreWriteError, storeDamage } from '../store/index.ts';
import {
  type ApprovalInput,
  type ForwarderState,
  initialState,
  observeUnchanged,
  restoreState,
  transform,
} from '../transform/index.ts';
import { hostBootTimeMs } from './boot-time.ts';
import { MAX_WAITING_RECORDS, OBSERVATION_CHECKPOINT_MS, observationCheckpointDue } from './durability.ts';
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
  /** Observation checkpoint interval while an event is tracked (default OBSERVATION_CHECKPOINT_MS; tests). */
  observationCheckpointMs?: number;
  /** Transitions kept in memory while commits fail (default MAX_WAITING_RECORDS; tests). */
  maxWaitingRecords?: number;
}

/** Transitions of one poll not committed yet (a commit failed), in observation order. */
interface WaitingBatch {
  records: LifecycleRecord[];
  deliveries: ReturnType<typeof routeRecords>;
  approvals: ApprovalInput[];
  observedAtMs: number;
}

interface OutcomeDeps {
  identity: IdentitySource | undefined;
  bootTimeMs: number;
  maxGapMs: number;
  stall: StallDetector;
  store: Store;
  approval?: ApprovalCoordinator | undefined;
}

/** Counters for the run (also handy in tests). */
export interface ForwarderStats {
  outcomes: number;
  failures: number;
  commits: number;
  commitFailures: number;
  records: number;
  /** Document polls handled without a diff because the document had not changed. */
  unchangedPolls: number;
}

/**
 * Builds the configured source: the IMDS poller (with its client; captures carry `vm()`), or the replay source,
 * which is also the identity source (the identity recorded in the capture).
 */
function buildSource(
  config: Config,
  logger: Logger,
  vm: () => VmIdentity | undefined,
): { source: Source; client: ImdsClient | undefined; identity?: IdentitySource } {
  if (config.source.type === 'replay') {
    const replay = new ReplaySource({ file: config.source.file, speed: config.source.speed, logger });
    const identity = { current: () => replay.current(), refresh: () => replay.refresh() };
    return { source: replay, client: undefined, identity };
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
    ...(config.imds.captureFile === undefined ? {} : { captureFile: config.imds.captureFile, identity: vm }),
  });
  return { source: poller, client };
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
  /** The state in memory: that of the last document (or approval) seen; may run ahead of the committed one. */
  #state: ForwarderState = initialState();
  /** The last committed state (what a restart would load). */
  #durable: ForwarderState = this.#state;
  /** False until #state is known to be the transform of the source's last document (unchanged-poll shortcut). */
  #followsSource = false;
  /** Changed documents (with their transitions) observed but not committed yet (commits failing), oldest first. */
  #waiting: WaitingBatch[] = [];
  #waitingRecords = 0;
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
      this.#durable = this.#state;
      stall.setFine(this.#state.events.length > 0);
      const built =
        this.#options.source === undefined
          ? buildSource(config, logger, () => identity?.current())
          : undefined;
      const source = this.#options.source ?? built!.source;
      client = built?.client;
      identity =
        this.#options.identity ??
        (client === undefined
          ? built?.identity
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
        logger, // the engine adds component: delivery and the sink name itself
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
        if (this.#state !== this.#durable && this.#commitInMemory(store, { final: true })) engine.notify();
        logger.info('source finished; waiting for pending deliveries');
        await waitUntilDrained(store, this.#routed, internal.signal);
      }
    } finally {
      stopping = true;
      signal.removeEventListener('abort', onAbort);
      // Graceful stop: what only memory holds (observation time, transitions waiting for the disk) is committed.
      if (this.#state !== this.#durable) {
        try {
          this.#commitInMemory(store, { final: true });
        } catch (error) {
          logger.error({ err: (error as Error).message }, 'cannot commit the in-memory state at shutdown');
        }
      }
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
    if (factory === undefined)
      throw new ConfigError(`sink ${sink.name}: unknown sink type "${sink.type}"`, []);
    try {
      return await factory.create(sink.name, sink.options, {
        logger: this.#logger.child({ component: 'sink', sink: sink.name }),
        vm: () => identity?.current(),
        stateDir: this.#options.config.stateDir,
      });
    } catch (error) {
      // A sink that cannot be built from its options is a configuration error (exit code 2, like `config validate`).
      throw new ConfigError(errorMessage(error), []);
    }
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

  async #onOutcome(outcome: PollOutcome, deps: OutcomeDeps): Promise<void> {
    this.#firstOutcome.resolve();
    if (this.#beforeFirstOutcome !== undefined) await this.#beforeFirstOutcome;
    this.stats.outcomes++;
    this.#options.observer?.outcome?.(outcome);
    if (outcome.kind === 'failure') {
      this.stats.failures++;
      // A failed poll never changes state (the poller logs failures once per streak); transitions waiting
      // for the disk are retried on every poll all the same.
      if (this.#waiting.length > 0) this.#commitInMemory(deps.store, { deps, outcome });
      return;
    }
    // The identity is fetched at start (i.e. after every reboot) and refreshed periodically; while it is still
    // unknown, retry at most every 30 s so a broken instance endpoint never slows polling down.
    if (deps.identity !== undefined && deps.identity.current() === undefined) {
      const now = Date.now();
      if (now - this.#lastIdentityAttemptMs >= 30_000) {
        this.#lastIdentityAttemptMs = now;
        await deps.identity.refresh();
        // Approval decisions wait for the identity; let the coordinator decide now rather than at the next commit.
        if (deps.identity.current() !== undefined && this.#waiting.length === 0) {
          deps.approval?.afterCommit({ state: this.#durable, records: [], approvals: [] });
        }
      }
    }
    const approvals = deps.approval?.pendingApprovals() ?? []; // approval: decided, not yet committed
    const maxStallMs = deps.stall.takeMaxStallMs();
    const nowMs = outcome.observed.wallMs;
    if (!outcome.changed && approvals.length === 0 && this.#followsSource) {
      // The same document as the one #state came from: no record is possible; only the observation time and
      // the Started-window measurements move, in memory (src/pipeline/durability.ts says when they are written).
      this.stats.unchangedPolls++;
      this.#state = observeUnchanged(this.#state, {
        observedAtMs: nowMs,
        hostBootTimeMs: deps.bootTimeMs,
        maxStallMs,
      });
      const checkpointMs = this.#options.observationCheckpointMs ?? OBSERVATION_CHECKPOINT_MS;
      if (
        this.#waiting.length > 0 ||
        observationCheckpointDue(this.#state, this.#durable.lastObservedAtMs, nowMs, checkpointMs)
      ) {
        this.#commitInMemory(deps.store, { deps, outcome });
      }
      return;
    }
    const result = transform(this.#state, {
      outcome,
      vm: deps.identity?.current(),
      hostBootTimeMs: deps.bootTimeMs,
      maxStallMs,
      maxGapMs: deps.maxGapMs,
      approvals,
    });
    this.#state = result.state;
    this.#followsSource = true;
    deps.stall.setFine(result.state.events.length > 0);
    // A changed document is committed at once, with or without records (the committed state then matches it);
    // until that commit succeeds it waits like a transition (one empty batch at most), so every poll retries it.
    // (Approvals already recorded in memory give no record again; afterCommit sees them in the committed state.)
    if (result.records.length > 0 || this.#waiting.length === 0) {
      this.#waiting.push({
        records: result.records,
        deliveries: routeRecords(result.records, this.#routed),
        approvals,
        observedAtMs: nowMs,
      });
      this.#waitingRecords += result.records.length;
    }
    this.#commitInMemory(deps.store, { deps, outcome });
  }

  /**
   * ONE commit of the in-memory state plus every waiting transition, in observation order. On success the
   * committed state catches up with memory; on a write error the transitions keep waiting (bounded).
   * `final`: at shutdown or when the source ended — no approval bookkeeping, and what cannot be committed
   * is reported as left to the next start's conservative inference.
   */
  #commitInMemory(
    store: Store,
    context: { deps?: OutcomeDeps; outcome?: PollOutcome; final?: boolean },
  ): boolean {
    const batches = this.#waiting;
    const state = this.#state;
    const deliveries = batches.length === 1 ? batches[0]!.deliveries : batches.flatMap((b) => b.deliveries);
    try {
      store.commit(state, deliveries);
    } catch (error) {
      if (!(error instanceof StoreWriteError)) throw error;
      this.#commitFailed(error, context.final === true);
      return false;
    }
    this.#durable = state;
    this.#waiting = [];
    this.#waitingRecords = 0;
    const records = batches.length === 1 ? batches[0]!.records : batches.flatMap((b) => b.records);
    this.stats.commits++;
    this.stats.records += records.length;
    if (this.#consecutiveCommitFailures > 0) {
      this.#logger.info(
        { failedCommits: this.#consecutiveCommitFailures, records: records.length },
        'state store writable again; the transitions that waited in memory are committed, in order',
      );
      this.#consecutiveCommitFailures = 0;
    }
    if (context.final === true) return true;
    const approvals = batches.flatMap((b) => b.approvals);
    context.deps?.approval?.afterCommit({ state, records, approvals }); // approval
    const rows = deliveries.reduce((n, d) => n + d.sinks.length, 0);
    if (context.outcome !== undefined) {
      this.#options.observer?.committed?.({ records, rows, outcome: context.outcome });
    }
    if (rows > 0) this.#engine?.notify(); // before the engine starts, it finds the rows when it does
    for (const record of records) {
      this.#logger.debug({ id: record.id, type: record.type, subject: record.subject }, 'record committed');
    }
    return true;
  }

  #commitFailed(error: StoreWriteError, final: boolean): void {
    this.stats.commitFailures++;
    this.#consecutiveCommitFailures++;
    const consecutive = this.#consecutiveCommitFailures;
    this.#options.observer?.commitFailed?.({ message: error.message, full: error.full, consecutive });
    const waiting = this.#waitingRecords;
    const oldestMs = this.#waiting[0]?.observedAtMs;
    const fields = {
      err: error.message,
      diskFull: error.full,
      consecutiveFailures: consecutive,
      waitingTransitions: waiting,
      ...(oldestMs === undefined ? {} : { waitingSinceMs: Math.max(0, Date.now() - oldestMs) }),
    };
    if (final) {
      this.#logger.error(
        fields,
        waiting > 0
          ? `cannot commit at shutdown: ${waiting} transition(s) seen while the state store refused writes are ` +
              'lost with this process; the next start infers their outcome conservatively from the committed state'
          : 'cannot commit the last observation time at shutdown; the next start counts the time since the last ' +
              'committed observation as unwatched',
      );
      return;
    }
    const limit = this.#options.maxWaitingRecords ?? MAX_WAITING_RECORDS;
    if (waiting > limit || this.#waiting.length > limit) {
      // Memory stays bounded: fall back to the committed state. The next document is diffed against it, so
      // every event still gets its records — inferred conservatively.
      this.#logger.error(
        fields,
        `more than ${limit} transitions are waiting for the state store: dropping them from memory and falling ` +
          'back to the last committed state (the next commit re-infers what happened, conservatively)',
      );
      // The dropped observations happened after the committed one: the state must not claim to have watched
      // continuously since then (no `canceled` across them), so its observation time becomes unknown.
      this.#state = { ...this.#durable, lastObservedAtMs: null };
      this.#followsSource = false;
      this.#waiting = [];
      this.#waitingRecords = 0;
      this.#lastCommitErrorLogMs = Date.now();
      return;
    }
    const now = Date.now();
    // First failure, then at most every 30 s: clear, but no log flood while the disk stays full.
    if (consecutive === 1 || now - this.#lastCommitErrorLogMs >= 30_000) {
      this.#lastCommitErrorLogMs = now;
      const age =
        oldestMs === undefined
          ? ''
          : ` (the oldest seen ${Math.round(fields.waitingSinceMs ?? 0) / 1000} s ago)`;
      this.#logger.error(
        fields,
        error.full
          ? `cannot commit: the disk holding the state directory is full; still polling, ${waiting} transition(s) ` +
              `wait in memory${age} and are committed in order as soon as the disk takes writes`
          : `cannot commit to the state store; still polling, ${waiting} transition(s) wait in memory${age} ` +
              'and are retried on every poll',
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
      ...(delivery.caps.maxAgeHours === undefined
        ? {} // default: records never expire by age
        : { maxAgeMs: Math.round(delivery.caps.maxAgeHours * 3_600_000) }),
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

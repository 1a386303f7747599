/**
 * The per-outcome step: outcome → transform → route → commit → notify (the composition is in
 * src/pipeline/forwarder.ts and src/pipeline/compose.ts).
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
 * the pipeline falls back to the last committed state and the next diff infers conservatively.
 */

import type { KubernetesRecordContext, LifecycleRecord, PollOutcome } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import type { StallDetector } from '../sources/stall-detector.ts';
import type { IdentitySource } from '../sources/types.ts';
import { type Store, StoreWriteError } from '../store/index.ts';
import { type ApprovalInput, type ForwarderState, observeUnchanged, transform } from '../transform/index.ts';
import { MAX_WAITING_RECORDS, OBSERVATION_CHECKPOINT_MS, observationCheckpointDue } from './durability.ts';
import type { PipelineObserver } from './observer.ts';
import type { ApprovalParticipant } from './participants.ts';
import { type RoutedSink, routeRecords } from './route.ts';

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
 * Transitions of one poll not committed yet (a commit failed), in observation order. They are routed when they are
 * committed, to the sinks configured then (a reload may have changed them meanwhile).
 */
interface WaitingBatch {
  records: LifecycleRecord[];
  approvals: ApprovalInput[];
  observedAtMs: number;
}

export interface StepOptions {
  store: Store;
  logger: Logger;
  stats: ForwarderStats;
  /** The state loaded from the store (the committed one). */
  state: ForwarderState;
  routed: readonly RoutedSink[];
  identity: IdentitySource | undefined;
  /** The Kubernetes node context for records (`kubernetes.enabled`); undefined: records have no data.kubernetes. */
  kubernetes?: (() => KubernetesRecordContext) | undefined;
  bootTimeMs: number;
  /** The source's gap limit (BuiltSource.maxGapMs). */
  maxGapMs: number;
  stall: StallDetector;
  approval?: ApprovalParticipant | undefined;
  observer?: PipelineObserver | undefined;
  /** Wakes the delivery engine (once it has started) after a commit that added outbox rows. */
  notify: () => void;
  observationCheckpointMs?: number | undefined;
  maxWaitingRecords?: number | undefined;
}

/** The per-outcome step; see the module comment. `onOutcome` is the source's callback. */
export class PipelineStep {
  readonly #o: StepOptions;
  readonly #logger: Logger;
  /** The sinks records are routed to (StepOptions.routed until a reload replaces them: reroute()). */
  #routed: readonly RoutedSink[];
  /** The state in memory: that of the last document (or approval) seen; may run ahead of the committed one. */
  #state: ForwarderState;
  /** The last committed state (what a restart would load). */
  #durable: ForwarderState;
  /** False until #state is known to be the transform of the source's last document (unchanged-poll shortcut). */
  #followsSource = false;
  /** Changed documents (with their transitions) observed but not committed yet (commits failing), oldest first. */
  #waiting: WaitingBatch[] = [];
  #waitingRecords = 0;
  #consecutiveCommitFailures = 0;
  #lastCommitErrorLogMs = 0;
  #lastIdentityAttemptMs = Date.now();
  /** Until the first identity request has settled (and approval started): the first outcome waits for it. */
  #beforeFirstOutcome: Promise<void> | undefined;
  /** Resolves when the source delivers its first outcome (the first GET was answered). */
  readonly #firstOutcome = Promise.withResolvers<void>();
  readonly #firstHandled = Promise.withResolvers<void>();

  constructor(options: StepOptions) {
    this.#o = options;
    this.#logger = options.logger;
    this.#routed = options.routed;
    this.#state = options.state;
    this.#durable = options.state;
  }

  /** The in-memory state. */
  get state(): ForwarderState {
    return this.#state;
  }

  /** The last committed state (what a restart would load); periodic sends read it. */
  get committedState(): ForwarderState {
    return this.#durable;
  }

  /** Whether memory holds something the store does not (observation time, waiting transitions). */
  get aheadOfStore(): boolean {
    return this.#state !== this.#durable;
  }

  /**
   * The sinks of a reloaded configuration: the next commit routes its records to them (transitions still waiting
   * for the disk included), never an earlier one.
   */
  reroute(routed: readonly RoutedSink[]): void {
    this.#routed = routed;
  }

  /** Resolves when the source delivered its first outcome. */
  get firstOutcome(): Promise<void> {
    return this.#firstOutcome.promise;
  }

  /**
   * Resolves once the first outcome was taken in: the first identity read (and Kubernetes labels) had settled,
   * and the observer saw it (what a heartbeat reports is known by then).
   */
  get firstHandled(): Promise<void> {
    return this.#firstHandled.promise;
  }

  /** The first outcome is handled only once `ready` settles (the first identity request; see forwarder.ts). */
  holdFirstOutcomeUntil(ready: Promise<void>): void {
    this.#beforeFirstOutcome = ready.finally(() => {
      this.#beforeFirstOutcome = undefined;
    });
  }

  readonly onOutcome = async (outcome: PollOutcome): Promise<void> => {
    this.#firstOutcome.resolve();
    if (this.#beforeFirstOutcome !== undefined) await this.#beforeFirstOutcome;
    const { stats, identity, approval, stall } = this.#o;
    stats.outcomes++;
    this.#o.observer?.outcome?.(outcome);
    this.#firstHandled.resolve();
    if (outcome.kind === 'failure') {
      stats.failures++;
      // A failed poll never changes state (the poller logs failures once per streak); transitions waiting
      // for the disk are retried on every poll all the same.
      if (this.#waiting.length > 0) this.commit({ outcome });
      return;
    }
    // The identity is fetched at start (i.e. after every reboot) and refreshed periodically; while it is still
    // unknown, retry at most every 30 s so a broken instance endpoint never slows polling down.
    if (identity !== undefined && identity.current() === undefined) {
      const now = Date.now();
      if (now - this.#lastIdentityAttemptMs >= 30_000) {
        this.#lastIdentityAttemptMs = now;
        await identity.refresh();
        // Approval decisions wait for the identity; let the coordinator decide now rather than at the next commit.
        if (identity.current() !== undefined && this.#waiting.length === 0) {
          approval?.afterCommit({ state: this.#durable, records: [], approvals: [] });
        }
      }
    }
    const approvals = approval?.pendingApprovals() ?? []; // decided, not yet committed
    const maxStallMs = stall.takeMaxStallMs();
    const nowMs = outcome.observed.wallMs;
    if (!outcome.changed && approvals.length === 0 && this.#followsSource) {
      // The same document as the one #state came from: no record is possible; only the observation time and
      // the Started-window measurements move, in memory (src/pipeline/durability.ts says when they are written).
      stats.unchangedPolls++;
      this.#state = observeUnchanged(this.#state, {
        observedAtMs: nowMs,
        hostBootTimeMs: this.#o.bootTimeMs,
        maxStallMs,
      });
      const checkpointMs = this.#o.observationCheckpointMs ?? OBSERVATION_CHECKPOINT_MS;
      if (
        this.#waiting.length > 0 ||
        observationCheckpointDue(this.#state, this.#durable.lastObservedAtMs, nowMs, checkpointMs)
      ) {
        this.commit({ outcome });
      }
      return;
    }
    const result = transform(this.#state, {
      outcome,
      vm: identity?.current(),
      kubernetes: this.#o.kubernetes?.(),
      hostBootTimeMs: this.#o.bootTimeMs,
      maxStallMs,
      maxGapMs: this.#o.maxGapMs,
      approvals,
    });
    this.#state = result.state;
    this.#followsSource = true;
    stall.setFine(result.state.events.length > 0);
    // A changed document is committed at once, with or without records (the committed state then matches it);
    // until that commit succeeds it waits like a transition (one empty batch at most), so every poll retries it.
    // (Approvals already recorded in memory give no record again; afterCommit sees them in the committed state.)
    if (result.records.length > 0 || this.#waiting.length === 0) {
      this.#waiting.push({
        records: result.records,
        approvals,
        observedAtMs: nowMs,
      });
      this.#waitingRecords += result.records.length;
    }
    this.commit({ outcome });
  };

  /**
   * ONE commit of the in-memory state plus every waiting transition, in observation order. On success the
   * committed state catches up with memory; on a write error the transitions keep waiting (bounded).
   * `final`: at shutdown or when the source ended — no approval bookkeeping, and what cannot be committed
   * is reported as left to the next start's conservative inference.
   */
  commit(context: { outcome?: PollOutcome; final?: boolean }): boolean {
    const batches = this.#waiting;
    const state = this.#state;
    const records = batches.length === 1 ? batches[0]!.records : batches.flatMap((b) => b.records);
    const deliveries = routeRecords(records, this.#routed);
    try {
      this.#o.store.commit(state, deliveries);
    } catch (error) {
      if (!(error instanceof StoreWriteError)) throw error;
      this.#commitFailed(error, context.final === true);
      return false;
    }
    this.#durable = state;
    this.#waiting = [];
    this.#waitingRecords = 0;
    this.#o.stats.commits++;
    this.#o.stats.records += records.length;
    if (this.#consecutiveCommitFailures > 0) {
      this.#logger.info(
        { failedCommits: this.#consecutiveCommitFailures, records: records.length },
        'state store writable again; the transitions that waited in memory are committed, in order',
      );
      this.#consecutiveCommitFailures = 0;
    }
    if (context.final === true) return true;
    const approvals = batches.flatMap((b) => b.approvals);
    this.#o.approval?.afterCommit({ state, records, approvals });
    const rows = deliveries.reduce((n, d) => n + d.sinks.length, 0);
    if (context.outcome !== undefined) {
      this.#o.observer?.committed?.({ records, rows, outcome: context.outcome });
    }
    // After every commit, rows or not (before the engine starts, it finds the rows when it does). A commit with no
    // rows wakes the workers for nothing to send, but their read right after the commit takes SQLite's WAL read
    // mark while the commit is writing anyway; otherwise the first read after it (the engine's rescan, a minute
    // later) would write the WAL index on its own, the one write of an otherwise idle forwarder.
    this.#o.notify();
    for (const record of records) {
      this.#logger.debug({ id: record.id, type: record.type, subject: record.subject }, 'record committed');
    }
    return true;
  }

  #commitFailed(error: StoreWriteError, final: boolean): void {
    this.#o.stats.commitFailures++;
    this.#consecutiveCommitFailures++;
    const consecutive = this.#consecutiveCommitFailures;
    this.#o.observer?.commitFailed?.({ message: error.message, full: error.full, consecutive });
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
    const limit = this.#o.maxWaitingRecords ?? MAX_WAITING_RECORDS;
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

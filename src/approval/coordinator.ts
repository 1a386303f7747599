/**
 * ApprovalCoordinator: approval as the pipeline sees it (ApprovalParticipant, src/pipeline/participants.ts). The
 * pipeline calls `start(state)` once (after loading the committed state), passes `pendingApprovals()` to every
 * transform and calls `afterCommit(...)` after every successful commit. At each of these moments the coordinator
 * asks the pure plan (src/approval/plan.ts: policy and leader rule, hooks before the POST, dry run, NotBefore,
 * recover hooks, restart rules) what to do and hands the answer to the runner (src/approval/runner.ts: hooks,
 * StartRequests POSTs, progress persisted in the store's meta table, logs). See docs/approval.md.
 */
import type { LifecycleRecord } from '../domain/index.ts';
import type { ApprovalInput, ForwarderState } from '../transform/index.ts';
import { pendingApprovals, reconcile, resume } from './plan.ts';
import type { EventProgress } from './progress.ts';
import { ApprovalRunner, type ApprovalRunnerOptions } from './runner.ts';

export interface ApprovalCoordinatorOptions extends ApprovalRunnerOptions {
  /**
   * Told every committed step (after the plan ran): e.g. the Kubernetes reporter writing node Events and the
   * node condition. Must not throw or block (it queues its own I/O).
   */
  observer?: CommitObserver | undefined;
}

/** Sees every committed step; `stop` ends (or waits for) its queued I/O. */
export interface CommitObserver {
  observe(step: CommittedStep): void;
  stop(): Promise<void>;
}

/** What the pipeline committed. */
export interface CommittedStep {
  state: ForwarderState;
  records: readonly LifecycleRecord[];
  /** The approvals passed to the transform of this commit (from pendingApprovals()). */
  approvals: readonly ApprovalInput[];
}

/** See the module comment. */
export class ApprovalCoordinator {
  readonly #runner: ApprovalRunner;
  #config: ApprovalCoordinatorOptions['config'];
  readonly #observer: ApprovalCoordinatorOptions['observer'];
  #started = false;

  constructor(options: ApprovalCoordinatorOptions) {
    this.#runner = new ApprovalRunner(options);
    this.#config = options.config;
    this.#observer = options.observer;
  }

  /** Loads the persisted progress and resumes it against the last committed state. */
  start(state: ForwarderState): void {
    this.#started = true;
    this.#runner.track(state); // the resumed entries' events (a notice names the event's NotBefore)
    this.#runner.apply(resume(this.#runner.load(), this.#config));
    this.#reconcile(state, { records: [], approvals: [] });
    this.#observer?.observe({ state, records: [], approvals: [] });
  }

  /** Approvals decided but not yet committed: pass them to the next transform. */
  pendingApprovals(): ApprovalInput[] {
    return pendingApprovals(this.#runner.progress);
  }

  /** Call after every successful commit. */
  afterCommit(step: CommittedStep): void {
    if (!this.#started) this.start(step.state);
    this.#reconcile(step.state, step);
    this.#observer?.observe(step);
  }

  /**
   * A reload's new `approval` section: rules, leader, hooks and dry run apply to every decision and hook planned
   * from now on (events seen next, the next hook of an event being prepared); an event already decided keeps its
   * decision and a running hook or POST finishes, as across a restart. Persisted progress is kept.
   */
  reconfigure(config: ApprovalCoordinatorOptions['config']): void {
    this.#config = config;
    this.#runner.reconfigure(config);
  }

  /** Resolves when no hook job and no POST is in progress (tests, shutdown). */
  idle(): Promise<void> {
    return this.#runner.idle();
  }

  /** Ends running hooks and POST retries; progress stays persisted for the next start. */
  async stop(): Promise<void> {
    await this.#runner.stop();
    await this.#observer?.stop();
  }

  /** The persisted progress (tests, diagnostics). */
  progress(): readonly EventProgress[] {
    return this.#runner.progress;
  }

  #reconcile(state: ForwarderState, commit: Pick<CommittedStep, 'records' | 'approvals'>): void {
    this.#runner.track(state);
    this.#runner.apply(reconcile(this.#runner.progress, this.#runner.facts(), commit));
  }
}

/**
 * ApprovalCoordinator: the approval module's runtime. The pipeline calls `start(state)` once (after loading the
 * committed state), passes `pendingApprovals()` to every transform and calls `afterCommit(...)` after every
 * successful commit. From the committed state the coordinator:
 *  - decides each newly seen Scheduled event with the policy (first matching rule) and the leader rule;
 *  - runs the prepare hooks for events affecting this VM, then (leader, not dry-run) POSTs StartRequests for
 *    every ready event in one request, retried no faster than the poll interval until NotBefore;
 *  - turns what it did into ApprovalInputs, which the next transform records as `approved` records;
 *  - runs the recover hooks when an event affecting this VM is gone (Completed / Canceled).
 * Progress per event is persisted in the store's meta table before and after every step, so a restart neither
 * POSTs an approved event again nor re-runs finished hooks. See docs/approval.md.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LifecycleRecord, VmIdentity } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import { ImdsError } from '../sources/shared/errors.ts';
import { buildRecord } from '../transform/build-record.ts';
import {
  type ApprovalHookResult,
  type ApprovalInput,
  type ForwarderState,
  recordSource,
  type TrackedEvent,
} from '../transform/index.ts';
import type { ApprovalConfig, HookConfig } from './config.ts';
import {
  cannotPost,
  isScheduled,
  newProgress,
  notBeforeMs,
  prepareHooks,
  recoverHooks,
  settle,
} from './decision.ts';
import { type HookPhase, runHook } from './hooks.ts';
import {
  approvalRecordKind,
  type EventProgress,
  loadProgress,
  type MetaStore,
  progressKey,
  saveProgress,
} from './progress.ts';

/** The one IMDS call the coordinator makes. */
export interface ApprovalClient {
  approve(eventIds: string[], signal?: AbortSignal): Promise<void>;
}

export interface ApprovalCoordinatorOptions {
  config: ApprovalConfig;
  store: MetaStore;
  /** Undefined when there is no IMDS (replay source): nothing can be POSTed. */
  client: ApprovalClient | undefined;
  identity: () => VmIdentity | undefined;
  /** POST retries are never faster than this (the IMDS poll interval). */
  pollIntervalMs: number;
  logger: Logger;
  /** Wall clock, epoch ms (default Date.now). */
  now?: () => number;
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
  readonly #config: ApprovalConfig;
  readonly #store: MetaStore;
  readonly #client: ApprovalClient | undefined;
  readonly #identity: () => VmIdentity | undefined;
  readonly #pollIntervalMs: number;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #abort = new AbortController();
  #entries: EventProgress[] = [];
  #tracked = new Map<string, TrackedEvent>();
  /** Keys with a prepare/recover job running in this process. */
  readonly #jobs = new Map<string, Promise<void>>();
  #poster: Promise<void> | undefined;
  #postAgain = false;
  #lastPostAtMs = Number.NEGATIVE_INFINITY;
  #started = false;
  #warnedNoIdentity = false;

  constructor(options: ApprovalCoordinatorOptions) {
    this.#config = options.config;
    this.#store = options.store;
    this.#client = options.client;
    this.#identity = options.identity;
    this.#pollIntervalMs = options.pollIntervalMs;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /** Loads the persisted progress and resumes it against the last committed state. */
  start(state: ForwarderState): void {
    this.#entries = loadProgress(this.#store, (message) => this.#logger.error(message));
    this.#started = true;
    for (const entry of this.#entries) this.#resumeAfterRestart(entry);
    this.#reconcile(state, []);
  }

  /** Approvals decided but not yet committed: pass them to the next transform. */
  pendingApprovals(): ApprovalInput[] {
    return this.#entries.filter((e) => e.approval !== null && !e.recorded).map((e) => e.approval!);
  }

  /** Call after every successful commit. */
  afterCommit(step: CommittedStep): void {
    if (!this.#started) this.start(step.state);
    let changed = false;
    for (const approval of step.approvals) {
      for (const entry of this.#entries) {
        if (
          entry.approval === approval ||
          (entry.approval !== null && sameApproval(entry.approval, approval))
        ) {
          if (!entry.recorded) changed = true;
          entry.recorded = true;
        }
      }
    }
    if (changed) this.#persist();
    this.#reconcile(step.state, step.records);
  }

  /** Resolves when no hook job and no POST is in progress (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#jobs.size > 0 || this.#poster !== undefined) {
      await Promise.allSettled([...this.#jobs.values(), this.#poster]);
    }
  }

  /** Ends running hooks and POST retries; progress stays persisted for the next start. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.idle();
  }

  /** The persisted progress (tests, diagnostics). */
  progress(): readonly EventProgress[] {
    return this.#entries;
  }

  #resumeAfterRestart(entry: EventProgress): void {
    const rerun = this.#config.rerunHooksAfterRestart;
    const undecided = entry.approval === null && entry.post !== 'posted';
    if (entry.prepare === 'running') {
      if (rerun) {
        entry.prepare = 'pending';
        entry.hooks = [];
      } else {
        // A hook was running when the process died: its outcome is unknown, so it counts as failed.
        const interrupted = this.#prepareHooks(entry.eventType, entry.affectsThisVm)[entry.hooks.length];
        if (interrupted !== undefined) {
          entry.hooks.push({
            name: interrupted.name,
            ok: false,
            exitCode: null,
            durationMs: 0,
            timedOut: false,
          });
          this.#logger.warn(
            { eventId: entry.eventId, hook: interrupted.name },
            'a prepare hook was interrupted by a restart; counted as failed (set approval.rerunHooksAfterRestart to run it again)',
          );
        }
        entry.prepare = 'done';
      }
    } else if (entry.prepare === 'done' && rerun && undecided && !entry.ended) {
      // Configured to prepare again after a restart: the hooks run again before any (pending) POST.
      entry.prepare = 'pending';
      entry.hooks = [];
      entry.post = 'none';
    }
  }

  #reconcile(state: ForwarderState, records: readonly LifecycleRecord[]): void {
    this.#tracked = new Map(
      state.events.map((event) => [progressKey(event.eventId, event.occurrence), event]),
    );
    let changed = false;
    const vm = this.#identity();

    // Approvals the state already holds were committed (e.g. just before a crash): never record them twice.
    for (const entry of this.#entries) {
      const event = this.#tracked.get(entry.key);
      if (
        entry.approval !== null &&
        !entry.recorded &&
        event?.approvalsRecorded.includes(approvalRecordKind(entry.approval))
      ) {
        entry.recorded = true;
        changed = true;
      }
    }

    for (const event of state.events) {
      const key = progressKey(event.eventId, event.occurrence);
      if (this.#entries.some((e) => e.key === key)) continue;
      if (vm?.name === undefined || vm.name === '') {
        if (!this.#warnedNoIdentity) {
          this.#warnedNoIdentity = true;
          this.#logger.warn('VM identity unknown: approval decisions wait until it is known');
        }
        continue;
      }
      this.#entries.push(this.#newEntry(event, vm));
      changed = true;
    }

    for (const entry of this.#entries) {
      if (!entry.ended && !this.#tracked.has(entry.key)) {
        entry.ended = true;
        changed = true;
        if (entry.post === 'pending') this.#postFailed(entry, 'the event ended before it could be approved');
      }
    }
    if (changed) this.#persist();

    const terminal = new Map(
      records
        .filter((r) => r.transition === 'completed' || r.transition === 'canceled')
        .map((r) => [r.subject, r] as const),
    );
    for (const entry of this.#entries) this.#advance(entry, vm, terminal.get(entry.eventId));
    this.#prune();
    this.#schedulePost();
  }

  #newEntry(event: TrackedEvent, vm: VmIdentity): EventProgress {
    const entry = newProgress(this.#config, event, vm);
    const affected = entry.affectsThisVm;
    const leader = entry.leader;
    const scheduled = isScheduled(event);
    if (scheduled) {
      this.#logger.info(
        {
          eventId: entry.eventId,
          eventType: entry.eventType,
          eventSource: event.last.EventSource,
          durationInSeconds: event.last.DurationInSeconds,
          action: entry.action,
          rule: entry.rule,
          affectsThisVm: affected,
          leader,
          dryRun: entry.dryRun,
        },
        'approval decision',
      );
    }
    return entry;
  }

  #prepareHooks(eventType: string, affected: boolean): HookConfig[] {
    return prepareHooks(this.#config, eventType, affected);
  }

  #recoverHooks(eventType: string, affected: boolean): HookConfig[] {
    return recoverHooks(this.#config, eventType, affected);
  }

  /** Starts whatever the entry needs next (prepare hooks, the approval outcome, recover hooks). */
  #advance(entry: EventProgress, vm: VmIdentity | undefined, terminal: LifecycleRecord | undefined): void {
    if (this.#jobs.has(entry.key) || this.#abort.signal.aborted) return;
    const event = this.#tracked.get(entry.key);
    this.#settle(entry);
    if (!entry.ended && event !== undefined && entry.prepare === 'pending') {
      this.#startJob(entry, this.#runPrepare(entry, event, vm));
      return;
    }
    if (entry.ended && entry.recover === 'pending') {
      this.#startJob(entry, this.#runRecover(entry, vm, terminal));
    }
  }

  #startJob(entry: EventProgress, job: Promise<void>): void {
    const tracked = job
      .catch((error: unknown) =>
        this.#logger.error({ err: error, eventId: entry.eventId }, 'approval job failed'),
      )
      .finally(() => {
        this.#jobs.delete(entry.key);
        if (!this.#abort.signal.aborted) {
          this.#advance(entry, this.#identity(), undefined);
          this.#prune();
          this.#schedulePost();
        }
      });
    this.#jobs.set(entry.key, tracked);
  }

  /**
   * Decides what to record and whether to POST: `approve` at once (the leader does not wait for hooks),
   * `approve-after-hooks` once every prepare hook succeeded; a non-leader records its hooks once they finished.
   */
  #settle(entry: EventProgress): void {
    const base = { eventId: entry.eventId, rule: entry.rule, hooks: [...entry.hooks] };
    switch (settle(entry)) {
      case 'wait':
        return;
      case 'record-not-leader':
        // An affected non-leader did its own preparation: record it (leader false, never posted).
        this.#setApproval(entry, { ...base, approvedAtMs: this.#now(), leader: false, posted: false });
        return;
      case 'record-hook-failed':
        this.#logger.warn(
          { eventId: entry.eventId, hooks: entry.hooks },
          'not approving: a prepare hook failed',
        );
        this.#setApproval(entry, { ...base, approvedAtMs: this.#now(), leader: true, posted: false });
        return;
      case 'approve':
        this.#readyToApprove(entry);
    }
  }

  /** The leader is ready to approve: dry-run records it, otherwise it joins the next StartRequests POST. */
  #readyToApprove(entry: EventProgress): void {
    if (entry.dryRun) {
      this.#logger.info({ eventId: entry.eventId, rule: entry.rule }, 'dry-run: would approve (not POSTed)');
      this.#setApproval(entry, {
        eventId: entry.eventId,
        approvedAtMs: this.#now(),
        rule: entry.rule,
        leader: true,
        hooks: [...entry.hooks],
        dryRun: true,
        posted: false,
      });
      return;
    }
    entry.post = 'pending';
    this.#persist();
  }

  #setApproval(entry: EventProgress, approval: ApprovalInput): void {
    entry.approval = approval;
    entry.recorded = false;
    this.#persist();
  }

  #postFailed(entry: EventProgress, why: string): void {
    this.#logger.warn({ eventId: entry.eventId, why }, 'approval not POSTed');
    entry.post = 'failed';
    entry.approval = {
      eventId: entry.eventId,
      approvedAtMs: this.#now(),
      rule: entry.rule,
      leader: true,
      hooks: [...entry.hooks],
      posted: false,
    };
    entry.recorded = false;
  }

  async #runPrepare(entry: EventProgress, event: TrackedEvent, vm: VmIdentity | undefined): Promise<void> {
    const hooks = this.#prepareHooks(entry.eventType, entry.affectsThisVm);
    entry.prepare = 'running';
    this.#persist();
    const record = buildRecord({ vm, source: recordSource(vm) }, event, {
      transition: 'scheduled',
      timeMs: event.firstSeenAtMs,
      incarnation: event.lastIncarnation,
    });
    for (const hook of hooks.slice(entry.hooks.length)) {
      const current = this.#tracked.get(entry.key) ?? event;
      const nb = notBeforeMs(current);
      const deadlineMs = nb === null ? null : nb - this.#config.safetyMarginMs;
      const timeoutMs =
        deadlineMs === null ? hook.timeoutMs : Math.min(hook.timeoutMs, deadlineMs - this.#now());
      const result = await runHook(hook, {
        phase: 'prepare',
        event: current.last,
        record,
        affectsThisVm: entry.affectsThisVm,
        leader: entry.leader,
        vmName: vm?.name ?? '',
        timeoutMs,
        deadline: deadlineMs === null ? null : new Date(deadlineMs).toISOString(),
        maxOutputBytes: this.#config.maxHookOutputBytes,
        signal: this.#abort.signal,
        logger: this.#logger,
      });
      if (this.#abort.signal.aborted) {
        // Stopped gracefully: the interrupted hook runs again (from where we stopped) after the restart.
        entry.prepare = 'pending';
        this.#persist();
        return;
      }
      entry.hooks.push(result);
      this.#persist();
      if (!result.ok) break; // the remaining hooks are not run: the event will not be approved anyway
    }
    entry.prepare = 'done';
    this.#persist();
    this.#logger.info({ eventId: entry.eventId, hooks: entry.hooks }, 'prepare hooks finished');
  }

  async #runRecover(
    entry: EventProgress,
    vm: VmIdentity | undefined,
    terminal: LifecycleRecord | undefined,
  ): Promise<void> {
    const hooks = this.#recoverHooks(entry.eventType, entry.affectsThisVm);
    const event = {
      EventId: entry.eventId,
      EventType: entry.eventType,
      EventStatus: terminal?.data.EventStatus ?? '',
      ResourceType: terminal?.data.ResourceType ?? 'VirtualMachine',
      Resources: terminal?.data.Resources ?? [],
      NotBefore: terminal?.data.NotBefore ?? '',
      notBeforeUtc: terminal?.data.notBeforeUtc ?? null,
      Description: terminal?.data.Description ?? '',
      EventSource: terminal?.data.EventSource ?? '',
      DurationInSeconds: terminal?.data.DurationInSeconds ?? -1,
    };
    const record = terminal ?? {
      subject: entry.eventId,
      transition: 'completed',
      data: { EventId: entry.eventId, EventType: entry.eventType },
    };
    for (const hook of hooks) {
      await runHook(hook, {
        phase: 'recover',
        event,
        record,
        affectsThisVm: entry.affectsThisVm,
        leader: entry.leader,
        vmName: vm?.name ?? '',
        timeoutMs: hook.timeoutMs,
        deadline: null,
        maxOutputBytes: this.#config.maxHookOutputBytes,
        signal: this.#abort.signal,
        logger: this.#logger,
      });
      if (this.#abort.signal.aborted) return; // recover hooks run again after the restart
    }
    entry.recover = 'done';
    this.#persist();
  }

  #schedulePost(): void {
    if (!this.#entries.some((e) => e.post === 'pending') || this.#abort.signal.aborted) return;
    if (this.#poster !== undefined) {
      this.#postAgain = true;
      return;
    }
    this.#poster = this.#postLoop()
      .catch((error: unknown) => this.#logger.error({ err: error }, 'approval POST loop failed'))
      .finally(() => {
        this.#poster = undefined;
        if (this.#postAgain) {
          this.#postAgain = false;
          this.#schedulePost();
        }
      });
  }

  /** POSTs every pending approval in one StartRequests request; retries until NotBefore. */
  async #postLoop(): Promise<void> {
    const signal = this.#abort.signal;
    // Let approvals that become ready in the same turn join one request.
    await sleep(0, undefined, { signal }).catch(() => {});
    while (!signal.aborted) {
      const now = this.#now();
      const ready: EventProgress[] = [];
      for (const entry of this.#entries.filter((e) => e.post === 'pending')) {
        const why = cannotPost(this.#tracked.get(entry.key), now, this.#client !== undefined);
        if (why === null) ready.push(entry);
        else this.#postFailed(entry, why);
      }
      this.#persist();
      if (ready.length === 0) return;
      const waitMs = this.#lastPostAtMs + this.#pollIntervalMs - now;
      if (waitMs > 0) {
        await sleep(waitMs, undefined, { signal }).catch(() => {});
        continue; // re-check: events may have started or lapsed meanwhile
      }
      const eventIds = ready.map((e) => e.eventId);
      this.#lastPostAtMs = now;
      this.#logger.info({ eventIds }, 'posting StartRequests');
      try {
        await this.#client!.approve(eventIds, signal);
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ImdsError && !error.retryable) {
          for (const entry of ready) this.#postFailed(entry, `IMDS rejected the approval: ${error.message}`);
          this.#persist();
          return;
        }
        const retryMs = Math.max(
          this.#pollIntervalMs,
          error instanceof ImdsError ? (error.retryAfterMs ?? 0) : 0,
        );
        this.#logger.warn(
          { eventIds, err: (error as Error).message, retryMs },
          'approval POST failed; retrying',
        );
        this.#lastPostAtMs = this.#now() + retryMs - this.#pollIntervalMs;
        continue;
      }
      const approvedAtMs = this.#now();
      for (const entry of ready) {
        entry.post = 'posted';
        entry.approval = {
          eventId: entry.eventId,
          approvedAtMs,
          rule: entry.rule,
          leader: true,
          hooks: [...entry.hooks],
          posted: true,
        };
        entry.recorded = false;
      }
      this.#persist();
      this.#logger.info({ eventIds }, 'approved: StartRequests accepted');
    }
  }

  /** Forgets entries of ended events once everything about them is recorded and recovered. */
  #prune(): void {
    const before = this.#entries.length;
    this.#entries = this.#entries.filter(
      (e) =>
        !e.ended ||
        this.#jobs.has(e.key) ||
        e.post === 'pending' ||
        e.recover === 'pending' ||
        (e.approval !== null && !e.recorded),
    );
    if (this.#entries.length !== before) this.#persist();
  }

  #persist(): void {
    try {
      saveProgress(this.#store, this.#entries);
    } catch (error) {
      this.#logger.error(
        { err: (error as Error).message },
        'cannot persist approval progress; a restart now could repeat hooks or an approval',
      );
    }
  }
}

function sameApproval(a: ApprovalInput, b: ApprovalInput): boolean {
  return (
    a.eventId === b.eventId &&
    a.approvedAtMs === b.approvedAtMs &&
    approvalRecordKind(a) === approvalRecordKind(b)
  );
}

export type { ApprovalHookResult, HookPhase };

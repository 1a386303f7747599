/**
 * The approval runner: does what the pure plan (src/approval/plan.ts) says — logs, persists the progress in the
 * store's meta table, runs prepare and recover hooks (src/approval/hooks.ts), POSTs StartRequests through the
 * source's approval client — and, whenever a hook job or a POST ends, asks the plan what comes next. It holds
 * the progress, the last committed state's events and the jobs in flight; it decides nothing itself.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { VmIdentity } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { SourceRequestError } from '../sources/errors.ts';
import type { MetaStore } from '../store/index.ts';
import { buildRecord } from '../transform/build-record.ts';
import { type ForwarderState, recordSource, type TrackedEvent } from '../transform/index.ts';
import type { ApprovalConfig } from './config.ts';
import { cannotPost, isScheduled, notBeforeMs, recoverHooks } from './decision.ts';
import { type BuiltinHooks, type HookRun, runHook } from './hooks.ts';
import { type PeerGate, peersBlockedReason, prepareStates } from './peers.ts';
import {
  type ApprovalNotice,
  advance,
  nextPrepareHook,
  type PeersOutcome,
  type Plan,
  type PlanAction,
  type PlanFacts,
  type PostFailure,
  peersChecked,
  phaseDone,
  planPost,
  postAccepted,
  postFailed,
  prepareHookEnded,
  trackedByKey,
} from './plan.ts';
import { type EventProgress, loadProgress, saveProgress } from './progress.ts';

/** The one IMDS call approval makes (SourceApproval: it rejects with a SourceRequestError, or anything else). */
export interface ApprovalClient {
  approve(eventIds: string[], signal?: AbortSignal): Promise<void>;
}

export interface ApprovalRunnerOptions {
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
  /** Built-in hooks (`builtin:` entries), e.g. the Kubernetes node actions; none: such hooks fail. */
  builtins?: BuiltinHooks | undefined;
  /**
   * Told what an operator should see on this VM's node (a restart interrupted a prepare hook), with the event's
   * NotBefore when known; e.g. the Kubernetes reporter writes a node Event. Must not throw or block.
   */
  notify?: ((notice: ApprovalNotice, notBefore: string | null) => void) | undefined;
  /**
   * The peer gate (src/approval/peers.ts; on Kubernetes the cluster's Nodes): this VM's prepare states are
   * published through it, and an `approve-after-hooks` approval of an event affecting other VMs waits for them.
   */
  peers?: PeerGate | undefined;
}

type Job = Extract<PlanAction, { kind: 'prepare' | 'recover' | 'peers' }>;

export class ApprovalRunner {
  readonly #o: ApprovalRunnerOptions;
  /** The options' config until reconfigure() replaces it. */
  #config: ApprovalConfig;
  readonly #now: () => number;
  readonly #abort = new AbortController();
  #progress: EventProgress[] = [];
  #tracked = new Map<string, TrackedEvent>();
  /** Keys with a prepare/recover job running in this process. */
  readonly #jobs = new Map<string, Promise<void>>();
  #poster: Promise<void> | undefined;
  #postAgain = false;
  #lastPostAtMs = Number.NEGATIVE_INFINITY;
  readonly #loggedOnce = new Set<string>();

  constructor(options: ApprovalRunnerOptions) {
    this.#o = options;
    this.#config = options.config;
    this.#now = options.now ?? Date.now;
  }

  /** Decisions, hooks and POSTs planned from now on follow `config` (a reload); running jobs finish as they are. */
  reconfigure(config: ApprovalConfig): void {
    this.#config = config;
  }

  get progress(): readonly EventProgress[] {
    return this.#progress;
  }

  /** The persisted progress (an unreadable value is logged and treated as empty). */
  load(): EventProgress[] {
    return loadProgress(this.#o.store, (message) => this.#o.logger.error(message));
  }

  /** The committed state the plans and jobs work from. */
  track(state: ForwarderState): void {
    this.#tracked = trackedByKey(state.events);
  }

  /** The facts of this moment, for a plan. */
  facts(): PlanFacts {
    return {
      config: this.#config,
      tracked: this.#tracked,
      vm: this.#o.identity(),
      nowMs: this.#now(),
      busy: new Set(this.#jobs.keys()),
      stopped: this.#abort.signal.aborted,
      peers: this.#o.peers !== undefined,
    };
  }

  /** Takes the plan's progress and does its actions. */
  apply(plan: Plan): void {
    this.#progress = plan.progress;
    for (const action of plan.actions) {
      switch (action.kind) {
        case 'log':
          this.#log(action);
          break;
        case 'notice':
          this.#o.notify?.(action.notice, this.#tracked.get(action.notice.key)?.last.notBeforeUtc ?? null);
          break;
        case 'persist':
          this.#persist();
          break;
        case 'prepare':
        case 'recover':
        case 'peers':
          this.#startJob(action);
          break;
        case 'post':
          this.#schedulePost();
      }
    }
    // A forwarder with an approval policy publishes its preparation; without one it prepares nothing (and the
    // others, finding nothing published, do not approve events affecting this VM).
    const { rules, hooks } = this.#config;
    if (rules.length > 0 || hooks.prepare.length > 0) this.#o.peers?.publish(prepareStates(this.#progress));
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

  #log(action: Extract<PlanAction, { kind: 'log' }>): void {
    if (action.once) {
      if (this.#loggedOnce.has(action.message)) return;
      this.#loggedOnce.add(action.message);
    }
    if (action.fields === undefined) this.#o.logger[action.level](action.message);
    else this.#o.logger[action.level](action.fields, action.message);
  }

  #persist(): void {
    try {
      saveProgress(this.#o.store, this.#progress);
    } catch (error) {
      this.#o.logger.error(
        { err: errorMessage(error) },
        'cannot persist approval progress; a restart now could repeat hooks or an approval',
      );
    }
  }

  #entry(key: string): EventProgress | undefined {
    return this.#progress.find((e) => e.key === key);
  }

  #startJob(job: Job): void {
    const run =
      job.kind === 'prepare'
        ? this.#runPrepare(job)
        : job.kind === 'recover'
          ? this.#runRecover(job)
          : this.#runPeers(job);
    const tracked = run
      .catch((error: unknown) =>
        this.#o.logger.error({ err: error, eventId: this.#entry(job.key)?.eventId }, 'approval job failed'),
      )
      .finally(() => {
        this.#jobs.delete(job.key);
        if (!this.#abort.signal.aborted) this.apply(advance(this.#progress, this.facts()));
      });
    this.#jobs.set(job.key, tracked);
  }

  /** What every hook run of the entry shares. */
  #hookRun(
    entry: EventProgress,
    vm: VmIdentity | undefined,
  ): Omit<HookRun, 'phase' | 'event' | 'record' | 'timeoutMs' | 'deadline'> {
    return {
      affectsThisVm: entry.affectsThisVm,
      leader: entry.leader,
      vmName: vm?.name ?? '',
      maxOutputBytes: this.#config.maxHookOutputBytes,
      signal: this.#abort.signal,
      logger: this.#o.logger,
    };
  }

  async #runPrepare({ key, event }: Extract<Job, { kind: 'prepare' }>): Promise<void> {
    const first = this.#entry(key);
    if (first === undefined) return;
    const vm = this.#o.identity();
    const common = this.#hookRun(first, vm);
    const record = buildRecord({ vm, source: recordSource(vm) }, event, {
      transition: 'scheduled',
      timeMs: event.firstSeenAtMs,
      incarnation: event.lastIncarnation,
    });
    for (;;) {
      const entry = this.#entry(key);
      const current = this.#tracked.get(key) ?? event;
      const step = entry === undefined ? null : nextPrepareHook(this.#config, entry, current, this.#now());
      if (step === null) break;
      const result = await runHook(
        step.hook,
        {
          ...common,
          phase: 'prepare',
          event: current.last,
          record,
          timeoutMs: step.timeoutMs,
          deadline: step.deadline,
        },
        this.#o.builtins,
      );
      const stopped = this.#abort.signal.aborted;
      this.#progress = prepareHookEnded(this.#progress, key, stopped ? null : result);
      this.#persist();
      if (stopped) return;
    }
    this.#progress = phaseDone(this.#progress, key, 'prepare');
    this.#persist();
    const entry = this.#entry(key);
    this.#o.logger.info({ eventId: entry?.eventId, hooks: entry?.hooks }, 'prepare hooks finished');
  }

  async #runRecover({ key, terminal }: Extract<Job, { kind: 'recover' }>): Promise<void> {
    const entry = this.#entry(key);
    if (entry === undefined) return;
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
    const common = this.#hookRun(entry, this.#o.identity());
    for (const hook of recoverHooks(this.#config, entry.eventType, entry.affectsThisVm)) {
      await runHook(
        hook,
        {
          ...common,
          phase: 'recover',
          event,
          record,
          timeoutMs: hook.timeoutMs,
          deadline: null,
        },
        this.#o.builtins,
      );
      if (this.#abort.signal.aborted) return; // recover hooks run again after the restart
    }
    this.#progress = phaseDone(this.#progress, key, 'recover');
    this.#persist();
  }

  /**
   * Checks the other affected VMs every PeerGate.pollIntervalMs until all are ready (the approval goes ahead), one
   * will not be (blocked), or waiting is pointless — the event started or ended, or NotBefore passed (it starts
   * without us then anyway); then hands the outcome to the plan (peersChecked). Stopped: nothing is recorded, the
   * check starts again after the restart.
   */
  async #runPeers({ key, eventId, others }: Extract<Job, { kind: 'peers' }>): Promise<void> {
    const gate = this.#o.peers;
    if (gate === undefined) return;
    const signal = this.#abort.signal;
    for (;;) {
      // Started (another VM's approval, or Azure) or ended meanwhile: nothing to wait for, nor to POST.
      const current = this.#tracked.get(key);
      const gone =
        current === undefined || !isScheduled(current) ? cannotPost(current, this.#now(), true) : null;
      const check = gone === null ? await gate.check(eventId, others, signal) : undefined;
      if (signal.aborted) return;
      const event = this.#tracked.get(key);
      const nb = event === undefined ? null : notBeforeMs(event);
      const nowMs = this.#now();
      let outcome: PeersOutcome | undefined;
      if (check === undefined) {
        outcome = { ready: false, reason: gone ?? 'the event is no longer Scheduled' };
      } else if (check.blocked.length > 0) {
        outcome = { ready: false, reason: peersBlockedReason([...check.blocked, ...check.waiting], null) };
      } else if (check.waiting.length === 0) {
        outcome = { ready: true };
      } else if (event === undefined || !isScheduled(event)) {
        outcome = {
          ready: false,
          reason: cannotPost(event, nowMs, true) ?? 'the event is no longer Scheduled',
        };
      } else if (nb !== null && nowMs >= nb) {
        outcome = { ready: false, reason: peersBlockedReason(check.waiting, 'NotBefore came first') };
      }
      if (outcome !== undefined) {
        if (outcome.ready) this.#o.logger.info({ eventId, others }, 'the other affected VMs are prepared');
        this.apply(peersChecked(this.#progress, key, outcome, nowMs));
        return;
      }
      const waitMs = Math.min(gate.pollIntervalMs, nb === null ? gate.pollIntervalMs : nb - nowMs);
      await sleep(Math.max(0, waitMs), undefined, { signal }).catch(() => {});
      if (signal.aborted) return;
    }
  }

  #schedulePost(): void {
    if (this.#abort.signal.aborted) return;
    if (this.#poster !== undefined) {
      this.#postAgain = true;
      return;
    }
    this.#poster = this.#postLoop()
      .catch((error: unknown) => this.#o.logger.error({ err: error }, 'approval POST loop failed'))
      .finally(() => {
        this.#poster = undefined;
        if (this.#postAgain) {
          this.#postAgain = false;
          if (this.#progress.some((e) => e.post === 'pending')) this.#schedulePost();
        }
      });
  }

  /** POSTs every pending approval in one StartRequests request, as planPost says, until none is left. */
  async #postLoop(): Promise<void> {
    const { client, pollIntervalMs } = this.#o;
    const signal = this.#abort.signal;
    // Let approvals that become ready in the same turn join one request.
    await sleep(0, undefined, { signal }).catch(() => {});
    while (!signal.aborted) {
      const nowMs = this.#now();
      const round = planPost(this.#progress, {
        tracked: this.#tracked,
        nowMs,
        hasClient: client !== undefined,
        lastPostAtMs: this.#lastPostAtMs,
        pollIntervalMs,
      });
      this.apply(round);
      const next = round.next;
      if (next.kind === 'done') return;
      if (next.kind === 'wait') {
        await sleep(next.ms, undefined, { signal }).catch(() => {});
        continue; // re-check: events may have started or lapsed meanwhile
      }
      this.#lastPostAtMs = nowMs;
      this.#o.logger.info({ eventIds: next.eventIds }, 'posting StartRequests');
      try {
        await client!.approve(next.eventIds, signal);
      } catch (error) {
        if (signal.aborted) return;
        const failed = postFailed(this.#progress, next, postFailure(error), {
          nowMs: this.#now(),
          pollIntervalMs,
        });
        this.apply(failed);
        if (failed.retry === null) return;
        this.#lastPostAtMs = failed.retry.lastPostAtMs;
        continue;
      }
      this.apply(postAccepted(this.#progress, next, this.#now()));
    }
  }
}

/**
 * The client's error as the plan sees it: a source's request error (an IMDS rejection) says whether to retry,
 * anything else is retried.
 */
function postFailure(error: unknown): PostFailure {
  if (!(error instanceof SourceRequestError)) return { message: errorMessage(error), retryable: true };
  return { message: error.message, retryable: error.retryable, retryAfterMs: error.retryAfterMs };
}

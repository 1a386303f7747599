/**
 * The approval state machine as pure functions: given the per-event progress and the facts of the moment (the
 * committed state's events, the config, the VM identity, `nowMs`, which events have a hook job running), each
 * returns the next progress and the actions to take — log, persist the progress, run an event's prepare or
 * recover hooks, POST StartRequests. No I/O, no clock reads; table-tested in test/unit/approval/plan.test.ts.
 * The runner (src/approval/runner.ts) executes the actions; the coordinator (src/approval/coordinator.ts) asks
 * these functions at the pipeline's moments (start, after every commit). The single-event rules they apply
 * (policy decision, settle, can it still be POSTed) are in src/approval/decision.ts.
 */
import type { LifecycleRecord, VmIdentity } from '../domain/index.ts';
import type { ApprovalHookResult, ApprovalInput, TrackedEvent } from '../transform/index.ts';
import type { ApprovalConfig, HookConfig } from './config.ts';
import {
  cannotPost,
  hookFailureReason,
  isScheduled,
  newProgress,
  notBeforeMs,
  prepareHooks,
  settle,
} from './decision.ts';
import { otherResources } from './peers.ts';
import { approvalRecordKind, type EventProgress, progressKey } from './progress.ts';

/**
 * Something an operator looking at this VM's node should see (through ApprovalRunnerOptions.notify: on
 * Kubernetes, a node Event): a restart interrupted a prepare hook — counted as failed, or (`rerun`) run again.
 */
export interface ApprovalNotice {
  kind: 'prepare-interrupted';
  key: string;
  eventId: string;
  eventType: string;
  hook: string;
  rerun: boolean;
}

/** What the runner does, in order. */
export type PlanAction =
  /** `once`: logged at most once per process (the runner remembers the message). */
  | { kind: 'log'; level: 'info' | 'warn'; message: string; fields?: Record<string, unknown>; once?: true }
  /** Tell the operator (ApprovalRunnerOptions.notify). */
  | { kind: 'notice'; notice: ApprovalNotice }
  /** Write the whole progress to the store (after the plan's changes; before the jobs below start). */
  | { kind: 'persist' }
  /** Run the event's remaining prepare hooks (the plan already marked it `running`). */
  | { kind: 'prepare'; key: string; event: TrackedEvent }
  /** Run the event's recover hooks; `terminal` is its completed/canceled record when this commit holds it. */
  | { kind: 'recover'; key: string; terminal: LifecycleRecord | undefined }
  /** Wait until the other VMs in Resources (`others`) are prepared for the event (see PeerGate), then peersChecked. */
  | { kind: 'peers'; key: string; eventId: string; others: string[] }
  /** Approvals wait to be POSTed: start the POST loop (see planPost) unless it runs. */
  | { kind: 'post' };

export interface Plan {
  progress: EventProgress[];
  actions: PlanAction[];
}

/** The facts a plan is made from. */
export interface PlanFacts {
  config: ApprovalConfig;
  /** The last committed state's events, by progress key (see trackedByKey). */
  tracked: ReadonlyMap<string, TrackedEvent>;
  vm: VmIdentity | undefined;
  nowMs: number;
  /** Keys with a hook job running in this process: their entries wait for it. */
  busy: ReadonlySet<string>;
  /** Stopping: no new job, no POST. */
  stopped: boolean;
  /**
   * A peer gate is configured (src/approval/peers.ts): an `approve-after-hooks` approval of an event whose
   * Resources name other VMs waits until they are all prepared. Absent: false.
   */
  peers?: boolean;
}

/** Accumulates one plan: entries are copied before they change, actions are ordered logs → persist → jobs. */
class Planner {
  readonly #logs: PlanAction[] = [];
  readonly #jobs: PlanAction[] = [];
  #changed = false;
  #post = false;
  progress: EventProgress[];

  constructor(progress: readonly EventProgress[]) {
    this.progress = [...progress];
  }

  update(index: number, change: Partial<EventProgress>): EventProgress {
    const next = { ...this.progress[index]!, ...change };
    this.progress[index] = next;
    this.#changed = true;
    return next;
  }

  add(entry: EventProgress): void {
    this.progress.push(entry);
    this.#changed = true;
  }

  changed(): void {
    this.#changed = true;
  }

  log(level: 'info' | 'warn', message: string, fields?: Record<string, unknown>, once?: true): void {
    this.#logs.push({
      kind: 'log',
      level,
      message,
      ...(fields === undefined ? {} : { fields }),
      ...(once ? { once } : {}),
    });
  }

  notice(notice: ApprovalNotice): void {
    this.#logs.push({ kind: 'notice', notice });
  }

  job(action: PlanAction): void {
    this.#jobs.push(action);
  }

  post(): void {
    this.#post = true;
  }

  plan(): Plan {
    return {
      progress: this.progress,
      actions: [
        ...this.#logs,
        ...(this.#changed ? [{ kind: 'persist' } as const] : []),
        ...this.#jobs,
        ...(this.#post ? [{ kind: 'post' } as const] : []),
      ],
    };
  }
}

export function trackedByKey(events: readonly TrackedEvent[]): Map<string, TrackedEvent> {
  return new Map(events.map((event) => [progressKey(event.eventId, event.occurrence), event]));
}

/** The approvals decided but not yet committed: the next transform records them. */
export function pendingApprovals(progress: readonly EventProgress[]): ApprovalInput[] {
  return progress.filter((e) => e.approval !== null && !e.recorded).map((e) => e.approval!);
}

/**
 * After a restart (the progress just loaded): a prepare hook that was running when the process died counts as
 * failed (its outcome is unknown) — or, with `rerunHooksAfterRestart`, the prepare hooks of every undecided
 * event run again before any POST. Not persisted by itself: the next step that changes anything writes it.
 */
export function resume(progress: readonly EventProgress[], config: ApprovalConfig): Plan {
  const p = new Planner([]);
  const rerun = config.rerunHooksAfterRestart;
  for (const entry of progress) {
    const undecided = entry.approval === null && entry.post !== 'posted';
    const interrupted =
      entry.prepare === 'running'
        ? prepareHooks(config, entry.eventType, entry.affectsThisVm)[entry.hooks.length]
        : undefined;
    if (interrupted !== undefined) {
      const { key, eventId, eventType } = entry;
      p.notice({ kind: 'prepare-interrupted', key, eventId, eventType, hook: interrupted.name, rerun });
    }
    if (entry.peers === 'checking') {
      // Waiting for the other VMs when the process stopped: the check starts again (it only reads).
      p.progress.push({ ...entry, peers: undefined });
    } else if (entry.prepare === 'running' && rerun) {
      p.progress.push({ ...entry, prepare: 'pending', hooks: [] });
    } else if (entry.prepare === 'running') {
      const hooks = [...entry.hooks];
      if (interrupted !== undefined) {
        hooks.push({
          name: interrupted.name,
          ok: false,
          exitCode: null,
          durationMs: 0,
          timedOut: false,
          detail: 'interrupted by a restart of the forwarder: its outcome is unknown',
        });
        p.log(
          'warn',
          'a prepare hook was interrupted by a restart; counted as failed (set approval.rerunHooksAfterRestart to run it again)',
          { eventId: entry.eventId, hook: interrupted.name },
        );
      }
      p.progress.push({ ...entry, prepare: 'done', hooks });
    } else if (entry.prepare === 'done' && rerun && undecided && !entry.ended) {
      // Configured to prepare again after a restart: the hooks run again before any (pending) POST.
      p.progress.push({ ...entry, prepare: 'pending', hooks: [], post: 'none' });
    } else {
      p.progress.push(entry);
    }
  }
  return p.plan();
}

export interface Commit {
  /** The records of this commit (their completed/canceled records go to the recover hooks). */
  records: readonly LifecycleRecord[];
  /** The approvals this commit recorded (from pendingApprovals()). */
  approvals: readonly ApprovalInput[];
}

/**
 * After a commit (and at start, with no records): marks the committed approvals recorded (also those the state
 * already lists — committed just before a crash — so nothing is recorded twice), decides each newly seen event
 * (the policy's first matching rule and the leader rule; not before the VM identity is known), ends the entries
 * whose event is gone (a pending POST then fails), then advances every entry (see advance).
 */
export function reconcile(progress: readonly EventProgress[], facts: PlanFacts, commit: Commit): Plan {
  const p = new Planner(progress);
  for (const approval of commit.approvals) {
    p.progress.forEach((entry, i) => {
      const same =
        entry.approval === approval || (entry.approval !== null && sameApproval(entry.approval, approval));
      if (same && !entry.recorded) p.update(i, { recorded: true });
    });
  }
  p.progress.forEach((entry, i) => {
    const event = facts.tracked.get(entry.key);
    if (
      entry.approval !== null &&
      !entry.recorded &&
      event?.approvalsRecorded.includes(approvalRecordKind(entry.approval))
    ) {
      p.update(i, { recorded: true });
    }
  });

  // Without rules and hooks every decision is "never" and nothing runs: nothing worth a line per event.
  const { rules, hooks } = facts.config;
  const policy = rules.length > 0 || hooks.prepare.length > 0 || hooks.recover.length > 0;
  for (const [key, event] of facts.tracked) {
    if (p.progress.some((e) => e.key === key)) continue;
    const vm = facts.vm;
    if (vm?.name === undefined || vm.name === '') {
      if (policy)
        p.log('warn', 'VM identity unknown: approval decisions wait until it is known', undefined, true);
      continue;
    }
    const entry = newProgress(facts.config, event, vm);
    if (isScheduled(event) && policy) {
      p.log('info', 'approval decision', {
        eventId: entry.eventId,
        eventType: entry.eventType,
        eventSource: event.last.EventSource,
        durationInSeconds: event.last.DurationInSeconds,
        action: entry.action,
        rule: entry.rule,
        affectsThisVm: entry.affectsThisVm,
        leader: entry.leader,
        dryRun: entry.dryRun,
      });
    }
    p.add(entry);
  }

  p.progress.forEach((entry, i) => {
    if (entry.ended || facts.tracked.has(entry.key)) return;
    const ended = p.update(i, { ended: true });
    if (ended.post === 'pending') notPosted(p, i, 'the event ended before it could be approved', facts.nowMs);
  });

  const terminal = new Map(
    commit.records
      .filter((r) => r.transition === 'completed' || r.transition === 'canceled')
      .map((r) => [r.subject, r] as const),
  );
  return advanceWith(p, facts, terminal);
}

/**
 * Starts whatever each entry without a running job needs next: settles it (see settle in decision.ts: record,
 * or mark it for the next POST — a dry run only logs and records), runs its prepare hooks while the event is
 * tracked, its recover hooks once it ended; then forgets entries with nothing left to do and asks for a POST
 * when approvals wait. Nothing starts while stopping.
 */
export function advance(
  progress: readonly EventProgress[],
  facts: PlanFacts,
  terminal: ReadonlyMap<string, LifecycleRecord> = new Map(),
): Plan {
  return advanceWith(new Planner(progress), facts, terminal);
}

function advanceWith(p: Planner, facts: PlanFacts, terminal: ReadonlyMap<string, LifecycleRecord>): Plan {
  const started = new Set<string>();
  if (!facts.stopped) {
    p.progress.forEach((entry, i) => {
      if (facts.busy.has(entry.key)) return;
      const settled = settleEntry(p, i, facts);
      if (settled.peers === 'checking' && !facts.busy.has(settled.key)) started.add(settled.key);
      const event = facts.tracked.get(settled.key);
      if (!settled.ended && event !== undefined && settled.prepare === 'pending') {
        p.update(i, { prepare: 'running' });
        p.job({ kind: 'prepare', key: settled.key, event });
        started.add(settled.key);
      } else if (settled.ended && settled.recover === 'pending') {
        p.job({ kind: 'recover', key: settled.key, terminal: terminal.get(settled.eventId) });
        started.add(settled.key);
      }
    });
  }
  // Forget entries of ended events once everything about them is recorded and recovered.
  const before = p.progress.length;
  p.progress = p.progress.filter(
    (e) =>
      !e.ended ||
      facts.busy.has(e.key) ||
      started.has(e.key) ||
      e.post === 'pending' ||
      e.recover === 'pending' ||
      (e.approval !== null && !e.recorded),
  );
  if (p.progress.length !== before) p.changed();
  if (!facts.stopped && p.progress.some((e) => e.post === 'pending')) p.post();
  return p.plan();
}

/** Applies settle(): `approve` at once (the leader does not wait for hooks), `approve-after-hooks` once every
 * prepare hook succeeded; a non-leader records its hooks once they finished. */
function settleEntry(p: Planner, i: number, facts: PlanFacts): EventProgress {
  const { nowMs } = facts;
  const entry = p.progress[i]!;
  const base = { eventId: entry.eventId, rule: entry.rule, hooks: [...entry.hooks], approvedAtMs: nowMs };
  switch (settle(entry)) {
    case 'wait':
      return entry;
    case 'record-not-leader': {
      // An affected non-leader did its own preparation: record it (leader false, never posted).
      const failed = hookFailureReason(entry.hooks);
      const approval = { ...base, leader: false, posted: false };
      return p.update(i, {
        approval: failed === undefined ? approval : { ...approval, notPostedReason: failed },
        recorded: false,
      });
    }
    case 'record-hook-failed':
      p.log('warn', 'not approving: a prepare hook failed', { eventId: entry.eventId, hooks: entry.hooks });
      return p.update(i, {
        approval: {
          ...base,
          leader: true,
          posted: false,
          notPostedReason: hookFailureReason(entry.hooks) ?? 'a prepare hook failed',
        },
        recorded: false,
      });
    case 'approve': {
      const others = othersToWaitFor(entry, facts);
      if (others.length > 0 && entry.peers !== 'ready') {
        if (entry.peers === 'checking') return entry; // the check runs (or resumes after a restart)
        p.log('info', 'waiting for the other affected VMs to be prepared before approving', {
          eventId: entry.eventId,
          others,
        });
        p.job({ kind: 'peers', key: entry.key, eventId: entry.eventId, others });
        return p.update(i, { peers: 'checking' });
      }
      if (!entry.dryRun) return p.update(i, { post: 'pending' });
      p.log('info', 'dry-run: would approve (not POSTed)', { eventId: entry.eventId, rule: entry.rule });
      return p.update(i, {
        approval: { ...base, leader: true, dryRun: true, posted: false },
        recorded: false,
      });
    }
  }
}

/**
 * The other VMs whose preparation an approval of this entry waits for (none: approve without waiting): with a peer
 * gate, for `approve-after-hooks`, the event's Resources besides this VM.
 */
function othersToWaitFor(entry: EventProgress, facts: PlanFacts): string[] {
  if (facts.peers !== true || entry.action !== 'approve-after-hooks') return [];
  const event = facts.tracked.get(entry.key);
  return event === undefined ? [] : otherResources(event, facts.vm);
}

/** How waiting for the other affected VMs ended. */
export type PeersOutcome = { ready: true } | { ready: false; reason: string };

/**
 * The other affected VMs were checked: all ready → the approval goes ahead (advance then queues the POST); not →
 * it is recorded as not posted, naming the VMs that blocked it (the event starts at NotBefore without us).
 */
export function peersChecked(
  progress: readonly EventProgress[],
  key: string,
  outcome: PeersOutcome,
  nowMs: number,
): Plan {
  const p = new Planner(progress);
  const i = p.progress.findIndex((e) => e.key === key);
  if (i < 0) return p.plan();
  if (outcome.ready) {
    p.update(i, { peers: 'ready' });
    return p.plan();
  }
  const entry = p.progress[i]!;
  p.log('warn', 'not approving: other affected VMs were not ready', {
    eventId: entry.eventId,
    why: outcome.reason,
  });
  p.update(i, {
    peers: undefined,
    post: 'failed',
    approval: {
      ...leaderApproval(entry, nowMs, false),
      ...(entry.dryRun ? { dryRun: true } : {}),
      notPostedReason: outcome.reason,
    },
    recorded: false,
  });
  return p.plan();
}

/** The leader could not POST the event's approval: records why (a not-posted approval). */
function notPosted(p: Planner, i: number, why: string, nowMs: number): void {
  const entry = p.progress[i]!;
  p.log('warn', 'approval not POSTed', { eventId: entry.eventId, why });
  p.update(i, {
    post: 'failed',
    approval: { ...leaderApproval(entry, nowMs, false), notPostedReason: why },
    recorded: false,
  });
}

/** The approval the leader records for an event it POSTed (`posted`) or could not POST. */
function leaderApproval(entry: EventProgress, nowMs: number, posted: boolean): ApprovalInput {
  return {
    eventId: entry.eventId,
    approvedAtMs: nowMs,
    rule: entry.rule,
    leader: true,
    hooks: [...entry.hooks],
    posted,
  };
}

function sameApproval(a: ApprovalInput, b: ApprovalInput): boolean {
  return (
    a.eventId === b.eventId &&
    a.approvedAtMs === b.approvedAtMs &&
    approvalRecordKind(a) === approvalRecordKind(b)
  );
}

// ---- prepare hooks -------------------------------------------------------------------------------------------

/** The next prepare hook to run and its budget, or null when the event's preparation is finished. */
export interface HookStep {
  hook: HookConfig;
  /** The hook's own timeout, cut to end by the deadline. */
  timeoutMs: number;
  /** NotBefore minus the safety margin (ISO), when the event has a NotBefore. */
  deadline: string | null;
}

/**
 * Hooks run in order; after a failed one the rest are not run (the event will not be approved anyway). A hook
 * must end by NotBefore minus the safety margin (`event` is the event as tracked now: NotBefore may move).
 */
export function nextPrepareHook(
  config: ApprovalConfig,
  entry: Pick<EventProgress, 'eventType' | 'affectsThisVm' | 'hooks'>,
  event: TrackedEvent,
  nowMs: number,
): HookStep | null {
  if (entry.hooks.some((h) => !h.ok)) return null;
  const hook = prepareHooks(config, entry.eventType, entry.affectsThisVm)[entry.hooks.length];
  if (hook === undefined) return null;
  const nb = notBeforeMs(event);
  const deadlineMs = nb === null ? null : nb - safetyMarginFor(config, event.firstSeenAtMs, nb);
  return {
    hook,
    timeoutMs: deadlineMs === null ? hook.timeoutMs : Math.min(hook.timeoutMs, deadlineMs - nowMs),
    deadline: deadlineMs === null ? null : new Date(deadlineMs).toISOString(),
  };
}

/**
 * The margin a prepare hook must leave before NotBefore: `safetyMarginMs`, except for an event whose notice (first
 * seen → NotBefore) is shorter than twice that — Preempt gives about 30 s, Terminate what the scale set's
 * termination notification says — where the margin would eat most or all of the notice: then
 * `shortNoticeMarginMs` (never more than safetyMarginMs), so the hook gets the time that really remains.
 */
export function safetyMarginFor(config: ApprovalConfig, firstSeenAtMs: number, notBeforeMs: number): number {
  const noticeMs = notBeforeMs - firstSeenAtMs;
  if (noticeMs >= 2 * config.safetyMarginMs) return config.safetyMarginMs;
  return Math.min(config.safetyMarginMs, config.shortNoticeMarginMs);
}

/** Progress of the event `key` after a prepare hook finished (`result`), or was stopped (null). */
export function prepareHookEnded(
  progress: readonly EventProgress[],
  key: string,
  result: ApprovalHookResult | null,
): EventProgress[] {
  return progress.map((e) => {
    if (e.key !== key) return e;
    // Stopped gracefully: the interrupted hook runs again (from where we stopped) after the restart.
    if (result === null) return { ...e, prepare: 'pending' };
    return { ...e, hooks: [...e.hooks, result] };
  });
}

/** Marks one entry's prepare hooks or recover hooks done. */
export function phaseDone(
  progress: readonly EventProgress[],
  key: string,
  phase: 'prepare' | 'recover',
): EventProgress[] {
  return progress.map((e) => (e.key !== key ? e : { ...e, [phase]: 'done' }));
}

// ---- StartRequests POSTs -------------------------------------------------------------------------------------

export interface PostFacts {
  tracked: ReadonlyMap<string, TrackedEvent>;
  nowMs: number;
  /** False without IMDS (replay source): nothing can be POSTed. */
  hasClient: boolean;
  /** When the last POST was made (or, after a failure, when the retry counts from); -Infinity before any. */
  lastPostAtMs: number;
  /** POSTs are never closer together than this (the IMDS poll interval). */
  pollIntervalMs: number;
}

/** The events of one StartRequests request. */
export interface PostBatch {
  keys: string[];
  eventIds: string[];
}

export type PostNext =
  /** Nothing (left) to POST. */
  | { kind: 'done' }
  /** Too soon after the last POST: wait, then plan again (events may start or lapse meanwhile). */
  | { kind: 'wait'; ms: number }
  /** POST these events in one StartRequests request. */
  | ({ kind: 'post' } & PostBatch);

/**
 * One round of the POST loop: every pending approval that can no longer be POSTed (event gone or no longer
 * Scheduled, NotBefore passed, no client) is recorded as not posted; the rest go in one request, no sooner than
 * the poll interval after the last one.
 */
export function planPost(progress: readonly EventProgress[], facts: PostFacts): Plan & { next: PostNext } {
  const p = new Planner(progress);
  const ready: EventProgress[] = [];
  p.progress.forEach((entry, i) => {
    if (entry.post !== 'pending') return;
    const why = cannotPost(facts.tracked.get(entry.key), facts.nowMs, facts.hasClient);
    if (why === null) ready.push(entry);
    else notPosted(p, i, why, facts.nowMs);
  });
  const waitMs = facts.lastPostAtMs + facts.pollIntervalMs - facts.nowMs;
  const next: PostNext =
    ready.length === 0
      ? { kind: 'done' }
      : waitMs > 0
        ? { kind: 'wait', ms: waitMs }
        : { kind: 'post', keys: ready.map((e) => e.key), eventIds: ready.map((e) => e.eventId) };
  return { ...p.plan(), next };
}

/** IMDS accepted the StartRequests for `keys`: their approvals are posted, to be recorded. */
export function postAccepted(progress: readonly EventProgress[], batch: PostBatch, nowMs: number): Plan {
  const p = new Planner(progress);
  p.progress.forEach((entry, i) => {
    if (!batch.keys.includes(entry.key)) return;
    p.update(i, { post: 'posted', approval: leaderApproval(entry, nowMs, true), recorded: false });
  });
  p.log('info', 'approved: StartRequests accepted', { eventIds: batch.eventIds });
  return p.plan();
}

/** How a POST failed, as the runner classifies the client's error. */
export interface PostFailure {
  message: string;
  /** False when IMDS rejected the request (4xx other than throttling): retrying cannot help. */
  retryable: boolean;
  retryAfterMs?: number | undefined;
}

/**
 * A failed POST: rejected → the approvals are recorded as not posted and the loop ends; otherwise it is retried
 * no sooner than the poll interval (or the server's Retry-After, if longer): `lastPostAtMs` for the next round.
 */
export function postFailed(
  progress: readonly EventProgress[],
  batch: PostBatch,
  failure: PostFailure,
  facts: Pick<PostFacts, 'nowMs' | 'pollIntervalMs'>,
): Plan & { retry: { lastPostAtMs: number } | null } {
  const p = new Planner(progress);
  if (!failure.retryable) {
    p.progress.forEach((entry, i) => {
      if (batch.keys.includes(entry.key)) {
        notPosted(p, i, `IMDS rejected the approval: ${failure.message}`, facts.nowMs);
      }
    });
    return { ...p.plan(), retry: null };
  }
  const retryMs = Math.max(facts.pollIntervalMs, failure.retryAfterMs ?? 0);
  p.log('warn', 'approval POST failed; retrying', {
    eventIds: batch.eventIds,
    err: failure.message,
    retryMs,
  });
  return { ...p.plan(), retry: { lastPostAtMs: facts.nowMs + retryMs - facts.pollIntervalMs } };
}

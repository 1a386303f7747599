/**
 * The single-event approval rules as pure functions (no I/O, no clock reads: `nowMs` is an input), table-tested
 * like the transform (test/unit/approval/decision.test.ts). The plan (src/approval/plan.ts) applies them to all
 * events and says what to do; the runner (src/approval/runner.ts) persists progress, runs the hooks, POSTs
 * StartRequests and logs.
 */
import type { VmIdentity } from '../domain/index.ts';
import { type ApprovalHookResult, affectsVm, type TrackedEvent } from '../transform/index.ts';
import type { ApprovalConfig, HookConfig } from './config.ts';
import { decide, hookApplies, isLeader } from './policy.ts';
import { type EventProgress, progressKey } from './progress.ts';

export function isScheduled(event: TrackedEvent): boolean {
  return event.last.EventStatus.toLowerCase() === 'scheduled';
}

/** The event's NotBefore (epoch ms), or null when it has none. */
export function notBeforeMs(event: TrackedEvent): number | null {
  const iso = event.last.notBeforeUtc ?? (isScheduled(event) ? event.lastNotBeforeUtc : null);
  if (iso === null) return null;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : null;
}

/** The prepare hooks for an event of `eventType` (none when it does not affect this VM). */
export function prepareHooks(config: ApprovalConfig, eventType: string, affected: boolean): HookConfig[] {
  return affected ? config.hooks.prepare.filter((h) => hookApplies(h.eventTypes, eventType)) : [];
}

/** The recover hooks for an event of `eventType` (none when it does not affect this VM). */
export function recoverHooks(config: ApprovalConfig, eventType: string, affected: boolean): HookConfig[] {
  return affected ? config.hooks.recover.filter((h) => hookApplies(h.eventTypes, eventType)) : [];
}

/** The progress of a newly seen event: the policy decision, the leader rule and which hooks apply. */
export function newProgress(config: ApprovalConfig, event: TrackedEvent, vm: VmIdentity): EventProgress {
  const affected = affectsVm(event.last.Resources, vm);
  const scheduled = isScheduled(event);
  const decision = decide(event.last, { affectsThisVm: affected }, config.rules);
  return {
    key: progressKey(event.eventId, event.occurrence),
    eventId: event.eventId,
    occurrence: event.occurrence,
    eventType: event.last.EventType,
    affectsThisVm: affected,
    leader: isLeader(config.leader, event.last.Resources, vm),
    action: decision.action,
    rule: decision.rule,
    dryRun: config.dryRun,
    prepare:
      scheduled && prepareHooks(config, event.last.EventType, affected).length > 0 ? 'pending' : 'none',
    hooks: [],
    post: 'none',
    approval: null,
    recorded: false,
    recover: recoverHooks(config, event.last.EventType, affected).length > 0 ? 'pending' : 'none',
    ended: false,
  };
}

/**
 * What to record for an entry, and whether to POST:
 * - `wait`: nothing yet (decided already, not affected, `never`, or prepare hooks still running);
 * - `record-not-leader`: an affected non-leader finished its own preparation (recorded, never posted);
 * - `record-hook-failed`: the leader will not approve because a prepare hook failed (recorded, not posted);
 * - `approve`: the leader is ready (`approve` at once, `approve-after-hooks` once every hook succeeded):
 *   a dry run records it, otherwise it joins the next StartRequests POST.
 */
export type Settlement = 'wait' | 'record-not-leader' | 'record-hook-failed' | 'approve';

export function settle(
  entry: Pick<
    EventProgress,
    'approval' | 'post' | 'affectsThisVm' | 'action' | 'prepare' | 'hooks' | 'leader'
  >,
): Settlement {
  if (entry.approval !== null || entry.post !== 'none') return 'wait';
  if (!entry.affectsThisVm || entry.action === 'never') return 'wait';
  const hooksFinished = entry.prepare === 'none' || entry.prepare === 'done';
  if (!entry.leader) return hooksFinished ? 'record-not-leader' : 'wait';
  if (entry.action === 'approve') return 'approve';
  if (!hooksFinished) return 'wait';
  return entry.hooks.every((h) => h.ok) ? 'approve' : 'record-hook-failed';
}

/**
 * Whether a pending approval can still be POSTed now: `null` when it can, else why not (the event is gone or no
 * longer Scheduled, NotBefore passed, or the source has no approval client).
 */
export function cannotPost(
  event: TrackedEvent | undefined,
  nowMs: number,
  hasClient: boolean,
): string | null {
  const nb = event === undefined ? null : notBeforeMs(event);
  if (event === undefined || !isScheduled(event)) {
    return 'the event was no longer Scheduled: it started (approved by another VM, or by Azure) or ended first';
  }
  if (nb !== null && nowMs >= nb) return 'NotBefore passed before the approval was accepted';
  if (!hasClient) return 'no IMDS client (replay source): cannot POST';
  return null;
}

/**
 * Why a failed preparation keeps the event from being approved, from the first hook that did not succeed (its
 * name, how it ended, what a built-in said): the `notPostedReason` of the record and the node Event.
 */
export function hookFailureReason(hooks: readonly ApprovalHookResult[]): string | undefined {
  const failed = hooks.find((h) => !h.ok);
  if (failed === undefined) return undefined;
  const how =
    failed.timedOut === true
      ? 'timed out'
      : failed.exitCode === null
        ? 'failed'
        : `failed (exit ${failed.exitCode})`;
  return `prepare hook "${failed.name}" ${how}${failed.detail === undefined ? '' : `: ${failed.detail}`}`;
}

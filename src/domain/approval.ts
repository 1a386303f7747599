/**
 * The `approved` record's approval (`data.approval`, docs/record-format.md) and THE rule for "was the approval
 * posted" (StartRequests actually POSTed for the event), used by the transform (the `approved` record's
 * data.approval.posted and the event's approvedByUs, and the kind each approval is recorded under), approval's
 * progress (which kinds the state already holds), the fleet fold (approval "us") and the fleet timeline. Only a
 * posted approval makes the event "approved by us"; a dry run never posts.
 */

/** One hook run as recorded in `data.approval.hooks`. */
export interface RecordedApprovalHook {
  name: string;
  ok: boolean;
  exitCode: number | null;
  durationMs: number;
  timedOut: boolean;
  /** How long the hook was given (its timeout, cut to the deadline before NotBefore). */
  budgetMs?: number;
  /** What a built-in hook did or why it failed. */
  detail?: string;
}

/** The `data.approval` of an `approved` record, as the transform writes it. */
export interface RecordedApproval {
  /** When the approval was decided/POSTed, ISO 8601 UTC. */
  approvedAt: string;
  rule: string;
  leader: boolean;
  /** StartRequests was POSTed (the rule below). */
  posted: boolean;
  dryRun: boolean;
  hooks: RecordedApprovalHook[];
  /** Not posted: why the event will start without our approval (absent on a posted approval and a dry run). */
  notPostedReason?: string;
}

/** What the rule reads of an ApprovalInput (src/transform/transform.ts; no import: no file cycle). */
interface ApprovalFacts {
  leader: boolean;
  hooks: readonly { ok: boolean }[];
  dryRun?: boolean | undefined;
  posted?: boolean | undefined;
}

/** For a decided approval: as given, else `leader && !dryRun && every hook ok`; never for a dry run. */
export function approvalInputPosted(approval: ApprovalFacts): boolean {
  if (approval.dryRun === true) return false;
  return approval.posted ?? (approval.leader && approval.hooks.every((hook) => hook.ok));
}

/**
 * The `data.approval` of a recorded `approved` record as far as it is there: a record read back (a store, the
 * fleet history, a newer or older version) may lack any field, so every field is unknown until checked.
 */
export function recordedApproval(
  data: Readonly<Record<string, unknown>>,
): Readonly<Partial<Record<keyof RecordedApproval, unknown>>> {
  return (data.approval ?? {}) as Partial<Record<keyof RecordedApproval, unknown>>;
}

/** For the data of a recorded `approved` record (data.approval.posted / dryRun, see docs/record-format.md). */
export function approvalRecordPosted(data: Readonly<Record<string, unknown>>): boolean {
  const approval = recordedApproval(data);
  return approval.posted === true && approval.dryRun !== true;
}

/** The kind an approval is recorded under (at most one `approved` record per event and kind). */
export function approvalRecordKind(
  approval: ApprovalFacts,
): 'dry-run' | 'posted' | 'not-posted' | 'not-leader' {
  if (approval.dryRun === true) return 'dry-run';
  if (approvalInputPosted(approval)) return 'posted';
  return approval.leader ? 'not-posted' : 'not-leader';
}

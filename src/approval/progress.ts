/**
 * What the approval module has done per event occurrence, persisted in the store's meta table (one JSON value
 * under PROGRESS_META_KEY) so that a restart neither approves an event twice nor re-runs its hooks.
 */

import { approvalRecordKind } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { MetaStore } from '../store/index.ts';
import type { ApprovalHookResult, ApprovalInput } from '../transform/index.ts';
import type { ApprovalAction } from './config.ts';

/** Meta key holding the JSON array of EventProgress. */
export const PROGRESS_META_KEY = 'approval.progress.v1';

export interface EventProgress {
  /** `${eventId}#${occurrence}` */
  key: string;
  eventId: string;
  occurrence: number;
  eventType: string;
  affectsThisVm: boolean;
  leader: boolean;
  action: ApprovalAction;
  rule: string;
  dryRun: boolean;
  /** none: no prepare hook applies; pending: not started (or stopped gracefully); running; done. */
  prepare: 'none' | 'pending' | 'running' | 'done';
  /** Results of the prepare hooks that finished, in order. */
  hooks: ApprovalHookResult[];
  /** none: nothing to POST; pending: waiting to be POSTed; posted; failed (not POSTed in time / rejected). */
  post: 'none' | 'pending' | 'posted' | 'failed';
  /** The approval to record (an `approved` record through the transform), once decided. */
  approval: ApprovalInput | null;
  /** The approval was committed by the pipeline. */
  recorded: boolean;
  /** none: no recover hook applies; pending: waits for the event to end; done. */
  recover: 'none' | 'pending' | 'done';
  /** The event is gone from the state (completed or canceled). */
  ended: boolean;
  /**
   * Waiting for the other VMs in Resources to be prepared (a peer gate, src/approval/peers.ts): `checking` while the
   * check runs, `ready` once they all were. Absent: not (yet) needed.
   */
  peers?: 'checking' | 'ready' | undefined;
}

export function progressKey(eventId: string, occurrence: number): string {
  return `${eventId}#${occurrence}`;
}

/** Loads the persisted progress; an unreadable value is reported through `onError` and treated as empty. */
export function loadProgress(store: MetaStore, onError: (message: string) => void): EventProgress[] {
  const text = store.getMeta(PROGRESS_META_KEY);
  if (text === undefined) return [];
  try {
    const value = JSON.parse(text) as unknown;
    if (!Array.isArray(value)) throw new Error('not an array');
    return value.filter(
      (entry): entry is EventProgress =>
        typeof entry === 'object' && entry !== null && typeof (entry as EventProgress).key === 'string',
    );
  } catch (error) {
    onError(`stored approval progress is unreadable (${errorMessage(error)})`);
    return [];
  }
}

export function saveProgress(store: MetaStore, entries: readonly EventProgress[]): void {
  store.setMeta(PROGRESS_META_KEY, JSON.stringify(entries));
}

/** The record kind the transform files an approval under (the one rule, src/domain/approval.ts). */
export { approvalRecordKind };

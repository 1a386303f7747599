/**
 * The small interfaces through which participants plug into the per-outcome step (src/pipeline/step.ts).
 */
import type { ApprovalConfig, CommittedStep } from '../approval/index.ts';
import type { ApprovalInput, ForwarderState } from '../transform/index.ts';

export type { CommittedStep };

/**
 * Approval as the step sees it (the ApprovalCoordinator in production, src/approval): started once against
 * the loaded state, asked on every outcome for the approvals decided but not committed yet, told after every
 * commit, reconfigured by a reload, stopped at shutdown (progress stays persisted).
 */
export interface ApprovalParticipant {
  start(state: ForwarderState): void;
  pendingApprovals(): ApprovalInput[];
  afterCommit(step: CommittedStep): void;
  /** A reload's new `approval` section (ApprovalCoordinator.reconfigure). */
  reconfigure(config: ApprovalConfig): void;
  stop(): Promise<void>;
}

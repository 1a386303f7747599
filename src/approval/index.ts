/**
 * Approval: policy rules, leader election, prepare/recover hooks and StartRequests POSTs, recorded as
 * `approved` lifecycle records through the transform. See docs/approval.md.
 */
export {
  APPROVAL_ACTIONS,
  type ApprovalAction,
  type ApprovalConfig,
  type ApprovalMatch,
  type ApprovalRule,
  approvalSection,
  BUILTIN_HOOKS,
  type BuiltinHookName,
  defaultApprovalConfig,
  type HookConfig,
  LEADER_MODES,
  type LeaderMode,
} from './config.ts';
export {
  ApprovalCoordinator,
  type ApprovalCoordinatorOptions,
  type CommitObserver,
  type CommittedStep,
} from './coordinator.ts';
export {
  BUILTIN_STOP_GRACE_MS,
  type BuiltinHooks,
  HookDeadlineError,
  type HookPhase,
  type HookRun,
  hookEnvironment,
  runHook,
} from './hooks.ts';
export {
  normaliseVmName,
  type PeerCheck,
  type PeerGate,
  type PeerStatus,
  type PrepareState,
} from './peers.ts';
export type { ApprovalNotice, Plan, PlanAction, PlanFacts } from './plan.ts';
export {
  DEFAULT_RULE,
  type Decision,
  type DecisionContext,
  decide,
  hookApplies,
  isLeader,
  matches,
} from './policy.ts';
export { type EventProgress, PROGRESS_META_KEY } from './progress.ts';
export { type ApprovalClient, ApprovalRunner, type ApprovalRunnerOptions } from './runner.ts';

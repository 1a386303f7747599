/** The domain model shared by sources, transform, sinks, store and fleet. Types and pure helpers only. */
export {
  approvalInputPosted,
  approvalRecordKind,
  approvalRecordPosted,
  type RecordedApproval,
  type RecordedApprovalHook,
  recordedApproval,
} from './approval.ts';
export {
  type ForwarderEvent,
  HEARTBEAT_SINK_STATES,
  HEARTBEAT_TRIGGERS,
  HEARTBEAT_TYPE,
  type HeartbeatData,
  type HeartbeatProblem,
  type HeartbeatRecord,
  type HeartbeatSink,
  type HeartbeatSinkState,
  type HeartbeatThresholds,
  type HeartbeatTrigger,
  heartbeatProblems,
  isHeartbeat,
} from './heartbeat.ts';
export type {
  ObservationTime,
  PollDocumentOutcome,
  PollFailureOutcome,
  PollFailureReason,
  PollOutcome,
} from './poll.ts';
export {
  type KubernetesRecordContext,
  type LifecycleRecord,
  type LifecycleRecordData,
  RECORD_TYPE_PREFIX,
  recordType,
  TRANSITION_RANK,
  TRANSITIONS,
  type Transition,
  transitionRank,
} from './record.ts';
export type { ScheduledEvent, ScheduledEventsDocument, VmIdentity } from './scheduled-event.ts';

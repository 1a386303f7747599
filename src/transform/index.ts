/**
 * Lifecycle transform: a pure function from (previous state, poll outcome, VM identity, Kubernetes node, host
 * boot time, measured stall, approvals) to (next state, CloudEvents lifecycle records). See docs/record-format.md.
 */

export {
  affectsVm,
  isoTime,
  pendingEventRecords,
  type RecordContext,
  recordSource,
  vmData,
} from './build-record.ts';
export { buildHeartbeat, type HeartbeatInput } from './heartbeat.ts';
export { RECORD_ID_NAMESPACE, recordId, uuidV5 } from './ids.ts';
export {
  DEFAULT_MAX_GAP_MS,
  ENDED_MAX_ENTRIES,
  ENDED_RETENTION_MS,
  type EndedEvent,
  type ForwarderState,
  initialState,
  type ObservedDowntime,
  restoreState,
  STATE_VERSION,
  type TrackedEvent,
} from './state.ts';
export {
  type ApprovalHookResult,
  type ApprovalInput,
  changedFields,
  type InferredReason,
  observeUnchanged,
  type TransformInput,
  type TransformResult,
  transform,
  type UnchangedInput,
  UPDATE_FIELDS,
  type UpdateField,
} from './transform.ts';

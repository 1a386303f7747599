/**
 * The forwarder pipeline: source → transform → outbox commit (routed per sink) → delivery engine. compose.ts
 * builds it from configuration, step.ts is the per-outcome step, forwarder.ts runs and stops it.
 */
export { hostBootTimeMs, TEST_BOOT_TIME_ENV } from './boot-time.ts';
export { MAX_WAITING_RECORDS, OBSERVATION_CHECKPOINT_MS, observationCheckpointDue } from './durability.ts';
export {
  Forwarder,
  type ForwarderOptions,
  type ForwarderStats,
  type IdentitySource,
} from './forwarder.ts';
export type { PipelineObserver } from './observer.ts';
export type { ApprovalParticipant, CommittedStep } from './participants.ts';
export { matchesFilter, type RoutedSink, routeRecords } from './route.ts';

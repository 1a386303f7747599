/** The forwarder pipeline: source → transform → outbox commit (routed per sink) → delivery engine. */
export { hostBootTimeMs, TEST_BOOT_TIME_ENV } from './boot-time.ts';
export { MAX_WAITING_RECORDS, OBSERVATION_CHECKPOINT_MS, observationCheckpointDue } from './durability.ts';
export {
  Forwarder,
  type ForwarderOptions,
  type ForwarderStats,
  type IdentitySource,
} from './forwarder.ts';
export type { PipelineObserver } from './observer.ts';
export { matchesFilter, type RoutedSink, routeRecords } from './route.ts';

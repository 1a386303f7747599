/** Public API of the delivery engine. */
export { type BackoffOptions, DEFAULT_BACKOFF, retryDelayMs } from './backoff.ts';
export {
  type DeadLetteredEvent,
  type DeliveredEvent,
  DeliveryEngine,
  type DeliveryEngineEvents,
  type DeliveryEngineOptions,
  type EngineSink,
  type RetryEvent,
  type StoreErrorEvent,
} from './engine.ts';

/** Public API of the delivery engine. */
export { type BackoffOptions, DEFAULT_BACKOFF, retryDelayMs } from './backoff.ts';
export {
  type Clock,
  type DeadLetteredEvent,
  type DeliveredEvent,
  DeliveryEngine,
  type DeliveryEngineEvents,
  type DeliveryEngineOptions,
  type EngineSink,
  type RetryEvent,
  type StoreErrorEvent,
  systemClock,
} from './engine.ts';
export { type DeliveryEngineEvent, type DeliveryEventSource, onDeliveryEvents } from './events.ts';

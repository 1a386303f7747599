/** Public API of the delivery engine. */
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
export { type DeliveryEngineEvent, type DeliveryEventSource, onDeliveryEvents } from './events.ts';

/** Public API of the delivery engine. */
export {
  DEFAULT_RESCAN_INTERVAL_MS,
  DeliveryEngine,
  type DeliveryEngineOptions,
  type EngineSink,
} from './engine.ts';
export type {
  DeadLetteredEvent,
  DeliveredEvent,
  DeliveryEngineEvent,
  DeliveryObserver,
  RetryEvent,
  StoreErrorEvent,
} from './events.ts';
export {
  type PeriodicSend,
  type PeriodicSendEvent,
  PeriodicSender,
  type PeriodicSenderOptions,
  type PeriodicTrigger,
} from './periodic.ts';

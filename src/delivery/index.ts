/** Public API of the delivery engine. */
export {
  DEFAULT_RESCAN_INTERVAL_MS,
  DeliveryEngine,
  type DeliveryEngineOptions,
  type EngineSink,
  type PausedSink,
} from './engine.ts';
export type {
  DeadLetteredEvent,
  DeadLettersDroppedEvent,
  DeliveredEvent,
  DeliveryEngineEvent,
  DeliveryObserver,
  PausedEvent,
  ResumedEvent,
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

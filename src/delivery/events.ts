/**
 * The delivery engine's events as one tagged union, and a subscription helper. The pipeline forwards them to
 * its observer (PipelineObserver.delivery, src/pipeline/observer.ts), the one mechanism telemetry observes by.
 */
import type {
  DeadLetteredEvent,
  DeliveredEvent,
  DeliveryEngineEvents,
  RetryEvent,
  StoreErrorEvent,
} from './engine.ts';

/** A DeliveryEngine event, tagged with its name. */
export type DeliveryEngineEvent =
  | ({ type: 'delivered' } & DeliveredEvent)
  | ({ type: 'retry' } & RetryEvent)
  | ({ type: 'deadLettered' } & DeadLetteredEvent)
  | ({ type: 'storeError' } & StoreErrorEvent);

/** Minimal view of the DeliveryEngine's typed EventEmitter. */
export interface DeliveryEventSource {
  on<K extends keyof DeliveryEngineEvents>(
    event: K,
    listener: (...args: DeliveryEngineEvents[K]) => void,
  ): unknown;
  off<K extends keyof DeliveryEngineEvents>(
    event: K,
    listener: (...args: DeliveryEngineEvents[K]) => void,
  ): unknown;
}

/** Subscribe `listener` to every delivery event of `engine`; returns an unsubscribe function. */
export function onDeliveryEvents(
  engine: DeliveryEventSource,
  listener: (event: DeliveryEngineEvent) => void,
): () => void {
  const delivered = (e: DeliveredEvent): void => listener({ type: 'delivered', ...e });
  const retry = (e: RetryEvent): void => listener({ type: 'retry', ...e });
  const deadLettered = (e: DeadLetteredEvent): void => listener({ type: 'deadLettered', ...e });
  const storeError = (e: StoreErrorEvent): void => listener({ type: 'storeError', ...e });
  engine.on('delivered', delivered);
  engine.on('retry', retry);
  engine.on('deadLettered', deadLettered);
  engine.on('storeError', storeError);
  return () => {
    engine.off('delivered', delivered);
    engine.off('retry', retry);
    engine.off('deadLettered', deadLettered);
    engine.off('storeError', storeError);
  };
}

/**
 * Records what a DeliveryEngine reports: pass `recorder.observer` as the engine's `observer` option (the one
 * observation mechanism, as the pipeline does), then read `events` or `of(type)`.
 */
import type { DeliveryEngineEvent, DeliveryObserver } from '../../src/delivery/index.ts';

export type DeliveryEventType = DeliveryEngineEvent['type'];
export type DeliveryEventOf<T extends DeliveryEventType> = Extract<DeliveryEngineEvent, { type: T }>;

export class DeliveryEventRecorder {
  readonly events: DeliveryEngineEvent[] = [];

  readonly observer: DeliveryObserver = {
    delivery: (event) => {
      this.events.push(event);
    },
  };

  /** The events of one type so far, without their `type` tag. */
  of<T extends DeliveryEventType>(type: T): Array<Omit<DeliveryEventOf<T>, 'type'>> {
    return this.events
      .filter((e): e is DeliveryEventOf<T> => e.type === type)
      .map(({ type: _type, ...rest }) => rest as Omit<DeliveryEventOf<T>, 'type'>);
  }
}

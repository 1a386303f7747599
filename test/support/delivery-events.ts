/**
 * Records what a DeliveryEngine reports: pass `recorder.observer` as the engine's `observer` option (the one
 * observation mechanism, as the pipeline does), then read `of(type)` or wait for `next(type, match)`.
 */
import type { DeliveryEngineEvent, DeliveryObserver } from '../../src/delivery/index.ts';

export type DeliveryEventType = DeliveryEngineEvent['type'];
export type DeliveryEventOf<T extends DeliveryEventType> = Extract<DeliveryEngineEvent, { type: T }>;

export class DeliveryEventRecorder {
  readonly events: DeliveryEngineEvent[] = [];
  readonly #waiters = new Set<(event: DeliveryEngineEvent) => void>();
  /** Also called with every event (e.g. telemetry's observer in the same test). */
  readonly #also: DeliveryObserver | undefined;

  constructor(also?: DeliveryObserver) {
    this.#also = also;
  }

  readonly observer: DeliveryObserver = {
    delivery: (event) => {
      this.events.push(event);
      this.#also?.delivery?.(event);
      for (const waiter of [...this.#waiters]) waiter(event);
    },
  };

  /** The events of one type so far, without their `type` tag. */
  of<T extends DeliveryEventType>(type: T): Array<Omit<DeliveryEventOf<T>, 'type'>> {
    return this.events
      .filter((e): e is DeliveryEventOf<T> => e.type === type)
      .map(({ type: _type, ...rest }) => rest as Omit<DeliveryEventOf<T>, 'type'>);
  }

  /** Resolves with the next event (from now on) of `type` for which `match` holds. */
  next<T extends DeliveryEventType>(
    type: T,
    match: (event: DeliveryEventOf<T>) => boolean = () => true,
  ): Promise<DeliveryEventOf<T>> {
    return new Promise((resolve) => {
      const waiter = (event: DeliveryEngineEvent): void => {
        if (event.type !== type || !match(event as DeliveryEventOf<T>)) return;
        this.#waiters.delete(waiter);
        resolve(event as DeliveryEventOf<T>);
      };
      this.#waiters.add(waiter);
    });
  }

  clear(): void {
    this.events.length = 0;
  }
}

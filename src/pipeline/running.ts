/**
 * A running pipeline's lifecycle: its own abort signal (follows the run's signal until stop begins) and the stop
 * order as one list. Each part registers its stop once it has started; stop() announces the shutdown, then runs
 * the registered stops in reverse order, each once, and collects what they throw, so that one failing stop never
 * leaves the parts before it (the store last) open.
 */
/** A stop: returns nothing, or a promise that settles when the part has stopped. */
export type StopStep = () => unknown;

export class RunningPipeline {
  readonly #internal = new AbortController();
  readonly #outer: AbortSignal;
  readonly #onAbort = (): void => this.#internal.abort();
  readonly #stops: StopStep[] = [];
  readonly #announce: StopStep;
  #stopped: Promise<unknown[]> | undefined;

  /** `announce` runs first when stop begins, before any registered stop. */
  constructor(signal: AbortSignal, announce: StopStep) {
    this.#outer = signal;
    this.#announce = announce;
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Aborted when the run's signal aborts (until stop begins) or by abort(): the parts end on it. */
  get signal(): AbortSignal {
    return this.#internal.signal;
  }

  /** True once stop() was called. */
  get stopping(): boolean {
    return this.#stopped !== undefined;
  }

  /** Ends the parts that listen to `signal` (a failed start). */
  abort(): void {
    this.#internal.abort();
  }

  /** Registers the stop of a part that has started; it runs before the stops registered earlier. */
  onStop(stop: StopStep): void {
    this.#stops.push(stop);
  }

  /**
   * Announces, then runs the registered stops in reverse order, each once (a second call returns the same
   * promise). A stop that returns nothing runs in the same tick as the one before it. Resolves with what the
   * stops threw (none: empty).
   */
  stop(): Promise<unknown[]> {
    if (this.#stopped === undefined) {
      // Set before the first stop runs (synchronously), so that `stopping` is true from the start.
      const { promise, resolve } = Promise.withResolvers<unknown[]>();
      this.#stopped = promise;
      resolve(this.#stop());
    }
    return this.#stopped;
  }

  async #stop(): Promise<unknown[]> {
    this.#outer.removeEventListener('abort', this.#onAbort);
    const errors: unknown[] = [];
    for (let step: StopStep | undefined = this.#announce; step !== undefined; step = this.#stops.pop()) {
      try {
        const result = step();
        if (result !== undefined) await result;
      } catch (error) {
        errors.push(error);
      }
    }
    return errors;
  }
}

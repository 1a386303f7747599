/** A scripted IMDS client for poller tests: answers take `latencyMs` on a FakeClock. */

import type { ScheduledEventsDocument } from '../../src/domain/index.ts';
import type { ScheduledEventsReader } from '../../src/sources/imds/poller.ts';
import { ImdsError } from '../../src/sources/imds-protocol/errors.ts';
import { parseScheduledEventsDocument } from '../../src/sources/imds-protocol/parse.ts';
import type { FakeClock } from './fake-clock.ts';

export type Answer = { latencyMs?: number; body?: string; error?: ImdsError };

/** A scripted IMDS client whose answers take `latencyMs` on the fake clock. */
export class ScriptedClient implements ScheduledEventsReader {
  readonly calls: number[] = [];
  inFlight = 0;
  maxInFlight = 0;
  readonly #clock: FakeClock;
  readonly #script: (call: number) => Answer;

  constructor(clock: FakeClock, script: (call: number) => Answer) {
    this.#clock = clock;
    this.#script = script;
  }

  getScheduledEvents(signal?: AbortSignal): Promise<{ document: ScheduledEventsDocument; body: string }> {
    const answer = this.#script(this.calls.length);
    this.calls.push(this.#clock.monotonic());
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#clock.clearTimeout(handle);
        this.inFlight -= 1;
        reject(new ImdsError('aborted', 'aborted'));
      };
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.inFlight -= 1;
        if (answer.error) reject(answer.error);
        else resolve({ document: parseScheduledEventsDocument(answer.body!), body: answer.body! });
      };
      const handle = this.#clock.setTimeout(done, answer.latencyMs ?? 0);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

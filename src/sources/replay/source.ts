/**
 * The replay source: plays a capture (see capture.ts) as poll outcomes — the second Source implementation,
 * proving the seam. Outcomes carry the captured observedAt as their wall time, so records derived from a
 * replay are reproducible. A bad line becomes a failure outcome naming the line number, never a crash.
 */
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { type Clock, sleep, systemClock } from '../../clock.ts';
import type {
  ObservationTime,
  PollOutcome,
  ScheduledEventsDocument,
  VmIdentity,
} from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { CaptureLineError, parseCaptureLine } from '../capture/capture.ts';
import { sameDocument } from '../capture/document.ts';
import { parseScheduledEventsDocument } from '../imds-protocol/parse.ts';
import type { Source } from '../types.ts';

const { createReadStream } = process.getBuiltinModule('node:fs');

export interface ReplaySourceOptions {
  /** Capture file (JSON lines). */
  file: string;
  /** 1 = the captured gaps in real time (default), 2 = twice as fast, 0 = as fast as possible. */
  speed?: number;
  clock?: Clock;
  logger: Logger;
}

/**
 * Replays a capture file; `start` resolves at the end of the file or when the signal aborts. It is also the
 * identity source of a replay: `current()` is the VM identity recorded with the latest document played (none
 * for captures recorded before identities were kept, as before).
 */
export class ReplaySource implements Source {
  readonly name = 'replay';
  readonly #file: string;
  readonly #speed: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #vm: VmIdentity | undefined;

  constructor(options: ReplaySourceOptions) {
    const speed = options.speed ?? 1;
    if (!Number.isFinite(speed) || speed < 0) {
      throw new RangeError(`replay speed must be a number >= 0 (0 = as fast as possible), got ${speed}`);
    }
    this.#file = options.file;
    this.#speed = speed;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
  }

  /** The VM identity recorded with the latest document played, if the capture has one. */
  current(): VmIdentity | undefined {
    return this.#vm;
  }

  async refresh(): Promise<VmIdentity | undefined> {
    return this.#vm;
  }

  async start(signal: AbortSignal, onOutcome: (outcome: PollOutcome) => Promise<void> | void): Promise<void> {
    try {
      await access(this.#file);
    } catch {
      throw new Error(`replay capture file ${this.#file} cannot be read (missing or no permission)`);
    }
    const clock = this.#clock;
    const startMonotonic = clock.monotonic();
    let firstObservedMs: number | undefined;
    let lastWallMs: number | undefined;
    let lastMonotonicMs = Number.NEGATIVE_INFINITY;
    let previous: ScheduledEventsDocument | undefined;
    let consecutiveFailures = 0;
    let lineNumber = 0;
    let emitted = 0;

    /** Wall time = captured observedAt; monotonic = the same timeline, never decreasing. */
    const observation = (wallMs: number): ObservationTime => {
      lastWallMs = wallMs;
      lastMonotonicMs = Math.max(lastMonotonicMs, wallMs);
      return { wallMs, monotonicMs: lastMonotonicMs };
    };
    const waitUntilDue = async (observedMs: number): Promise<void> => {
      firstObservedMs ??= observedMs;
      if (this.#speed === 0) return;
      const due = startMonotonic + Math.max(0, observedMs - firstObservedMs) / this.#speed;
      const wait = due - clock.monotonic();
      if (wait > 0) await sleep(clock, wait, signal);
    };

    const input = createReadStream(this.#file, { encoding: 'utf8' });
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    const onAbort = (): void => lines.close();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const rawLine of lines) {
        lineNumber += 1;
        if (signal.aborted) break;
        const line = rawLine.trim();
        if (line === '') continue;
        let outcome: PollOutcome;
        try {
          const entry = parseCaptureLine(this.#file, lineNumber, line);
          const observedMs = Date.parse(entry.observedAt);
          await waitUntilDue(observedMs);
          if (signal.aborted) break;
          if ('document' in entry) {
            let document: ScheduledEventsDocument;
            try {
              document = parseScheduledEventsDocument(JSON.stringify(entry.document) ?? '');
            } catch (error) {
              const detail = errorMessage(error);
              throw new CaptureLineError(this.#file, lineNumber, `invalid document: ${detail}`, observedMs);
            }
            const changed = !sameDocument(previous, document);
            previous = document;
            if (entry.vm !== undefined) this.#vm = entry.vm;
            consecutiveFailures = 0;
            outcome = { kind: 'document', document, observed: observation(observedMs), changed };
          } else {
            consecutiveFailures += 1;
            outcome = {
              kind: 'failure',
              reason: entry.failure.reason,
              message: entry.failure.message,
              observed: observation(observedMs),
              consecutiveFailures,
            };
          }
        } catch (error) {
          if (!(error instanceof CaptureLineError)) throw error;
          this.#logger.error({ line: error.lineNumber }, error.message);
          consecutiveFailures += 1;
          const wallMs = error.observedAtMs ?? lastWallMs ?? clock.now();
          outcome = {
            kind: 'failure',
            reason: 'invalid-response',
            message: error.message,
            observed: observation(wallMs),
            consecutiveFailures,
          };
        }
        emitted += 1;
        await onOutcome(outcome);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      lines.close();
      input.destroy();
    }
    this.#logger.info({ file: this.#file, outcomes: emitted }, 'replay finished');
  }
}

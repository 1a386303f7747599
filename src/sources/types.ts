/**
 * The contract between sources (IMDS poller, replay) and the rest of the pipeline. The data a source
 * emits (poll outcomes, documents, VM identity) lives in src/domain.
 */
import type { PollOutcome } from '../domain/poll.ts';

/**
 * A source of poll outcomes. `start` resolves when the signal aborts (or a finite source is exhausted).
 * The source awaits `onOutcome` before producing the next outcome, so a slow consumer never causes
 * overlapping work.
 */
export interface Source {
  readonly name: string;
  start(signal: AbortSignal, onOutcome: (outcome: PollOutcome) => Promise<void> | void): Promise<void>;
}

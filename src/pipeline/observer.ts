/**
 * What the pipeline reports as it runs: the hook the telemetry module (metrics, /healthz, /readyz) attaches
 * to. Every method is optional; the pipeline never depends on an observer being present.
 */
import type { PollOutcome } from '../sources/types.ts';
import type { LifecycleRecord } from '../transform/record.ts';

export interface PipelineObserver {
  /** The store is open, the sinks are built and the delivery engine has started (the source polls already). */
  ready?(info: { stateDir: string; sinks: string[] }): void;
  /** Every poll outcome, before it is transformed. */
  outcome?(outcome: PollOutcome): void;
  /** A poll outcome's state and records were committed (records routed to `rows` outbox rows). */
  committed?(info: { records: readonly LifecycleRecord[]; rows: number; outcome: PollOutcome }): void;
  /** A commit failed (disk full, I/O error); the previous state is kept and the next poll retries. */
  commitFailed?(info: { message: string; full: boolean; consecutive: number }): void;
  /** Shutdown began. */
  stopping?(): void;
}

/**
 * What the pipeline reports as it runs: the ONE hook the telemetry module (metrics, /healthz, /readyz) attaches
 * to, including the delivery engine's events (the engine reports to the same kind of observer, DeliveryObserver,
 * and the pipeline passes its events on while running). Every method is optional; the pipeline never depends on
 * an observer being present.
 */

import type { DeliveryEngineEvent, DeliveryObserver } from '../delivery/events.ts';
import type { PeriodicSendEvent } from '../delivery/periodic.ts';
import type { LifecycleRecord, PollOutcome } from '../domain/index.ts';
import type { StoreDamage } from '../store/index.ts';
import type { ReloadReport } from './reload-plan.ts';

export interface PipelineObserver extends DeliveryObserver {
  /** The state store cannot be opened yet (disk full, I/O error); opening is retried. */
  storeUnavailable?(info: { message: string }): void;
  /**
   * The source is built (the store is open; it polls next). `pollIntervalMs`: the time between two of its polls
   * (BuiltSource.pollIntervalMs), what readiness measures a stale source in.
   */
  sourceBuilt?(info: { source: string; pollIntervalMs: number }): void;
  /**
   * The store is open, the sinks are built and the delivery engine has started (the source polls already).
   * `storeDamage`: damage found when the
   * store was opened (a damaged WAL, a quarantined database), as recorded in the store.
   */
  ready?(info: { stateDir: string; sinks: string[]; storeDamage?: readonly StoreDamage[] }): void;
  /** Every poll outcome, before it is transformed. */
  outcome?(outcome: PollOutcome): void;
  /** State and records were committed (records routed to `rows` outbox rows); unchanged polls commit nothing. */
  committed?(info: { records: readonly LifecycleRecord[]; rows: number; outcome: PollOutcome }): void;
  /** A commit failed (disk full, I/O error); the transitions wait in memory and every poll retries them. */
  commitFailed?(info: { message: string; full: boolean; consecutive: number }): void;
  /**
   * A delivery engine event (delivered, retry, deadLettered, storeError, drained, idle), from the engine's start
   * to shutdown.
   */
  delivery?(event: DeliveryEngineEvent): void;
  /** A configuration reload ended (SIGHUP; src/pipeline/reload.ts): its outcome and the sinks delivered to now. */
  reloaded?(report: ReloadReport): void;
  /** A periodic send outside the outbox (a heartbeat) reached its sink or failed (src/pipeline/periodic-sends.ts). */
  periodic?(event: PeriodicSendEvent): void;
  /** Shutdown began (no delivery event is reported after this). */
  stopping?(): void;
}

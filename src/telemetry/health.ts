/**
 * Readiness (docs/observability.md, "What ready means"): the forwarder is ready when (1) the last successful
 * IMDS poll is at most N poll intervals old, (2) the outbox store accepts writes, and (3) its sinks, as the
 * readiness setting counts them (`telemetry.readiness.sinks`): `ignore` (the default: a destination's outage is
 * not this instance's), `all-failing` (not ready only when every sink is failing or paused) or `any-failing` (not
 * ready when one is). A sink is failing after N consecutive failed attempts without a success since, paused while
 * its destination refuses everything. HealthTracker collects these facts from the pipeline; evaluateHealth() is
 * the pure rule.
 */

import { DEFAULT_SINK_READINESS, type SinkReadiness } from '../config/readiness.ts';
import type { DeliveryEngineEvent } from '../delivery/events.ts';
import type { PollFailureReason, PollOutcome } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { PipelineObserver } from '../pipeline/observer.ts';
import { DEFAULT_POLL_INTERVAL_MS } from '../sources/imds/defaults.ts';
import type { SinkQueueStats, StoreDamage } from '../store/index.ts';

export interface HealthThresholds {
  /** The poll interval in ms (1000 for IMDS). */
  pollIntervalMs: number;
  /** The last successful poll may be at most this many intervals old. Default 5. */
  staleAfterPolls?: number;
  /** A sink counts as failing after this many consecutive failed attempts. Default 3. */
  sinkFailingAfterAttempts?: number;
  /** How failing and paused sinks count for readiness. Default DEFAULT_SINK_READINESS ('ignore'). */
  sinkReadiness?: SinkReadiness;
}

/** Raw facts collected from the pipeline. */
export interface HealthFacts {
  startedAt: number;
  lastPollSuccessAt: number | undefined;
  lastPollFailure:
    | { reason: PollFailureReason; message: string; at: number; consecutiveFailures: number }
    | undefined;
  store: { writable: boolean; error: string | undefined };
  /** Damage found when the store was opened (shown in /readyz; does not affect readiness). */
  storeDamage?: readonly StoreDamage[];
  sinks: Record<string, SinkFacts>;
}

export interface SinkFacts {
  consecutiveFailures: number;
  lastSuccessAt: number | undefined;
  lastError: string | undefined;
  deadLettered: number;
  /** Set while the destination refuses everything (the engine's 'paused' … 'resumed'). */
  paused?: { code: string; since: number } | undefined;
}

/** ok, retrying (1..N−1 failures), failing (≥ N), paused (the destination refuses everything). */
export type SinkState = 'ok' | 'retrying' | 'failing' | 'paused';

/** The JSON body of /readyz. */
export interface HealthState {
  ready: boolean;
  checkedAt: string;
  imds: {
    ok: boolean;
    lastSuccessAt: string | null;
    ageSeconds: number | null;
    staleAfterSeconds: number;
    lastFailure?: { reason: string; message: string; at: string; consecutiveFailures: number };
  };
  store: { ok: boolean; error?: string; damage?: StoreDamage[] };
  /** How the sinks counted for `ready` (telemetry.readiness.sinks). */
  readiness: { sinks: SinkReadiness };
  sinks: Record<
    string,
    {
      /** False while failing or paused (whether that affects `ready` is the readiness setting's). */
      ok: boolean;
      state: SinkState;
      /** While paused: the code of the refusal and since when (the cause and its fix are in lastError). */
      paused?: { code: string; since: string };
      consecutiveFailures: number;
      lastSuccessAt: string | null;
      lastError?: string;
      deadLettered: number;
      pending?: number;
      oldestPendingAgeSeconds?: number;
    }
  >;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** Pure readiness rule over collected facts (plus optional outbox stats for the body). */
export function evaluateHealth(
  facts: HealthFacts,
  thresholds: HealthThresholds,
  nowMs: number,
  /** Outbox stats; when given, every sink entry carries `pending` and `oldestPendingAgeSeconds`. */
  outbox?: readonly SinkQueueStats[],
): HealthState {
  const staleAfterMs = (thresholds.staleAfterPolls ?? 5) * thresholds.pollIntervalMs;
  const failingAfter = thresholds.sinkFailingAfterAttempts ?? 3;
  const age = facts.lastPollSuccessAt === undefined ? null : Math.max(0, nowMs - facts.lastPollSuccessAt);
  const imdsOk = age !== null && age <= staleAfterMs;
  const imds: HealthState['imds'] = {
    ok: imdsOk,
    lastSuccessAt: iso(facts.lastPollSuccessAt),
    ageSeconds: age === null ? null : age / 1000,
    staleAfterSeconds: staleAfterMs / 1000,
  };
  if (facts.lastPollFailure) {
    const f = facts.lastPollFailure;
    imds.lastFailure = {
      reason: f.reason,
      message: f.message,
      at: iso(f.at)!,
      consecutiveFailures: f.consecutiveFailures,
    };
  }
  const sinks: HealthState['sinks'] = {};
  for (const [name, s] of Object.entries(facts.sinks)) {
    const state: SinkState =
      s.paused !== undefined
        ? 'paused'
        : s.consecutiveFailures === 0
          ? 'ok'
          : s.consecutiveFailures >= failingAfter
            ? 'failing'
            : 'retrying';
    const entry: HealthState['sinks'][string] = {
      ok: state !== 'failing' && state !== 'paused',
      state,
      consecutiveFailures: s.consecutiveFailures,
      lastSuccessAt: iso(s.lastSuccessAt),
      deadLettered: s.deadLettered,
    };
    if (s.paused !== undefined) entry.paused = { code: s.paused.code, since: iso(s.paused.since)! };
    if (s.lastError !== undefined) entry.lastError = s.lastError;
    if (outbox !== undefined) {
      // A sink without outbox rows has nothing pending.
      const stats = outbox.find((o) => o.sink === name);
      entry.pending = stats?.pending ?? 0;
      entry.oldestPendingAgeSeconds =
        stats === undefined || stats.oldestCreatedAt === null
          ? 0
          : Math.max(0, Math.round((nowMs - stats.oldestCreatedAt) / 100) / 10);
    }
    sinks[name] = entry;
  }
  const store: HealthState['store'] = { ok: facts.store.writable };
  if (facts.store.error !== undefined) store.error = facts.store.error;
  if (facts.storeDamage !== undefined && facts.storeDamage.length > 0) store.damage = [...facts.storeDamage];
  const sinkReadiness = thresholds.sinkReadiness ?? DEFAULT_SINK_READINESS;
  const ready = imdsOk && store.ok && sinksReady(Object.values(sinks), sinkReadiness);
  return {
    ready,
    checkedAt: new Date(nowMs).toISOString(),
    imds,
    store,
    readiness: { sinks: sinkReadiness },
    sinks,
  };
}

/** Whether the sinks let the forwarder be ready under `readiness` (no sinks: they do). */
function sinksReady(sinks: ReadonlyArray<{ ok: boolean }>, readiness: SinkReadiness): boolean {
  switch (readiness) {
    case 'ignore':
      return true;
    case 'all-failing':
      return sinks.length === 0 || sinks.some((s) => s.ok);
    case 'any-failing':
      return sinks.every((s) => s.ok);
  }
}

export interface HealthTrackerOptions extends Omit<HealthThresholds, 'pollIntervalMs'> {
  /**
   * The poll interval until the pipeline reports the built source's own (recordPollInterval). Default: IMDS's
   * default, 1000. Before the source is built nothing has polled, so it shows only as /readyz's staleAfterSeconds.
   */
  pollIntervalMs?: number;
  /** Configured sink names (each starts as ok). */
  sinks: readonly string[];
  /** Wall clock, epoch ms (injectable for tests). */
  now?: () => number;
  /** Optional outbox stats for the /readyz body (e.g. `() => store.stats()`; undefined while no store is open). */
  outboxStats?: () => readonly SinkQueueStats[] | undefined;
}

/**
 * Collects health facts from the pipeline. Wire: recordPollInterval(ms) when the source is built;
 * recordPoll(outcome) per poll outcome;
 * recordDeliveryEvent(event) for delivery engine events (the engine's observer, DeliveryObserver.delivery);
 * recordStoreWrite(ok, error?) after each outbox commit. snapshot() evaluates readiness now.
 */
export class HealthTracker {
  readonly #facts: HealthFacts;
  readonly #options: HealthTrackerOptions;
  readonly #now: () => number;
  #pollIntervalMs: number;

  constructor(options: HealthTrackerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.#facts = {
      startedAt: this.#now(),
      lastPollSuccessAt: undefined,
      lastPollFailure: undefined,
      store: { writable: true, error: undefined },
      sinks: Object.fromEntries(options.sinks.map((name) => [name, emptySink()])),
    };
  }

  /** Track more sinks (names already tracked are kept as they are). */
  addSinks(names: readonly string[]): void {
    for (const name of names) this.#facts.sinks[name] ??= emptySink();
  }

  /** Stop tracking sinks (removed by a reload): they no longer count for readiness. */
  removeSinks(names: readonly string[]): void {
    for (const name of names) delete this.#facts.sinks[name];
  }

  /** The built source's poll interval (BuiltSource.pollIntervalMs), reported when the pipeline builds it. */
  recordPollInterval(pollIntervalMs: number): void {
    this.#pollIntervalMs = pollIntervalMs;
  }

  recordPoll(outcome: PollOutcome): void {
    if (outcome.kind === 'document') {
      this.#facts.lastPollSuccessAt = outcome.observed.wallMs;
    } else {
      this.#facts.lastPollFailure = {
        reason: outcome.reason,
        message: outcome.message,
        at: outcome.observed.wallMs,
        consecutiveFailures: outcome.consecutiveFailures,
      };
    }
  }

  /** Record the result of an outbox commit (store errors carry a secret-free message). */
  recordStoreWrite(ok: boolean, error?: string): void {
    this.#facts.store = ok
      ? { writable: true, error: undefined }
      : { writable: false, error: error ?? 'write failed' };
  }

  /** Record damage found when the store was opened (reported in /readyz; readiness is not affected). */
  recordStoreDamage(damage: readonly StoreDamage[]): void {
    this.#facts.storeDamage = damage;
  }

  recordDeliveryEvent(event: DeliveryEngineEvent): void {
    this.addSinks([event.sink]);
    const sink = this.#facts.sinks[event.sink]!;
    switch (event.type) {
      case 'delivered':
        sink.consecutiveFailures = 0;
        sink.lastSuccessAt = this.#now();
        sink.lastError = undefined;
        sink.paused = undefined;
        this.recordStoreWrite(true); // the acknowledgement was written
        break;
      case 'retry':
        sink.consecutiveFailures = Math.max(sink.consecutiveFailures + 1, event.attempts);
        sink.lastError = `${event.code}: ${event.message}`.slice(0, 300);
        break;
      case 'paused':
        sink.consecutiveFailures += 1;
        sink.lastError = `${event.code}: ${event.message}`.slice(0, 500);
        sink.paused = { code: event.code, since: event.since };
        break;
      case 'resumed':
        sink.paused = undefined;
        break;
      case 'deadLettered':
        sink.deadLettered += event.count;
        break;
      case 'storeError':
        this.recordStoreWrite(false, event.message);
        break;
    }
  }

  facts(): HealthFacts {
    return structuredClone(this.#facts);
  }

  /** Evaluate readiness now. */
  snapshot(): HealthState {
    let outbox: readonly SinkQueueStats[] | undefined;
    try {
      outbox = this.#options.outboxStats?.();
    } catch (error) {
      this.recordStoreWrite(false, `cannot read outbox stats: ${errorMessage(error)}`);
    }
    const thresholds = { ...this.#options, pollIntervalMs: this.#pollIntervalMs };
    return evaluateHealth(this.#facts, thresholds, this.#now(), outbox);
  }
}

function emptySink(): SinkFacts {
  return { consecutiveFailures: 0, lastSuccessAt: undefined, lastError: undefined, deadLettered: 0 };
}

/**
 * The pipeline observer that feeds a HealthTracker (poll outcomes, commits, delivery events): /readyz and the
 * heartbeats read it. The telemetry observer (observer.ts) adds the metrics to it.
 */
export function healthObserver(health: HealthTracker): PipelineObserver {
  return {
    sourceBuilt: ({ pollIntervalMs }) => health.recordPollInterval(pollIntervalMs),
    ready: ({ sinks, storeDamage }) => {
      health.addSinks(sinks);
      health.recordStoreWrite(true); // the store is open (it may have waited for the disk)
      health.recordStoreDamage(storeDamage ?? []);
    },
    delivery: (event) => health.recordDeliveryEvent(event),
    outcome: (outcome) => health.recordPoll(outcome),
    committed: () => health.recordStoreWrite(true),
    reloaded: (report) => {
      // A removed sink no longer counts for readiness; a rebuilt one starts afresh (its old failures were the old
      // settings').
      health.removeSinks([...report.removed, ...report.rebuilt]);
      health.addSinks(report.sinks);
    },
    storeUnavailable: ({ message }) => {
      health.recordStoreWrite(false, `cannot open the state store: ${message}`);
    },
    commitFailed: ({ message, full }) => {
      health.recordStoreWrite(false, full ? `disk full: ${message}` : message);
    },
  };
}

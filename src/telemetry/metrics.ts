/**
 * The forwarder's own Prometheus metrics (prom-client, on a private Registry — never the global one).
 * All names start with `sef_`. Labels are low-cardinality and secret-free: `sink` is the configured sink
 * name, `reason`/`code` are enum-like codes, `transition` is one of six values.
 * Feed functions (observe*) keep the wiring in the pipeline to one line per source of events.
 *
 * Every series whose label values are known up front exists from the start at 0 (addSinks for the per-sink
 * ones): `increase(sef_dead_letters_total[1h]) > 0` must see the first dead letter after a restart, which a
 * series that first appears at 1 never shows. Only `sef_delivery_failures_total`'s open-ended `code` cannot be
 * pre-created (docs/observability.md).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { DeliveryEngineEvent } from '../delivery/events.ts';
import type { PeriodicSendEvent } from '../delivery/periodic.ts';
import {
  type LifecycleRecord,
  type PollFailureReason,
  type PollOutcome,
  TRANSITIONS,
} from '../domain/index.ts';
import {
  counter,
  gauge,
  histogram,
  type Instruments,
  type Labels,
  type MetricDefinition,
  registerMetrics,
  type Series,
  startSeries,
} from '../metric-table.ts';
import { RELOAD_OUTCOMES, type ReloadReport } from '../pipeline/reload-plan.ts';
import type { DeadLetterReason, SinkQueueStats } from '../store/index.ts';

export const METRIC_PREFIX = 'sef_';
/** Sampling interval (ms) of the `sef_nodejs_eventloop_lag_*` histogram. */
export const EVENT_LOOP_SAMPLE_MS = 1000;

/** Seconds; deliveries include backoff waits, so the range goes up to 30 min. */
export const DELIVERY_LATENCY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];
/** Seconds; IMDS answers in a few ms, its timeout is seconds. */
export const IMDS_LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5];

/** Every poll failure reason (a Record, so that a new reason fails to compile until it is listed here). */
const POLL_FAILURE_REASONS: Record<PollFailureReason, true> = {
  timeout: true,
  network: true,
  'bad-request': true,
  'not-found': true,
  throttled: true,
  gone: true,
  'server-error': true,
  'invalid-response': true,
  'unexpected-status': true,
  aborted: true,
};
/** Every dead-letter reason (a Record for the same reason). */
const DEAD_LETTER_REASONS: Record<DeadLetterReason, true> = {
  permanent: true,
  overflow: true,
  expired: true,
};

/** What the scraped gauges read besides the instruments: the sinks, their pause, the outbox, the clock. */
export interface ForwarderMetricsState {
  /**
   * The configured sinks (addSinks): each has every per-sink series from the start, the outbox gauges at 0
   * when its queue is empty (not absent).
   */
  readonly sinks: Set<string>;
  /** The paused sinks and the code that paused each (fed by the engine's paused/resumed events). */
  readonly paused: Map<string, string>;
  /**
   * Source of the outbox gauges, read on every scrape (e.g. `() => store.stats()`); set with
   * bindOutboxStats. Until set, the outbox gauges are empty.
   */
  outboxStats: (() => readonly SinkQueueStats[]) | undefined;
  /** Wall clock for ages (injectable for tests). */
  now: () => number;
}

function readStats(state: ForwarderMetricsState): readonly SinkQueueStats[] {
  if (!state.outboxStats) return [];
  try {
    return state.outboxStats();
  } catch {
    return []; // a failing store must not break the scrape; /readyz reports the store
  }
}

/** One series per configured sink (0 unless the stats say otherwise), plus any other sink the stats name. */
function perSink(state: ForwarderMetricsState, value: (s: SinkQueueStats) => number): Array<Series<'sink'>> {
  const values = new Map<string, number>();
  for (const sink of state.sinks) values.set(sink, 0);
  for (const s of readStats(state)) values.set(s.sink, value(s));
  return [...values].map(([sink, v]) => [{ sink }, v]);
}

/** Each paused sink at 1 with the code that paused it as `reason`, every other sink at 0 without one. */
function pausedSinks(state: ForwarderMetricsState): Array<Series<'sink' | 'reason'>> {
  return [...new Set([...state.sinks, ...state.paused.keys()])].map((sink) => {
    const reason = state.paused.get(sink);
    return reason === undefined ? [{ sink }, 0] : [{ sink, reason }, 1];
  });
}

/** A forwarder metric: a definition, plus the series each configured sink has from the start (addSinks). */
type ForwarderMetric<T extends 'counter' | 'gauge' | 'histogram', L extends string> = MetricDefinition<
  T,
  L,
  ForwarderMetricsState
> & { perSink?: ReadonlyArray<Labels<Exclude<L, 'sink'>>> };

function perSinkSeries<T extends 'counter' | 'gauge' | 'histogram', L extends string>(
  definition: MetricDefinition<T, L, ForwarderMetricsState>,
  perSink: ReadonlyArray<Labels<Exclude<L, 'sink'>>>,
): ForwarderMetric<T, L> {
  return { ...definition, perSink };
}

const EVERY_SINK = [{}] as const;

/**
 * Every forwarder metric, in /metrics order (names get METRIC_PREFIX). The names are a contract: alert rules,
 * dashboards and docs/observability.md use them.
 */
const FORWARDER_METRICS = {
  polls: counter({ name: 'polls_total', help: 'IMDS Scheduled Events polls (success or failure).' }),
  pollFailures: counter({
    name: 'poll_failures_total',
    help: 'Failed IMDS polls by reason (timeout, network, server-error, invalid-response, ...).',
    labels: ['reason'],
    start: Object.keys(POLL_FAILURE_REASONS).map((reason) => [{ reason }, 0]),
  }),
  documentChanges: counter({
    name: 'document_changes_total',
    help: 'Polls whose Scheduled Events document differed from the previous one.',
  }),
  lastSuccessfulPoll: gauge({
    name: 'last_successful_poll_timestamp_seconds',
    help: 'Unix time of the last successful IMDS poll.',
  }),
  records: counter({
    name: 'records_total',
    help: 'Lifecycle records produced, by transition.',
    labels: ['transition'],
    start: TRANSITIONS.map((transition) => [{ transition }, 0]),
  }),
  outboxPending: gauge({
    name: 'outbox_pending',
    help: 'Records waiting in the outbox, per sink.',
    labels: ['sink'],
    collect: (state: ForwarderMetricsState) => perSink(state, (s) => s.pending),
  }),
  outboxOldestAge: gauge({
    name: 'outbox_oldest_age_seconds',
    help: 'Age of the oldest pending outbox record, per sink (0 when empty).',
    labels: ['sink'],
    collect: (state: ForwarderMetricsState) => {
      const now = state.now();
      return perSink(state, (s) =>
        s.oldestCreatedAt === null ? 0 : Math.max(0, (now - s.oldestCreatedAt) / 1000),
      );
    },
  }),
  deadLetterRows: gauge({
    name: 'dead_letter_rows',
    help: 'Records currently in the dead-letter table, per sink.',
    labels: ['sink'],
    collect: (state: ForwarderMetricsState) => perSink(state, (s) => s.deadLetters),
  }),
  deliveries: perSinkSeries(
    counter({ name: 'deliveries_total', help: 'Records confirmed delivered, per sink.', labels: ['sink'] }),
    EVERY_SINK,
  ),
  deliveryFailures: counter({
    name: 'delivery_failures_total',
    help: 'Failed delivery attempts (retryable or permanent), per sink and error code.',
    labels: ['sink', 'code'],
  }),
  deliveryRetries: perSinkSeries(
    counter({
      name: 'delivery_retries_total',
      help: 'Delivery retries scheduled, per sink.',
      labels: ['sink'],
    }),
    EVERY_SINK,
  ),
  deadLetters: perSinkSeries(
    counter({
      name: 'dead_letters_total',
      help: 'Records moved to dead letters, per sink and reason (permanent, overflow, expired).',
      labels: ['sink', 'reason'],
    }),
    Object.keys(DEAD_LETTER_REASONS).map((reason) => ({ reason })),
  ),
  deadLettersDropped: perSinkSeries(
    counter({
      name: 'dead_letters_dropped_total',
      help:
        "Dead letters dropped for good, oldest first, because the sink's dead-letter caps " +
        '(delivery.caps.maxDeadLetterRows, maxDeadLetterBytes) were exceeded, per sink.',
      labels: ['sink'],
    }),
    EVERY_SINK,
  ),
  storeErrors: perSinkSeries(
    counter({
      name: 'store_errors_total',
      help: 'Failed outbox writes during delivery bookkeeping, per sink; full="true" for a full disk.',
      labels: ['sink', 'full'],
    }),
    [{ full: 'true' }, { full: 'false' }],
  ),
  /** 1 with the refusal's code as `reason` while a sink is paused, else 0 without `reason` (see `paused`). */
  sinkPaused: gauge({
    name: 'sink_paused',
    help: 'Sinks paused because their destination refuses everything (credentials, authorization, a missing endpoint, TLS trust, a name that does not resolve): 1 with the error code as reason while paused, 0 otherwise. Records stay pending.',
    labels: ['sink', 'reason'],
    collect: pausedSinks,
  }),
  storeDamage: gauge({
    name: 'store_damage_detected_timestamp_seconds',
    help:
      'Unix time damage to the state database was last found at open, per kind (wal: committed WAL frames ' +
      'could not be replayed, rows lost; corrupt: the database was quarantined). Absent when never.',
    labels: ['kind'],
  }),
  deliveryLatency: perSinkSeries(
    histogram({
      name: 'delivery_latency_seconds',
      help: 'Time from outbox commit to confirmed delivery, per sink.',
      labels: ['sink'],
      buckets: DELIVERY_LATENCY_BUCKETS,
    }),
    EVERY_SINK,
  ),
  imdsLatency: histogram({
    name: 'imds_latency_seconds',
    help: 'IMDS Scheduled Events request duration.',
    buckets: IMDS_LATENCY_BUCKETS,
  }),
  configReloads: counter({
    name: 'config_reloads_total',
    help:
      'Configuration reloads (SIGHUP) by outcome: applied, unchanged, needs-restart (only settings that apply at ' +
      'the next start changed), invalid (refused; the running configuration stays).',
    labels: ['outcome'],
    start: RELOAD_OUTCOMES.map((outcome) => [{ outcome }, 0]),
  }),
  configLastReloadSuccessful: gauge({
    name: 'config_last_reload_successful',
    help:
      '0 when the last configuration reload was refused (the file on disk is invalid: a restart would fail ' +
      'too), 1 otherwise (also before any reload).',
    start: [[{}, 1]],
  }),
  periodicSends: counter({
    name: 'periodic_sends_total',
    help:
      'Periodic sends outside the outbox (kind="heartbeat"), per sink, by result (sent, failed); a failed one ' +
      'is replaced by the next, never retried.',
    labels: ['kind', 'sink', 'result'],
  }),
};

/** The forwarder's registry, its instruments (one per FORWARDER_METRICS entry, by the same key) and state. */
export interface ForwarderMetrics extends ForwarderMetricsState, Instruments<typeof FORWARDER_METRICS> {
  readonly registry: Registry;
}

export interface CreateMetricsOptions {
  /** Also export prom-client's process/runtime metrics (prefixed `sef_`). Default true. */
  processMetrics?: boolean;
  outboxStats?: () => readonly SinkQueueStats[];
  now?: () => number;
  /** Constant labels on every metric, e.g. { vm: 'vm-web-01' }. */
  defaultLabels?: Record<string, string>;
  /** The configured sinks (see addSinks); more can be added later. */
  sinks?: readonly string[];
}

/** Create the registry and every instrument of FORWARDER_METRICS. */
export function createMetrics(options: CreateMetricsOptions = {}): ForwarderMetrics {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  const state: ForwarderMetricsState = {
    sinks: new Set(),
    paused: new Map(),
    outboxStats: options.outboxStats,
    now: options.now ?? Date.now,
  };
  const instruments = registerMetrics(FORWARDER_METRICS, registry, METRIC_PREFIX, state);
  const metrics: ForwarderMetrics = Object.assign(state, instruments, { registry });
  addSinks(metrics, options.sinks ?? []);
  // The event-loop lag histogram samples on a timer; prom-client's default (every 10 ms) would wake an idle
  // forwarder 100 times a second. Once a second is plenty for a sidecar (the stall detector measures freezes).
  if (options.processMetrics ?? true) {
    collectDefaultMetrics({
      register: registry,
      prefix: METRIC_PREFIX,
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  }
  return metrics;
}

/**
 * Declare configured sinks: every per-sink series starts at 0 for each (counters with every known value of
 * their second label: dead letters by reason, store errors by full), and the outbox gauges report 0 for an
 * empty queue instead of nothing. Idempotent (each sink is zeroed once, before its first event is observed).
 */
export function addSinks(metrics: ForwarderMetrics, sinks: readonly string[]): void {
  for (const sink of sinks) {
    if (metrics.sinks.has(sink)) continue;
    metrics.sinks.add(sink);
    for (const [key, definition] of Object.entries(FORWARDER_METRICS) as Array<
      [keyof typeof FORWARDER_METRICS, ForwarderMetric<'counter' | 'gauge' | 'histogram', string>]
    >) {
      for (const labels of definition.perSink ?? []) startSeries(metrics[key], { sink, ...labels });
    }
  }
}

/** Declare periodic sends (a kind to a sink): their sent and failed series start at 0. */
export function addPeriodicSends(
  metrics: ForwarderMetrics,
  sends: ReadonlyArray<{ kind: string; sink: string }>,
): void {
  for (const { kind, sink } of sends)
    for (const result of ['sent', 'failed']) metrics.periodicSends.inc({ kind, sink, result }, 0);
}

/** Count one periodic send's outcome. */
export function observePeriodicSend(metrics: ForwarderMetrics, event: PeriodicSendEvent): void {
  metrics.periodicSends.inc({
    kind: event.kind,
    sink: event.sink,
    result: event.type === 'periodicSent' ? 'sent' : 'failed',
  });
}

/** Read the outbox gauges from `stats` on every scrape (typically `() => store.stats()`). */
export function bindOutboxStats(metrics: ForwarderMetrics, stats: () => readonly SinkQueueStats[]): void {
  metrics.outboxStats = stats;
}

/** Count one poll outcome; `latencyMs` (request duration) feeds the IMDS histogram. */
export function observePollOutcome(
  metrics: ForwarderMetrics,
  outcome: PollOutcome,
  latencyMs?: number,
): void {
  metrics.polls.inc();
  if (outcome.kind === 'failure') {
    metrics.pollFailures.inc({ reason: outcome.reason });
  } else {
    if (outcome.changed) metrics.documentChanges.inc();
    metrics.lastSuccessfulPoll.set(outcome.observed.wallMs / 1000);
  }
  if (latencyMs !== undefined && Number.isFinite(latencyMs) && latencyMs >= 0) {
    metrics.imdsLatency.observe(latencyMs / 1000);
  }
}

/** Count produced records by transition. */
export function observeRecords(metrics: ForwarderMetrics, records: readonly LifecycleRecord[]): void {
  for (const r of records) metrics.records.inc({ transition: r.transition });
}

/**
 * Feed one DeliveryEngine event: delivered → deliveries + latency; retry → failure{code} + retry;
 * deadLettered → dead letters{reason} (+ failure{code} for permanent failures); deadLettersDropped → dropped dead
 * letters; paused → failure{code} and the sink paused with that reason; resumed → no longer paused; storeError →
 * store errors; drained and idle count nothing.
 */
export function observeDeliveryEvent(metrics: ForwarderMetrics, event: DeliveryEngineEvent): void {
  addSinks(metrics, [event.sink]); // a sink nobody declared still gets all its series (a no-op otherwise)
  switch (event.type) {
    case 'delivered':
      metrics.deliveries.inc({ sink: event.sink }, event.count);
      for (const ms of event.latenciesMs)
        metrics.deliveryLatency.observe({ sink: event.sink }, Math.max(0, ms) / 1000);
      break;
    case 'retry':
      metrics.deliveryFailures.inc({ sink: event.sink, code: event.code });
      metrics.deliveryRetries.inc({ sink: event.sink });
      break;
    case 'deadLettered':
      metrics.deadLetters.inc({ sink: event.sink, reason: event.reason }, event.count);
      if (event.code !== undefined) metrics.deliveryFailures.inc({ sink: event.sink, code: event.code });
      break;
    case 'deadLettersDropped':
      metrics.deadLettersDropped.inc({ sink: event.sink }, event.count);
      break;
    case 'paused':
      metrics.deliveryFailures.inc({ sink: event.sink, code: event.code });
      metrics.paused.set(event.sink, event.code);
      break;
    case 'resumed':
      metrics.paused.delete(event.sink);
      break;
    case 'storeError':
      metrics.storeErrors.inc({ sink: event.sink, full: String(event.full) });
      break;
  }
}

/** Count one configuration reload; the sinks it added get their series at once. */
export function observeReload(metrics: ForwarderMetrics, report: ReloadReport): void {
  metrics.configReloads.inc({ outcome: report.outcome });
  metrics.configLastReloadSuccessful.set(report.outcome === 'invalid' ? 0 : 1);
  addSinks(metrics, report.sinks);
  // A removed or rebuilt sink's worker ended, and its pause with it (a rebuilt one probes afresh).
  for (const sink of [...report.removed, ...report.rebuilt]) metrics.paused.delete(sink);
}

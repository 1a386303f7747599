/**
 * The fleet process's Prometheus metrics (prom-client, on a private Registry), served at /metrics by the
 * dashboard server of `fleet run` and `fleet dashboard`. The names are a contract (alert rules, Grafana panels:
 * docs/fleet.md, Metrics); every series exists from the start at 0, never absent.
 *
 * - From the consumer (`fleet run` only), read at scrape time: per-partition lag and events behind (every
 *   partition of the hub; 0 on an instance that does not own the partition), records by result, heartbeats, failed commit
 *   attempts, owned partitions, the age of the newest ingested record.
 * - From the history (both), computed in SQL that SQLite and PostgreSQL share (maintenance pending = 1,
 *   observations affects_vm = 1, vms) and cached for HISTORY_CACHE_MS, so scrapes never hammer the store:
 *   pending events per type, affected VMs of pending events per location / zone / scale set and in all, lapsed
 *   approvals of the last 24 h, the VMs whose forwarders report / are silent / unhealthy / gone (coverage, in all
 *   and per forwarder version); plus the configured blast-radius threshold.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { counter, gauge, registerMetrics } from '../metric-table.ts';
import type { FleetConsumer } from './consumer.ts';
import { COVERAGE_STATES, coverageGauges, type FleetHistory, type StateCounts } from './history/index.ts';
import { toNumber } from './history/sql.ts';

export const FLEET_METRIC_PREFIX = 'sef_fleet_';
/** How long history-derived gauges are reused between scrapes. */
export const HISTORY_CACHE_MS = 10_000;
/** Event types whose pending series exist from the start (others appear once seen). */
export const MAINTENANCE_EVENT_TYPES = ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'] as const;
/** The scopes of `sef_fleet_pending_vms`, each a column of `vms` and `observations`. */
export const PENDING_SCOPES = ['location', 'zone', 'scale_set'] as const;
export type PendingScope = (typeof PENDING_SCOPES)[number];

/** Event-loop lag sampling (ms): once a second, as the forwarder, not prom-client's every 10 ms. */
const EVENT_LOOP_SAMPLE_MS = 1000;
const LAPSED_WINDOW = '24h';
const LAPSED_WINDOW_MS = 24 * 60 * 60 * 1000;
const RECORD_RESULTS = [
  ['accepted', 'accepted'],
  ['duplicate', 'duplicates'],
  ['rejected', 'rejected'],
] as const;

/** The history-derived values of one scrape. */
export interface HistoryGauges {
  /** Pending maintenance events per EventType. */
  pendingEvents: Record<string, number>;
  /** Distinct affected VMs of pending events per scope value (every value known in `vms`, 0 when none). */
  pendingVms: Record<PendingScope, Record<string, number>>;
  /** Affected VMs of all pending events (the sum of their affected_vms, as the summary's pending list). */
  affectedVmsPending: number;
  /** Maintenance events first seen in the last 24 h whose approval lapsed. */
  lapsedEvents: number;
  /** VMs by coverage state (src/fleet/history/coverage.ts), in all and per forwarder version. */
  forwarders: StateCounts;
  forwardersByVersion: Record<string, StateCounts>;
}

/** The label of an empty scope value: "(unknown)" location (as the summary), "(none)" zone or scale set. */
function scopeLabel(scope: PendingScope, value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  if (text !== '') return text;
  return scope === 'location' ? '(unknown)' : '(none)';
}

/** Computes the history gauges in SQL (the same statements on SQLite and PostgreSQL). */
export async function readHistoryGauges(history: FleetHistory, now: Date): Promise<HistoryGauges> {
  const db = history.db;
  const pendingEvents: Record<string, number> = {};
  for (const row of await db.all(
    'SELECT event_type AS k, count(*) AS n FROM maintenance WHERE pending = 1 GROUP BY event_type',
  ))
    pendingEvents[String(row.k ?? '')] = toNumber(row.n);

  const pendingVms = { location: {}, zone: {}, scale_set: {} } as HistoryGauges['pendingVms'];
  for (const row of await db.all('SELECT DISTINCT location, zone, scale_set FROM vms')) {
    for (const scope of PENDING_SCOPES) pendingVms[scope][scopeLabel(scope, row[scope])] = 0;
  }
  for (const scope of PENDING_SCOPES) {
    const rows = await db.all(
      `SELECT o.${scope} AS k, count(DISTINCT o.source) AS n
       FROM observations o JOIN maintenance m ON m.event_id = o.event_id AND m.occurrence = o.occurrence
       WHERE m.pending = 1 AND o.affects_vm = 1
       GROUP BY o.${scope}`,
    );
    for (const row of rows) pendingVms[scope][scopeLabel(scope, row.k)] = toNumber(row.n);
  }

  const [affected] = await db.all(
    'SELECT coalesce(sum(affected_vms), 0) AS n FROM maintenance WHERE pending = 1',
  );
  const [lapsed] = await db.all(
    "SELECT count(*) AS n FROM maintenance WHERE approval = 'lapsed' AND first_seen_at >= ?",
    [new Date(now.getTime() - LAPSED_WINDOW_MS).toISOString()],
  );
  const coverage = await coverageGauges(db, now);
  return {
    pendingEvents,
    pendingVms,
    affectedVmsPending: toNumber(affected?.n),
    lapsedEvents: toNumber(lapsed?.n),
    forwarders: coverage.byState,
    forwardersByVersion: coverage.byVersion,
  };
}

export interface FleetMetricsOptions {
  history: FleetHistory;
  /** The consumer of `fleet run`; without it (`fleet dashboard`) only the history gauges are exported. */
  consumer?: FleetConsumer | undefined;
  /** `dashboard.blastRadiusThreshold` (VMs). */
  blastRadiusThreshold: number;
  logger: Logger;
  /** Wall clock in ms (tests). */
  now?: () => number;
  /** Default HISTORY_CACHE_MS. */
  cacheMs?: number;
  /** Also export prom-client's process/runtime metrics (prefixed `sef_fleet_`). Default true. */
  processMetrics?: boolean;
}

export interface FleetMetrics {
  readonly registry: Registry;
}

const EMPTY: HistoryGauges = {
  pendingEvents: {},
  pendingVms: { location: {}, zone: {}, scale_set: {} },
  affectedVmsPending: 0,
  lapsedEvents: 0,
  forwarders: { reporting: 0, silent: 0, unhealthy: 0, gone: 0 },
  forwardersByVersion: {},
};

/** What the history gauges read: one cached computation per scrape, and the event types seen so far. */
interface HistorySources {
  gauges: () => Promise<HistoryGauges>;
  /** Event types with a pending series (MAINTENANCE_EVENT_TYPES, then every type seen). */
  seenTypes: Set<string>;
  blastRadiusThreshold: number;
}

/** What the consumer's metrics read (`fleet run` only). */
interface ConsumerSources {
  consumer: FleetConsumer;
  now: () => number;
  /** When the metrics were created: the age of the newest record counts from here until there is one. */
  startedAt: number;
}

/** The metrics read from the history (both `fleet run` and `fleet dashboard`), in /metrics order. */
const HISTORY_METRICS = {
  pendingEvents: gauge({
    name: 'pending_events',
    help: 'Maintenance events pending now (scheduled or started on an affected VM), per EventType.',
    labels: ['event_type'],
    collect: async ({ gauges, seenTypes }: HistorySources) => {
      const { pendingEvents } = await gauges();
      for (const type of Object.keys(pendingEvents)) seenTypes.add(type);
      return [...seenTypes].map((type) => [{ event_type: type }, pendingEvents[type] ?? 0] as const);
    },
  }),
  pendingVms: gauge({
    name: 'pending_vms',
    help:
      'Affected VMs of pending maintenance events, per scope (location, zone, scale_set) and name; every ' +
      'location, zone and scale set known in the history has a series ("(none)": no zone / scale set).',
    labels: ['scope', 'name'],
    collect: async ({ gauges }: HistorySources) => {
      const { pendingVms } = await gauges();
      return PENDING_SCOPES.flatMap((scope) =>
        Object.entries(pendingVms[scope]).map(([name, n]) => [{ scope, name }, n] as const),
      );
    },
  }),
  affectedVmsPending: gauge({
    name: 'affected_vms_pending',
    help: 'Affected VMs of all pending maintenance events (compare with sef_fleet_blast_radius_threshold).',
    collect: async ({ gauges }: HistorySources) => [[{}, (await gauges()).affectedVmsPending]],
  }),
  lapsedEvents: gauge({
    name: 'lapsed_events',
    help: 'Maintenance events first seen in the window whose approval lapsed (Azure started them first).',
    labels: ['window'],
    collect: async ({ gauges }: HistorySources) => [
      [{ window: LAPSED_WINDOW }, (await gauges()).lapsedEvents],
    ],
  }),
  forwarders: gauge({
    name: 'forwarders',
    help:
      'VMs whose forwarders send heartbeats, by coverage state: reporting, silent (no heartbeat for longer than ' +
      'the interval plus coverage.silentMargin), unhealthy (the last heartbeat reported dead letters, a stuck ' +
      'backlog, IMDS failing, a failing or paused sink), gone (deleted, or quiet longer than coverage.goneAfter).',
    labels: ['state'],
    collect: async ({ gauges }: HistorySources) => {
      const { forwarders } = await gauges();
      return COVERAGE_STATES.map((state) => [{ state }, forwarders[state]] as const);
    },
  }),
  forwardersByVersion: gauge({
    name: 'forwarders_by_version',
    help: 'VMs whose forwarders send heartbeats, per forwarder version and coverage state.',
    labels: ['version', 'state'],
    collect: async ({ gauges }: HistorySources) =>
      Object.entries((await gauges()).forwardersByVersion).flatMap(([version, counts]) =>
        COVERAGE_STATES.map((state) => [{ version, state }, counts[state]] as const),
      ),
  }),
  blastRadiusThreshold: gauge({
    name: 'blast_radius_threshold',
    help: 'The configured blast-radius threshold (dashboard.blastRadiusThreshold), in VMs.',
    collect: ({ blastRadiusThreshold }: HistorySources) => [[{}, blastRadiusThreshold]],
  }),
};

/** The consumer's metrics (`fleet run` only), in /metrics order after the history's. */
const CONSUMER_METRICS = {
  partitionLag: gauge({
    name: 'partition_lag_seconds',
    help:
      'Seconds between the enqueue time and the ingest time of the last ingested event of the partition ' +
      '(0 on an instance that does not own it).',
    labels: ['partition'],
    collect: ({ consumer }: ConsumerSources) =>
      consumer.partitionProgress().map((part) => [{ partition: part.partitionId }, part.lagSeconds] as const),
  }),
  partitionEventsBehind: gauge({
    name: 'partition_events_behind',
    help:
      "The partition's last enqueued sequence number minus the last ingested one (0 on an instance that " +
      'does not own it).',
    labels: ['partition'],
    collect: ({ consumer }: ConsumerSources) =>
      consumer
        .partitionProgress()
        .map((part) => [{ partition: part.partitionId }, part.eventsBehind] as const),
  }),
  records: counter({
    name: 'records_total',
    help: 'Records ingested by this instance, by result (accepted, duplicate, rejected).',
    labels: ['result'],
    collect: ({ consumer }: ConsumerSources) =>
      RECORD_RESULTS.map(([result, key]) => [{ result }, consumer.stats[key]] as const),
  }),
  heartbeats: counter({
    name: 'heartbeats_total',
    help: "Forwarders' heartbeats ingested by this instance (kept as each VM's latest, not as records).",
    collect: ({ consumer }: ConsumerSources) => [[{}, consumer.stats.heartbeats]],
  }),
  commitFailures: counter({
    name: 'commit_failures_total',
    help: 'Failed attempts to commit a batch to the history (the partition is held and the commit retried).',
    collect: ({ consumer }: ConsumerSources) => [[{}, consumer.stats.commitRetries]],
  }),
  ownedPartitions: gauge({
    name: 'owned_partitions',
    help: 'Partitions this instance processes now.',
    collect: ({ consumer }: ConsumerSources) => [[{}, consumer.stats.partitions.length]],
  }),
  lastRecordAge: gauge({
    name: 'last_record_age_seconds',
    help: 'Seconds since the newest record ingested by this instance was enqueued (since start when none).',
    collect: ({ consumer, now, startedAt }: ConsumerSources) => [
      [{}, Math.max(0, (now() - (consumer.lastRecordEnqueuedAt ?? startedAt)) / 1000)],
    ],
  }),
};

/**
 * The history gauges of a scrape: one computation shared by every gauge of a scrape (and by concurrent scrapes),
 * reused for `cacheMs`; a failed one serves the last values (and is retried after the cache period).
 */
function cachedHistoryGauges(
  history: FleetHistory,
  logger: Logger,
  now: () => number,
  cacheMs: number,
): () => Promise<HistoryGauges> {
  let cached: { at: number; value: Promise<HistoryGauges> } | undefined;
  let lastGood: HistoryGauges = EMPTY;
  return () => {
    const t = now();
    if (cached === undefined || t - cached.at >= cacheMs) {
      const value = readHistoryGauges(history, new Date(t)).then(
        (gauges) => {
          lastGood = gauges;
          return gauges;
        },
        (error: unknown) => {
          // Keep the last values; /readyz reports the history.
          logger.warn(
            { err: errorMessage(error) },
            'cannot compute the history metrics; serving the last values',
          );
          return lastGood;
        },
      );
      cached = { at: t, value };
    }
    return cached.value;
  };
}

/** Creates the registry and every fleet instrument (HISTORY_METRICS, CONSUMER_METRICS); see the module comment. */
export function createFleetMetrics(options: FleetMetricsOptions): FleetMetrics {
  const registry = new Registry();
  const now = options.now ?? Date.now;
  const startedAt = now();
  registerMetrics(HISTORY_METRICS, registry, FLEET_METRIC_PREFIX, {
    gauges: cachedHistoryGauges(options.history, options.logger, now, options.cacheMs ?? HISTORY_CACHE_MS),
    seenTypes: new Set<string>(MAINTENANCE_EVENT_TYPES),
    blastRadiusThreshold: options.blastRadiusThreshold,
  });
  if (options.consumer !== undefined)
    registerMetrics(CONSUMER_METRICS, registry, FLEET_METRIC_PREFIX, {
      consumer: options.consumer,
      now,
      startedAt,
    });
  if (options.processMetrics ?? true)
    collectDefaultMetrics({
      register: registry,
      prefix: FLEET_METRIC_PREFIX,
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
  return { registry };
}

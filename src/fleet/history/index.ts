/**
 * The fleet history: ONE narrow, asynchronous interface over two stores. The consumer, the dashboard,
 * `fleet report`, `import`, `migrate` and the exports use only `FleetHistory`.
 *
 * - SQLite (a file path): the embedded default, one host, zero setup.
 * - PostgreSQL (`postgres://` / `postgresql://` URL): shared by consumers on several hosts; optionally with
 *   Microsoft Entra authentication (Azure Database for PostgreSQL flexible server).
 *
 * Both run the same SQL (`ingest.ts`, `queries.ts`, `schema.ts`) through `SqlDatabase` (`sql.ts`).
 */

import { toError } from '../../errors.ts';
import {
  type CoverageDay,
  type CoverageReport,
  type CoverageSettings,
  type CoverageState,
  type CoverageVm,
  coverageReport,
  DEFAULT_COVERAGE_SETTINGS,
  listCoverageVms,
  readCoverageSettings,
  vmCoverageDays,
  writeCoverageSettings,
} from './coverage.ts';
import { foldCoverageCounts, sweepCoverage } from './coverage-changes.ts';
import { coveredVms, pruneCoverageRollups, refreshCoverage } from './coverage-rollups.ts';
import { DimensionDeltas } from './dimensions.ts';
import { advanceReadThrough, pruneQuietVms } from './heartbeat-ingest.ts';
import {
  emptyIngestResult,
  type IngestResult,
  ingestBatch,
  lockEvents,
  type RawFleetEvent,
} from './ingest.ts';
import { foldViewCounts } from './partition-counts.ts';
import {
  distinctValues,
  type EventFilter,
  type FleetSummary,
  type IngestStats,
  ingestStats,
  listMaintenance,
  listObservations,
  listPending,
  listVms,
  maintenanceDetail,
  type Page,
  type PageRequest,
  summarize,
  type TimelineEntry,
  type ValueField,
  type VmView,
  vmTimeline,
} from './queries.ts';
import { eventKey } from './rollups/aggregate.ts';
import { applyIntervalChanges } from './rollups/impacts.ts';
import { PendingDeltas, pendingObservation } from './rollups/pending.ts';
import { applyEntryChanges, type EntryChange, refreshRollups } from './rollups/store.ts';
import type { MaintenanceView, ObservationView } from './rows.ts';
import { migrate, SCHEMA_VERSION } from './schema.ts';
import type { SqlDatabase } from './sql.ts';
import { openSqliteDatabase } from './sqlite-database.ts';
import {
  type BlastRadiusPage,
  type BlastScope,
  blastRadius,
  DEFAULT_BLAST_RADIUS_THRESHOLD,
  type EventApprovals,
  type EventRecord,
  eventApprovals,
  eventRecords,
  type LeadTimeAndImpact,
  leadTimeAndImpact,
  type TimeSeries,
  timeSeries,
} from './views.ts';

export * from './coverage.ts';
export type { IngestResult, RawFleetEvent } from './ingest.ts';
export * from './queries.ts';
export type { MaintenanceView, ObservationView } from './rows.ts';
export { LegacyHistoryError, SCHEMA_VERSION, SchemaTooNewError } from './schema.ts';
export type { SqlDatabase } from './sql.ts';
export { MissingDatabaseError } from './sqlite-database.ts';
export * from './views.ts';

/** What one prune() removed. */
export interface PruneResult {
  events: number;
  observations: number;
  records: number;
  rejected: number;
  vms: number;
  /** Latest heartbeats of VMs quiet since before the cut-off, and days of coverage before it. */
  heartbeats: number;
  coverageDays: number;
}

/** VMs the coverage sweep moves per transaction (small, so ingest never waits long behind one). */
const SWEEP_BATCH = 500;

/** Maintenance events removed per prune transaction (small, so ingest never waits long behind one). */
const PRUNE_BATCH = 200;

/**
 * How often ingest rebuilds the stale rollup buckets of each level (4 hours, a day, 8 days, 64 days): the fine
 * ones often (the hour digests are read instead of a stale 4-hour bucket), the coarse ones, whose rebuild reads
 * more, less often (a stale 64-day bucket costs a reader its eight 8-day buckets). A timer rebuilds what is left
 * stale when ingest pauses.
 */
export const LEVEL_REFRESH_MS = [0, 2_000, 10_000, 60_000, 300_000] as const;
export const REFRESH_IDLE_MS = 10_000;

/** The fleet history over one store; see the module comment. */
export class FleetHistory {
  readonly db: SqlDatabase;
  readonly #now: () => Date;
  #refreshing: Promise<number> | undefined;
  /** performance.now() of the last rebuild of each level's stale buckets. */
  readonly #refreshedAt: number[] = LEVEL_REFRESH_MS.map(() => Number.NEGATIVE_INFINITY);
  #refreshTimer: NodeJS.Timeout | undefined;
  #refreshFailure: Error | undefined;
  #closed = false;
  /** The thresholds ingest judges heartbeats by (setCoverageSettings; the defaults until then). */
  #coverage: CoverageSettings = DEFAULT_COVERAGE_SETTINGS;

  constructor(db: SqlDatabase, now: () => Date = () => new Date()) {
    this.db = db;
    this.#now = now;
  }

  /** A file path, or the database URL without its password. */
  get description(): string {
    return this.db.description;
  }

  /**
   * Ingests a batch in one transaction (ingest.ts); then, at most every REFRESH_INTERVAL_MS, rebuilds the
   * rollup buckets it left stale (refreshRollups).
   */
  async ingest(batch: readonly RawFleetEvent[]): Promise<IngestResult> {
    if (batch.length === 0) return emptyIngestResult();
    const settings = { ingestedAt: this.#now().toISOString(), backlogSeconds: this.#coverage.backlogSeconds };
    const result = await this.db.transaction((tx) => ingestBatch(tx, batch, settings));
    // Heartbeats too: a VM's first heartbeat of a day leaves that day's covered VMs stale (coverage-rollups.ts).
    if (result.eventsTouched > 0 || result.heartbeats > 0) await this.#refreshDue();
    return result;
  }

  /**
   * Rebuilds the rollup buckets whose hours changed since they were built (rollups/store.ts) and the coverage
   * rollups (coverage-rollups.ts), folds the counts the views read into one row per key (partition-counts.ts), and
   * sweeps the coverage counts (#sweepCoverage). Readers are exact without it
   * (they read a stale bucket's children, the VMs not swept); it keeps what they read small. Returns the buckets rebuilt
   * (0 when another consumer of the same PostgreSQL database is refreshing right now).
   */
  refreshRollups(maxLevel: number = LEVEL_REFRESH_MS.length - 1): Promise<number> {
    const run = async (): Promise<number> => {
      // One refresh at a time in this process: a second waits for the first, then covers what it left.
      await this.#refreshing?.catch(() => undefined);
      const started = performance.now();
      const rebuilt =
        (await refreshRollups(this.db, maxLevel)) + (await this.db.transaction((tx) => refreshCoverage(tx)));
      await this.db.transaction((tx) => foldViewCounts(tx));
      await this.#sweepCoverage();
      for (let level = 1; level <= maxLevel; level++) this.#refreshedAt[level] = started;
      return rebuilt;
    };
    const promise = run();
    this.#refreshing = promise;
    return promise.finally(() => {
      if (this.#refreshing === promise) this.#refreshing = undefined;
    });
  }

  /**
   * Counts the VMs that went silent or gone (or quiet again) since they were counted in their state now
   * (coverage-changes.ts), in steps of SWEEP_BATCH VMs, then folds the counts' partition rows into one per key.
   * Readers are exact without it; it keeps what they read small.
   */
  async #sweepCoverage(): Promise<void> {
    const settings = await readCoverageSettings(this.db);
    const now = this.#now();
    let found: number;
    do found = await this.db.transaction((tx) => sweepCoverage(tx, now, settings, SWEEP_BATCH));
    while (found === SWEEP_BATCH);
    await this.db.transaction((tx) => foldCoverageCounts(tx));
  }

  /** The last automatic refresh's failure (the next one retries; readers stay exact meanwhile). */
  get refreshFailure(): Error | undefined {
    return this.#refreshFailure;
  }

  /** Rebuilds the levels that are due (LEVEL_REFRESH_MS), and arms the timer for the rest. */
  async #refreshDue(): Promise<void> {
    if (this.#refreshing !== undefined) return;
    const now = performance.now();
    let due = 0;
    while (
      due + 1 < LEVEL_REFRESH_MS.length &&
      now - this.#refreshedAt[due + 1]! >= LEVEL_REFRESH_MS[due + 1]!
    )
      due++;
    if (due > 0) {
      try {
        await this.refreshRollups(due);
        this.#refreshFailure = undefined;
      } catch (error) {
        this.#refreshFailure = toError(error);
      }
    }
    // When ingest pauses, everything left stale is rebuilt REFRESH_IDLE_MS after the last batch.
    clearTimeout(this.#refreshTimer);
    if (this.#closed) return;
    this.#refreshTimer = setTimeout(() => {
      this.#refreshTimer = undefined;
      this.refreshRollups().then(
        () => {
          this.#refreshFailure = undefined;
        },
        (error: unknown) => {
          this.#refreshFailure = toError(error);
        },
      );
    }, REFRESH_IDLE_MS);
    this.#refreshTimer.unref();
  }

  /**
   * The partition was read through `atMs` (the consumer found it caught up then): VMs on it are quiet only
   * measured up to there (coverage.ts). Never moves a partition's mark back.
   */
  async recordReadThrough(partitionId: string, atMs: number): Promise<void> {
    await this.db.transaction((tx) => advanceReadThrough(tx, new Map([[partitionId, atMs]])));
    // VMs may have gone quiet up to there: the coverage sweep runs on the refresh's cadence (#refreshDue).
    await this.#refreshDue();
  }

  /** Sets the coverage thresholds (fleet config `coverage`) for ingest here and every reader of the history. */
  async setCoverageSettings(settings: CoverageSettings): Promise<void> {
    this.#coverage = settings;
    await this.db.transaction((tx) => writeCoverageSettings(tx, settings));
  }

  // Coverage (coverage.ts).
  /** Counts by state, version, region and scale set, the partitions' read-through, the first silent and unhealthy VMs. */
  coverage(filter: CoverageReport['filter'] = {}, pageLimit?: number): Promise<CoverageReport> {
    return coverageReport(this.db, filter, this.#now(), undefined, pageLimit);
  }
  /** A page of the VMs in one coverage state. */
  async coverageVms(
    state: CoverageState,
    filter: CoverageReport['filter'] = {},
    page: PageRequest = {},
  ): Promise<Page<CoverageVm> & { total: number }> {
    return listCoverageVms(this.db, state, filter, page, this.#now(), await readCoverageSettings(this.db));
  }
  /** VMs that sent a heartbeat in the filter's window (its region, zone and scale set). */
  coveredVms(filter: EventFilter = {}): Promise<number> {
    return coveredVms(this.db, filter);
  }
  /** The days (and hours) one VM was covered. */
  coverageDays(
    vm: string,
    window: { since?: string | undefined; until?: string | undefined } = {},
  ): Promise<{ source: string; days: CoverageDay[] } | undefined> {
    return vmCoverageDays(this.db, vm, window);
  }

  /** The summary, with the VMs covered in its window. */
  async summary(filter: EventFilter = {}): Promise<FleetSummary> {
    return this.#withCovered(filter, summarize(this.db, filter, this.#now()));
  }

  /** A view of the window `filter` with the VMs covered in that window (every maintenance view says it). */
  async #withCovered<T>(filter: EventFilter, view: Promise<T>): Promise<T & { coveredVms: number }> {
    const [value, covered] = await Promise.all([view, coveredVms(this.db, filter)]);
    return { ...value, coveredVms: covered };
  }
  events(filter: EventFilter = {}, page: PageRequest = {}): Promise<Page<MaintenanceView>> {
    return listMaintenance(this.db, filter, page);
  }
  pending(
    filter: EventFilter = {},
    page: PageRequest = {},
  ): Promise<Page<MaintenanceView> & { total: number }> {
    return listPending(this.db, filter, page);
  }
  observations(filter: EventFilter = {}, page: PageRequest = {}): Promise<Page<ObservationView>> {
    return listObservations(this.db, filter, page);
  }
  event(eventId: string, occurrence = 1) {
    return maintenanceDetail(this.db, eventId, occurrence);
  }
  timeline(vm: string, limit?: number): Promise<TimelineEntry[]> {
    return vmTimeline(this.db, vm, limit);
  }
  vms(page: PageRequest = {}): Promise<Page<VmView>> {
    return listVms(this.db, page);
  }
  /** A filter field's distinct values (the dashboard's drop-downs); paged. */
  values(field: ValueField, page: PageRequest = {}): Promise<Page<string>> {
    return distinctValues(this.db, field, page);
  }
  stats(): Promise<IngestStats> {
    return ingestStats(this.db);
  }

  // The operator views (views.ts).
  /** Maintenance events per UTC day by type, with their impact. */
  timeSeries(filter: EventFilter = {}): Promise<TimeSeries> {
    return this.#withCovered(filter, timeSeries(this.db, filter));
  }
  /** Pending VMs and the most VMs impacted at once per scale set, zone and region; paged. */
  blastRadius(
    filter: EventFilter = {},
    threshold: number = DEFAULT_BLAST_RADIUS_THRESHOLD,
    page: PageRequest = {},
    scope?: BlastScope,
  ): Promise<BlastRadiusPage> {
    return this.#withCovered(filter, blastRadius(this.db, filter, threshold, page, scope));
  }
  /** Notice lead time and observed impact per event type and region. */
  leadTimeAndImpact(filter: EventFilter = {}): Promise<LeadTimeAndImpact> {
    return this.#withCovered(filter, leadTimeAndImpact(this.db, filter));
  }
  /** The records of one event per VM (affected VMs only unless affectsOnly is false); paged. */
  eventRecords(
    eventId: string,
    occurrence = 1,
    options: { affectsOnly?: boolean | undefined } = {},
    page: PageRequest = {},
  ): Promise<Page<EventRecord>> {
    return eventRecords(this.db, eventId, occurrence, options, page);
  }
  /** The approvals of one event; undefined when unknown. */
  eventApprovals(eventId: string, occurrence = 1): Promise<EventApprovals | undefined> {
    return eventApprovals(this.db, eventId, occurrence);
  }

  /** Records the retention the consumers prune to, for the report and the dashboard. */
  async setRetention(retention: string): Promise<void> {
    await this.db.transaction((tx) =>
      tx.run(
        `INSERT INTO history_settings (name, value) VALUES ('retention', ?)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
        [retention],
      ),
    );
  }

  /**
   * Removes maintenance events whose newest record is older than `cutoff` (with their observations and
   * records), rejected bodies received before it, VMs silent since then, the latest heartbeats of VMs quiet since
   * then and the days of coverage before it — in small transactions.
   */
  async prune(cutoff: Date): Promise<PruneResult> {
    const before = cutoff.toISOString();
    const result: PruneResult = {
      events: 0,
      observations: 0,
      records: 0,
      rejected: 0,
      vms: 0,
      heartbeats: 0,
      coverageDays: 0,
    };
    for (;;) {
      const done = await this.db.transaction(async (tx) => {
        const keys = await tx.all(
          'SELECT event_id, occurrence FROM maintenance WHERE last_record_at < ? ORDER BY last_record_at LIMIT ?',
          [before, PRUNE_BATCH],
        );
        const changes: EntryChange[] = [];
        const dimensions = new DimensionDeltas();
        const pending = new PendingDeltas();
        await lockEvents(
          tx,
          keys.map((k) => ({ eventId: String(k.event_id), occurrence: Number(k.occurrence) })),
        );
        for (const k of keys) {
          const params = [String(k.event_id), Number(k.occurrence)];
          result.records += (
            await tx.run('DELETE FROM records WHERE event_id = ? AND occurrence = ?', params)
          ).changes;
          const observations = await tx.all(
            `DELETE FROM observations WHERE event_id = ? AND occurrence = ?
             RETURNING source, location, zone, scale_set, affects_vm`,
            params,
          );
          result.observations += observations.length;
          // What the row holds now, under its lock (an ingest may have re-folded it since it was chosen).
          const [gone] = await tx.all(
            `DELETE FROM maintenance WHERE event_id = ? AND occurrence = ?
             RETURNING first_seen_at, event_type, status, pending`,
            params,
          );
          if (gone === undefined) continue;
          result.events++;
          // A pending event pruned (its VMs silent since before the cutoff) leaves the pending VMs per scope.
          if (Number(gone.pending) === 1)
            for (const o of observations)
              if (Number(o.affects_vm) === 1) pending.add(pendingObservation(o), -1);
          dimensions.add('type', String(gone.event_type), -1);
          dimensions.add('status', String(gone.status), -1);
          changes.push({
            key: eventKey(String(k.event_id), Number(k.occurrence)),
            before: String(gone.first_seen_at),
            after: null,
          });
        }
        await dimensions.write(tx, '*');
        await pending.write(tx, '*');
        await applyIntervalChanges(
          tx,
          keys.map((k) => ({ eventId: String(k.event_id), occurrence: Number(k.occurrence) })),
          [],
        );
        await applyEntryChanges(tx, changes);
        return keys.length < PRUNE_BATCH;
      });
      if (done) break;
    }
    for (;;) {
      const step = await this.db.transaction((tx) => pruneQuietVms(tx, cutoff, PRUNE_BATCH));
      result.vms += step.vms;
      result.heartbeats += step.heartbeats;
      if (step.done) break;
    }
    await this.db.transaction(async (tx) => {
      result.rejected = (await tx.run('DELETE FROM rejected WHERE received_at < ?', [before])).changes;
      result.coverageDays = (
        await tx.run('DELETE FROM coverage_days WHERE day < ?', [before.slice(0, 10)])
      ).changes;
      if (result.coverageDays > 0) await pruneCoverageRollups(tx, before.slice(0, 10));
    });
    await this.refreshRollups();
    return result;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#refreshTimer);
    await this.#refreshing?.catch(() => undefined);
    return this.db.close();
  }
}

/** Where the history lives and how to reach it. */
export interface HistoryTarget {
  /** A SQLite file path, or a postgres:// / postgresql:// URL. */
  database: string;
  /** PostgreSQL password (the project's secret forms), when not in the URL. */
  password?: (() => string) | undefined;
  /** PostgreSQL with Microsoft Entra: where access tokens come from. */
  entra?: { getToken(): Promise<{ token: string; expiresOnTimestamp: number }> } | undefined;
  poolSize?: number | undefined;
  /** Do not create or migrate: read an existing history (reports, a read-only dashboard). */
  readOnly?: boolean | undefined;
  now?: () => Date;
}

/** True for a PostgreSQL URL. */
export function isPostgresUrl(database: string): boolean {
  return /^postgres(ql)?:\/\//i.test(database);
}

/** Thrown when a read-only open finds a history older than this build's schema. */
export class SchemaOutdatedError extends Error {
  constructor(description: string, found: number) {
    super(
      `the fleet history ${description} has schema version ${found}, older than this build's ${SCHEMA_VERSION}: ` +
        'start `fleet run` (or `fleet import`) on it once to migrate it, then try again',
    );
    this.name = 'SchemaOutdatedError';
  }
}

/** Opens the history at `target`, applying migrations (under the database-wide lock) unless read-only. */
export async function openHistory(target: HistoryTarget): Promise<FleetHistory> {
  const now = target.now ?? (() => new Date());
  let db: SqlDatabase;
  if (isPostgresUrl(target.database)) {
    const { openPostgresDatabase } = await import('./postgres-database.ts');
    db = await openPostgresDatabase({
      url: target.database,
      password: target.password,
      entra: target.entra,
      poolSize: target.poolSize,
    });
  } else {
    db = openSqliteDatabase({ path: target.database, readOnly: target.readOnly ?? false });
  }
  try {
    if (target.readOnly) {
      const rows = await db.all('SELECT max(version) AS v FROM schema_migrations').catch(() => [{ v: 0 }]);
      const found = Number(rows[0]?.v ?? 0);
      if (found < SCHEMA_VERSION) throw new SchemaOutdatedError(db.description, found);
    } else {
      await db.withMigrationLock((tx) => migrate(tx, now));
    }
  } catch (error) {
    await db.close();
    throw error;
  }
  const history = new FleetHistory(db, now);
  // Buckets a migration's backfill (or a consumer stopped before its refresh) left stale.
  if (!target.readOnly) await history.refreshRollups();
  return history;
}

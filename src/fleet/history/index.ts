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
import { type IngestResult, ingestBatch, type RawFleetEvent } from './ingest.ts';
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
}

/** Maintenance events removed per prune transaction (small, so ingest never waits long behind one). */
const PRUNE_BATCH = 200;

/** The fleet history over one store; see the module comment. */
export class FleetHistory {
  readonly db: SqlDatabase;
  readonly #now: () => Date;

  constructor(db: SqlDatabase, now: () => Date = () => new Date()) {
    this.db = db;
    this.#now = now;
  }

  /** A file path, or the database URL without its password. */
  get description(): string {
    return this.db.description;
  }

  /** Ingests a batch in one transaction; see ingest.ts. */
  ingest(batch: readonly RawFleetEvent[]): Promise<IngestResult> {
    if (batch.length === 0)
      return Promise.resolve({ accepted: 0, duplicates: 0, rejected: 0, eventsTouched: 0, rejections: [] });
    const ingestedAt = this.#now().toISOString();
    return this.db.transaction((tx) => ingestBatch(tx, batch, ingestedAt));
  }

  summary(filter: EventFilter = {}): Promise<FleetSummary> {
    return summarize(this.db, filter, this.#now());
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
  values(field: ValueField): Promise<string[]> {
    return distinctValues(this.db, field);
  }
  stats(): Promise<IngestStats> {
    return ingestStats(this.db);
  }

  // The operator views (views.ts).
  /** Maintenance events per UTC day by type, with their impact. */
  timeSeries(filter: EventFilter = {}): Promise<TimeSeries> {
    return timeSeries(this.db, filter);
  }
  /** Pending VMs and the most VMs impacted at once per scale set, zone and region; paged. */
  blastRadius(
    filter: EventFilter = {},
    threshold: number = DEFAULT_BLAST_RADIUS_THRESHOLD,
    page: PageRequest = {},
    scope?: BlastScope,
  ): Promise<BlastRadiusPage> {
    return blastRadius(this.db, filter, threshold, page, scope);
  }
  /** Notice lead time and observed impact per event type and region. */
  leadTimeAndImpact(filter: EventFilter = {}): Promise<LeadTimeAndImpact> {
    return leadTimeAndImpact(this.db, filter);
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
   * records), rejected bodies received before it, and VMs silent since then — in small transactions.
   */
  async prune(cutoff: Date): Promise<PruneResult> {
    const before = cutoff.toISOString();
    const result: PruneResult = { events: 0, observations: 0, records: 0, rejected: 0, vms: 0 };
    for (;;) {
      const done = await this.db.transaction(async (tx) => {
        const keys = await tx.all(
          'SELECT event_id, occurrence FROM maintenance WHERE last_record_at < ? ORDER BY last_record_at LIMIT ?',
          [before, PRUNE_BATCH],
        );
        for (const k of keys) {
          const params = [String(k.event_id), Number(k.occurrence)];
          await tx.lockKey(`${params[0]}#${params[1]}`);
          result.records += (
            await tx.run('DELETE FROM records WHERE event_id = ? AND occurrence = ?', params)
          ).changes;
          result.observations += (
            await tx.run('DELETE FROM observations WHERE event_id = ? AND occurrence = ?', params)
          ).changes;
          result.events += (
            await tx.run('DELETE FROM maintenance WHERE event_id = ? AND occurrence = ?', params)
          ).changes;
        }
        return keys.length < PRUNE_BATCH;
      });
      if (done) break;
    }
    await this.db.transaction(async (tx) => {
      result.rejected = (await tx.run('DELETE FROM rejected WHERE received_at < ?', [before])).changes;
      result.vms = (await tx.run('DELETE FROM vms WHERE last_record_at < ?', [before])).changes;
    });
    return result;
  }

  close(): Promise<void> {
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
  return new FleetHistory(db, now);
}

/**
 * The fleet history's schema as numbered migrations, the same for SQLite and PostgreSQL (types both accept:
 * TEXT, INTEGER, BIGINT, DOUBLE PRECISION). Applied at start under the database-wide migration lock, so
 * consumers that start together migrate once; `schema_migrations` records what was applied. Tables and columns
 * are documented in docs/fleet.md.
 *
 * Storage: `records` is an ordinary (rowid) table in SQLite, so a record's body sits in the table's leaf page
 * instead of spilling to an overflow page of a WITHOUT ROWID b-tree, and its indexes hold only their keys.
 */
import {
  countedStateColumn,
  coverageCountBackfill,
  coverageCountTables,
  coverageDimensionCountTables,
} from './coverage-counts.ts';
import { backfillCoverageRollups, coverageRollupTables } from './coverage-rollups.ts';
import { dimensionBackfill, dimensionTables } from './dimensions.ts';
import { backfillIntervals, impactSlotsTable, impactTables } from './rollups/impacts.ts';
import { backfillPending, pendingTables } from './rollups/pending.ts';
import { backfillRollups, rollupTables } from './rollups/store.ts';
import type { SqlExecutor } from './sql.ts';

interface Migration {
  version: number;
  name: string;
  statements: (dialect: SqlExecutor['dialect']) => string[];
  /** Fills what the statements created from the rows already stored, in the same transaction. */
  backfill?: (tx: SqlExecutor) => Promise<void>;
}

const OBSERVATION_COLUMNS = `
  vm_name TEXT NOT NULL,
  vm_id TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  location TEXT NOT NULL,
  zone TEXT NOT NULL,
  scale_set TEXT NOT NULL,
  event_type TEXT NOT NULL,
  affects_vm INTEGER NOT NULL,
  resources TEXT NOT NULL,
  description TEXT NOT NULL,
  event_source TEXT NOT NULL,
  status TEXT NOT NULL,
  first_seen_status TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  not_before TEXT,
  notice_seconds DOUBLE PRECISION,
  advertised_seconds DOUBLE PRECISION,
  started_at TEXT,
  ended_at TEXT,
  inferred INTEGER,
  reason TEXT,
  host_rebooted INTEGER,
  downtime_seconds DOUBLE PRECISION,
  longest_stall_ms DOUBLE PRECISION,
  observed_seconds DOUBLE PRECISION,
  approval TEXT,
  approved_at TEXT,
  approval_rule TEXT,
  updates INTEGER NOT NULL,
  missing TEXT NOT NULL,
  vm_deleted INTEGER NOT NULL,
  records INTEGER NOT NULL,
  transitions TEXT NOT NULL,
  last_record_at TEXT NOT NULL`;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, observations, maintenance events, VMs, rejected records, ingest counters',
    statements: (dialect) => [
      `CREATE TABLE records (
        source TEXT NOT NULL,
        id TEXT NOT NULL,
        transition TEXT NOT NULL,
        event_id TEXT NOT NULL,
        occurrence INTEGER NOT NULL,
        time TEXT NOT NULL,
        vm_name TEXT NOT NULL,
        event_type TEXT NOT NULL,
        partition_id TEXT NOT NULL,
        sequence_number BIGINT NOT NULL,
        enqueued_at TEXT NOT NULL,
        ingested_at TEXT NOT NULL,
        body ${dialect === 'sqlite' ? 'BLOB' : 'BYTEA'} NOT NULL,
        PRIMARY KEY (source, id)
      )${
        // PostgreSQL compresses a row's text only above toast_tuple_target (2 KB by default); bodies are ~1.6 KB
        // of JSON, which pglz shrinks to about a third, so ask for compression from 256 bytes on.
        dialect === 'postgres' ? ' WITH (toast_tuple_target = 256)' : ''
      }`,
      'CREATE INDEX records_by_event ON records (event_id, occurrence)',
      'CREATE INDEX records_by_vm_name ON records (vm_name)',
      `CREATE TABLE observations (
        event_id TEXT NOT NULL,
        occurrence INTEGER NOT NULL,
        source TEXT NOT NULL,${OBSERVATION_COLUMNS},
        PRIMARY KEY (event_id, occurrence, source)
      )`,
      'CREATE INDEX observations_by_first_seen ON observations (first_seen_at)',
      'CREATE INDEX observations_by_source ON observations (source, first_seen_at)',
      'CREATE INDEX observations_affected ON observations (event_id, occurrence, affects_vm, source)',
      `CREATE TABLE maintenance (
        event_id TEXT NOT NULL,
        occurrence INTEGER NOT NULL,
        event_type TEXT NOT NULL,
        status TEXT NOT NULL,
        pending INTEGER NOT NULL,
        first_seen_at TEXT NOT NULL,
        not_before TEXT,
        notice_seconds DOUBLE PRECISION,
        advertised_seconds DOUBLE PRECISION,
        observed_seconds DOUBLE PRECISION,
        started_at TEXT,
        ended_at TEXT,
        inferred INTEGER,
        reason TEXT,
        approval TEXT,
        approved_at TEXT,
        approval_rule TEXT,
        updates INTEGER NOT NULL,
        missing TEXT NOT NULL,
        vm_deleted INTEGER NOT NULL,
        affected_vms INTEGER NOT NULL,
        affected_names TEXT NOT NULL,
        reporting_vms INTEGER NOT NULL,
        observers INTEGER NOT NULL,
        location TEXT NOT NULL,
        zone TEXT NOT NULL,
        scale_set TEXT NOT NULL,
        description TEXT NOT NULL,
        event_source TEXT NOT NULL,
        records INTEGER NOT NULL,
        n_scheduled INTEGER NOT NULL,
        n_started INTEGER NOT NULL,
        n_completed INTEGER NOT NULL,
        n_canceled INTEGER NOT NULL,
        n_updated INTEGER NOT NULL,
        n_approved INTEGER NOT NULL,
        last_record_at TEXT NOT NULL,
        PRIMARY KEY (event_id, occurrence)
      )`,
      'CREATE INDEX maintenance_by_first_seen ON maintenance (first_seen_at, event_id, occurrence)',
      'CREATE INDEX maintenance_pending ON maintenance (pending, not_before)',
      // The type filter, and the summary's GROUP BY type × region × zone × scale set read from the index alone.
      'CREATE INDEX maintenance_by_dimensions ON maintenance (event_type, location, zone, scale_set, first_seen_at)',
      'CREATE INDEX maintenance_by_status ON maintenance (status, first_seen_at)',
      'CREATE INDEX maintenance_by_location ON maintenance (location, first_seen_at)',
      'CREATE INDEX maintenance_by_zone ON maintenance (zone, first_seen_at)',
      'CREATE INDEX maintenance_by_scale_set ON maintenance (scale_set, first_seen_at)',
      'CREATE INDEX maintenance_by_last_record ON maintenance (last_record_at)',
      `CREATE TABLE vms (
        source TEXT PRIMARY KEY,
        vm_name TEXT NOT NULL,
        vm_id TEXT NOT NULL,
        location TEXT NOT NULL,
        zone TEXT NOT NULL,
        scale_set TEXT NOT NULL,
        records INTEGER NOT NULL,
        first_record_at TEXT NOT NULL,
        last_record_at TEXT NOT NULL
      )`,
      'CREATE INDEX vms_by_name ON vms (vm_name)',
      `CREATE TABLE rejected (
        seq ${dialect === 'sqlite' ? 'INTEGER PRIMARY KEY AUTOINCREMENT' : 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY'},
        partition_id TEXT NOT NULL,
        sequence_number BIGINT NOT NULL,
        enqueued_at TEXT NOT NULL,
        received_at TEXT NOT NULL,
        reason TEXT NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (partition_id, sequence_number)
      )`,
      'CREATE INDEX rejected_by_received ON rejected (received_at)',
      `CREATE TABLE ingest_stats (
        partition_id TEXT NOT NULL,
        name TEXT NOT NULL,
        value BIGINT NOT NULL,
        PRIMARY KEY (partition_id, name)
      )`,
      `CREATE TABLE history_settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'pending events in due order from the index alone',
    // The pending list orders by when an event is due (NotBefore, else when it was first seen) and pages by
    // (due, event_id, occurrence); its count filters by the window (first_seen_at). With all of them in the
    // index, a page reads `limit` entries and the count reads only the index, however many events are pending.
    // The fleet metrics' `pending = 1` lookups use its first column as before.
    statements: () => [
      'DROP INDEX maintenance_pending',
      `CREATE INDEX maintenance_pending ON maintenance
        (pending, (coalesce(not_before, first_seen_at)), event_id, occurrence, first_seen_at)`,
    ],
  },
  {
    version: 3,
    name: 'rollups: hour digests, bucket aggregates, the dimension counts',
    // Issue 35: the summary, report, time series and lead time read these instead of every event of the window
    // (rollups/store.ts, dimensions.ts). The indexes that served those scans of the maintenance table remain for
    // the filtered lists. The backfill writes the digests and counts of the rows already stored; the buckets
    // above the digests are rebuilt when the history is next opened for writing.
    statements: (dialect) => [...rollupTables(dialect), ...dimensionTables()],
    backfill: async (tx) => {
      for (const statement of dimensionBackfill()) await tx.run(statement);
      await backfillRollups(tx);
    },
  },
  {
    version: 4,
    name: 'coverage: the latest heartbeat per VM, per-day coverage, how far each partition was read, VM deletions',
    // Bounded by VMs (latest_heartbeats: one row per VM; pruned with the retention) and by VMs x days
    // (coverage_days: one row per VM and UTC day it sent a heartbeat, hours as a 24-bit mask, so a re-delivered
    // heartbeat changes nothing). docs/fleet.md, Coverage.
    // The latest heartbeat's JSON is kept as text: one row per VM (its size does not grow with time), and a
    // heartbeat arrives every hour from every VM, so ingest does not spend a compression on each.
    statements: () => [
      `CREATE TABLE latest_heartbeats (
        source TEXT PRIMARY KEY,
        vm_name TEXT NOT NULL,
        vm_id TEXT NOT NULL,
        location TEXT NOT NULL,
        zone TEXT NOT NULL,
        scale_set TEXT NOT NULL,
        resource_group TEXT NOT NULL,
        subscription_id TEXT NOT NULL,
        node_name TEXT,
        version TEXT NOT NULL,
        config_digest TEXT NOT NULL,
        id TEXT NOT NULL,
        trigger TEXT NOT NULL,
        sequence BIGINT NOT NULL,
        interval_seconds INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        sent_at TEXT NOT NULL,
        enqueued_at TEXT NOT NULL,
        enqueued_ms BIGINT NOT NULL,
        partition_id TEXT NOT NULL,
        imds_ok INTEGER NOT NULL,
        last_poll_at TEXT,
        problems TEXT NOT NULL,
        unhealthy INTEGER NOT NULL,
        first_heartbeat_at TEXT NOT NULL,
        body TEXT NOT NULL
      )`,
      'CREATE INDEX latest_heartbeats_by_enqueued ON latest_heartbeats (enqueued_ms)',
      `CREATE TABLE coverage_days (
        source TEXT NOT NULL,
        day TEXT NOT NULL,
        hours INTEGER NOT NULL,
        unhealthy_hours INTEGER NOT NULL,
        PRIMARY KEY (source, day)
      )`,
      'CREATE INDEX coverage_days_by_day ON coverage_days (day)',
      `CREATE TABLE partition_progress (
        partition_id TEXT PRIMARY KEY,
        read_through_ms BIGINT NOT NULL
      )`,
      'ALTER TABLE vms ADD COLUMN deleted_at TEXT',
    ],
  },
  {
    version: 5,
    name: 'rollups: impact intervals and their slots (the blast radius), time-series rows',
    // Issue 35: the blast radius's most VMs impacted at once from the intervals' per-hour summaries
    // (rollups/impacts.ts) instead of a sweep over every impact of the window. The backfill writes the intervals
    // of the observations already stored, and writes the digests again (their stored form changed: small values
    // raw, a first byte saying which) with every bucket above them, now with the time series' own rows ('ts');
    // slots and buckets are built when the history is next opened for writing.
    statements: (dialect) => impactTables(dialect),
    backfill: async (tx) => {
      await backfillIntervals(tx);
      for (const table of ['rollup_digests', 'rollup_buckets', 'rollup_stale'])
        await tx.run(`DELETE FROM ${table}`);
      await backfillRollups(tx);
    },
  },
  {
    version: 6,
    name: 'coverage counts: VMs per counted state, region, zone, scale set, version and interval; deleted heartbeats',
    // So /api/coverage reads a few hundred counts and the VMs that went quiet, not every VM (coverage-counts.ts).
    statements: () => coverageCountTables(),
    backfill: async (tx) => {
      for (const statement of coverageCountBackfill()) await tx.run(statement);
    },
  },
  {
    version: 7,
    name: 'coverage rollups: the VMs covered per day, 8 days and 64 days, by region, zone and scale set',
    // So every view's count of the VMs covered in its window reads a few buckets, not every VM's days
    // (coverage-rollups.ts); each day keeps the region, zone and scale set its VM's heartbeats stated.
    statements: (dialect) => coverageRollupTables(dialect),
    backfill: backfillCoverageRollups,
  },
  {
    version: 8,
    name: 'coverage counts by the clock: each latest heartbeat says which state it is counted in (silent, gone swept)',
    // So /api/coverage reads the counts and the VMs whose state changed since the last sweep, not every VM that
    // went quiet (coverage-counts.ts, coverage-changes.ts). Each row starts in the state step 6 counted it in.
    statements: () => countedStateColumn(),
  },
  {
    version: 9,
    name: 'coverage counts per dimension: VMs per state by forwarder version, region, scale set and heartbeat interval',
    // So /api/coverage over the whole fleet reads a row per version, region and scale set it lists, not one per
    // combination of them (coverage-counts.ts). Filled from the counts step 6 and 8 keep.
    statements: () => coverageDimensionCountTables(),
  },
  {
    version: 10,
    name: 'impact slots of the short intervals: every slot rebuilt',
    // So that an impact interval open for ever (a VM silent since its event started) does not make every later
    // slot of its region, zone and scale set dirty for the windows after its event: the slots' first sightings
    // and lower bounds now cover the short intervals only, and the blast radius counts the long ones itself
    // (rollups/impacts.ts). Every slot is marked stale and dropped; the history's next open for writing rebuilds
    // them from the intervals (readers meanwhile open stale slots down to the intervals, exact).
    statements: () => [
      'INSERT INTO impact_stale (level, bucket) SELECT DISTINCT level, bucket FROM impact_slots',
      'DELETE FROM impact_slots',
    ],
  },
  {
    version: 11,
    name: 'pending VMs per scope: references of each VM from the pending events, VMs above 0 per scope',
    // So the blast radius's pending VMs per region, zone and scale set read a count per scope instead of every
    // affected observation of every pending event (rollups/pending.ts), kept by ingest and prune. Filled from
    // the pending events' affected observations.
    statements: () => pendingTables(),
    backfill: backfillPending,
  },
  {
    version: 12,
    name: 'impact slots with the profile of the window start: every slot rebuilt',
    // So that a slot holding impacts of events announced before a window's start (long notices, days ahead) is
    // exact for that window without opening its hours: each slot keeps, per scope, the peak of its short
    // intervals as a function of the window's start (rollups/impacts.ts, slot format 3). Every slot is marked
    // stale, as in step 10, and the table made anew with last_first_seen_ms (impactSlotsTable), which lets a
    // window's read leave out the slots before its start that hold nothing of it.
    statements: (dialect) => [
      'INSERT INTO impact_stale (level, bucket) SELECT DISTINCT level, bucket FROM impact_slots',
      'DROP TABLE impact_slots',
      impactSlotsTable(dialect),
    ],
  },
  {
    version: 13,
    name: 'impact slots with the digest of their body: every slot rebuilt',
    // So that the blast radius reads a slot this process already decoded without its body: the read names the
    // digests it holds and those slots come without it (rollups/impacts.ts, selectSlots). At 40,000 VMs the
    // slots a 30-day view reads hold 59 KiB, sent on every request. Every slot is marked stale and dropped, as in
    // step 10; the history's next refresh rebuilds them with their digests.
    statements: () => [
      'INSERT INTO impact_stale (level, bucket) SELECT DISTINCT level, bucket FROM impact_slots',
      'DELETE FROM impact_slots',
      "ALTER TABLE impact_slots ADD COLUMN digest TEXT NOT NULL DEFAULT ''",
    ],
  },
  {
    version: 14,
    name: 'fewer pages per record: the indexes records_by_vm_name and observations_by_source dropped',
    // Issue 35: every record inserted an entry in each, at a place of its own VM, so a batch of 100 records
    // wrote about 100 pages more of each (at 1,000 VMs a slice of the benchmark's load wrote 1,908 of its
    // 12,856 WAL frames to them). No query reads observations by source; a VM's timeline by name finds the
    // VM's sources in vms_by_name and their records by the records' key (source, id) (queries.ts, vmTimeline).
    statements: () => [
      'DROP INDEX IF EXISTS records_by_vm_name',
      'DROP INDEX IF EXISTS observations_by_source',
    ],
  },
];

/** The newest schema version this build knows. */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** Thrown when the database was migrated by a newer build. */
export class SchemaTooNewError extends Error {
  constructor(found: number) {
    super(
      `the fleet database has schema version ${found}, newer than this build's ${SCHEMA_VERSION}: ` +
        'upgrade scheduled-events-forwarder on this host (every consumer of one database must run the same or a newer version)',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** A SQLite history written by a version before schema migrations (tables records + events). */
export class LegacyHistoryError extends Error {
  constructor() {
    super(
      'this fleet database was written by an earlier version (before schema migrations): copy it into a new ' +
        'history with `fleet migrate --from OLD.db --to NEW.db` (or --to postgres://…), then point --database at the new one',
    );
    this.name = 'LegacyHistoryError';
  }
}

async function appliedVersion(tx: SqlExecutor): Promise<number> {
  await tx.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const [row] = await tx.all('SELECT max(version) AS v FROM schema_migrations');
  return Number(row?.v ?? 0);
}

/**
 * Applies every migration newer than the database's, in one transaction under the caller's migration lock.
 * Returns the versions applied (empty when up to date).
 */
export async function migrate(tx: SqlExecutor, now: () => Date): Promise<number[]> {
  const current = await appliedVersion(tx);
  if (current > SCHEMA_VERSION) throw new SchemaTooNewError(current);
  if (current === 0 && tx.dialect === 'sqlite') {
    const legacy = await tx.all("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'");
    if (legacy.length > 0) throw new LegacyHistoryError();
  }
  const applied: number[] = [];
  for (const migration of MIGRATIONS) {
    if (migration.version <= current) continue;
    for (const statement of migration.statements(tx.dialect)) await tx.run(statement);
    await migration.backfill?.(tx);
    await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
      migration.version,
      migration.name,
      now().toISOString(),
    ]);
    applied.push(migration.version);
  }
  return applied;
}

/**
 * Coverage: which VMs' forwarders report, in the SQL both stores run (docs/fleet.md, Coverage). From each VM's
 * latest heartbeat (latest_heartbeats, written by heartbeat-ingest.ts) a VM is
 *
 * - `gone`: Azure deleted it (Preempt/Terminate started after its last heartbeat: vms.deleted_at), or it has been
 *   quiet for longer than `goneAfterSeconds`;
 * - `silent`: quiet for longer than its own heartbeat interval plus `silentMarginSeconds`;
 * - `unhealthy`: its last heartbeat reported a problem (dead letters, a stuck backlog, IMDS failing, the store
 *   not writable, a failing or paused sink: heartbeatProblems of the domain);
 * - `reporting`: otherwise.
 *
 * "Quiet" is measured against how far the consumer has read the VM's partition (partition_progress), never
 * beyond now: a lagging consumer makes no VM silent, it only makes the view older (the partitions' lag is in the
 * report). A VM's heartbeats share its records' partition (the Event Hubs sink keys both by the vmId).
 *
 * coverage_days answers "was this VM covered on that day" (and in which hours); the VMs that sent a heartbeat in
 * a window, which every maintenance view shows, are counted from rollups of those days (coverage-rollups.ts).
 */
import type { HeartbeatProblem } from '../../domain/index.ts';
import {
  type ChangeReading,
  changedSelect,
  changeReading,
  type Fragment,
  quietSql,
  stateSql,
} from './coverage-changes.ts';
import { REPORTED_DIMENSIONS, STATE_COLUMNS } from './coverage-counts.ts';
import {
  decodeCursor,
  type EventFilter,
  encodeCursor,
  type Page,
  type PageRequest,
  pageSize,
} from './queries.ts';
import { type SqlExecutor, type SqlValue, toNumber } from './sql.ts';

export const COVERAGE_STATES = ['reporting', 'silent', 'unhealthy', 'gone'] as const;
export type CoverageState = (typeof COVERAGE_STATES)[number];

/** The thresholds of coverage (fleet config `coverage`, kept in history_settings for every reader). */
export interface CoverageSettings {
  /** Silent when no heartbeat came for longer than its interval plus this. */
  silentMarginSeconds: number;
  /** Gone when quiet for longer than this. */
  goneAfterSeconds: number;
  /** A sink whose oldest pending record is older than this makes its forwarder unhealthy (at ingest). */
  backlogSeconds: number;
}

export const DEFAULT_COVERAGE_SETTINGS: CoverageSettings = {
  silentMarginSeconds: 30 * 60,
  goneAfterSeconds: 7 * 24 * 3600,
  backlogSeconds: 30 * 60,
};

const SETTING_NAMES: Record<keyof CoverageSettings, string> = {
  silentMarginSeconds: 'coverage.silentMarginSeconds',
  goneAfterSeconds: 'coverage.goneAfterSeconds',
  backlogSeconds: 'coverage.backlogSeconds',
};

/** Stores the settings for every process reading the history (dashboards without a consumer included). */
export async function writeCoverageSettings(tx: SqlExecutor, settings: CoverageSettings): Promise<void> {
  for (const [key, name] of Object.entries(SETTING_NAMES))
    await tx.run(
      `INSERT INTO history_settings (name, value) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      [name, String(settings[key as keyof CoverageSettings])],
    );
}

/** The stored settings, defaults where none was stored. */
export async function readCoverageSettings(db: SqlExecutor): Promise<CoverageSettings> {
  const rows = await db.all("SELECT name, value FROM history_settings WHERE name LIKE 'coverage.%'");
  const settings = { ...DEFAULT_COVERAGE_SETTINGS };
  for (const [key, name] of Object.entries(SETTING_NAMES)) {
    const value = Number(rows.find((r) => r.name === name)?.value);
    if (Number.isFinite(value) && value > 0) settings[key as keyof CoverageSettings] = value;
  }
  return settings;
}

/** One VM's coverage, from its latest heartbeat. */
export interface CoverageVm {
  source: string;
  vmName: string;
  vmId: string;
  location: string;
  zone: string;
  scaleSet: string;
  resourceGroup: string;
  subscriptionId: string;
  /** The Kubernetes node (kubernetes.enabled), else null. */
  nodeName: string | null;
  version: string;
  configDigest: string;
  state: CoverageState;
  /** Why it is silent, unhealthy or gone (one line); '' when reporting. */
  reason: string;
  /** The problems its last heartbeat reported. */
  problems: HeartbeatProblem[];
  /** When the last heartbeat was sent (its time) and reached the hub. */
  lastHeartbeatAt: string;
  lastEnqueuedAt: string;
  trigger: string;
  intervalSeconds: number;
  /** Seconds since the last heartbeat, measured up to how far its partition was read. */
  quietSeconds: number;
  /** When Preempt/Terminate started on it, after its last heartbeat (null: not deleted). */
  deletedAt: string | null;
  firstHeartbeatAt: string;
}

/** Counts per state. */
export type StateCounts = Record<CoverageState, number>;

/** How far one partition was read. */
export interface PartitionReadThrough {
  partitionId: string;
  readThrough: string;
  /** now − readThrough, seconds (0 when ahead). */
  lagSeconds: number;
}

/** What /api/coverage and `fleet report --coverage` show. */
export interface CoverageReport {
  generatedAt: string;
  filter: Pick<EventFilter, 'location' | 'zone' | 'scaleSet' | 'vm'>;
  settings: CoverageSettings;
  /** VMs with a heartbeat (in the filter). */
  vms: number;
  byState: StateCounts;
  /** Per forwarder version, per state. */
  byVersion: Record<string, StateCounts>;
  /** Per region ("(unknown)" when empty), per state. */
  byLocation: Record<string, StateCounts>;
  /** Per scale set ("(none)" outside scale sets), per state. */
  byScaleSet: Record<string, StateCounts>;
  /** VMs that sent records but never a heartbeat (a forwarder older than heartbeats, or heartbeats off). */
  withoutHeartbeat: number;
  partitions: PartitionReadThrough[];
  /** The first page of the silent VMs (longest quiet first) and of the unhealthy ones (by name). */
  silent: Page<CoverageVm> & { total: number };
  unhealthy: Page<CoverageVm> & { total: number };
}

const emptyCounts = (): StateCounts => ({ reporting: 0, silent: 0, unhealthy: 0, gone: 0 });

/** The filter's WHERE clauses over latest_heartbeats (`h.`). */
function coverageWhere(filter: CoverageReport['filter']): { clauses: string[]; params: SqlValue[] } {
  const clauses: string[] = [];
  const params: SqlValue[] = [];
  if (filter.location) {
    clauses.push('h.location = ?');
    params.push(filter.location === '(unknown)' ? '' : filter.location);
  }
  if (filter.zone) {
    clauses.push('h.zone = ?');
    params.push(filter.zone === '(none)' ? '' : filter.zone);
  }
  if (filter.scaleSet) {
    clauses.push('h.scale_set = ?');
    params.push(filter.scaleSet === '(none)' ? '' : filter.scaleSet);
  }
  if (filter.vm) {
    clauses.push("lower(h.vm_name) LIKE ? ESCAPE '!'");
    params.push(`%${filter.vm.toLowerCase().replace(/[!%_]/g, '!$&')}%`);
  }
  return { clauses, params };
}

/**
 * The latest heartbeats with their state (`state`) and quiet time (`quiet_ms`), as a CTE named `st` (the
 * statement's first parameters: see stateParams).
 */
function statesCte(filter: CoverageReport['filter']): {
  sql: string;
  params: (now: number, s: CoverageSettings) => SqlValue[];
} {
  const w = coverageWhere(filter);
  const sql = `WITH hb AS (
      SELECT h.*, v.deleted_at AS deleted_at,
        (CASE WHEN p.read_through_ms IS NULL OR p.read_through_ms > ? THEN ? ELSE p.read_through_ms END)
          - h.enqueued_ms AS quiet_ms
      FROM latest_heartbeats h
      LEFT JOIN partition_progress p ON p.partition_id = h.partition_id
      LEFT JOIN vms v ON v.source = h.source
      ${w.clauses.length === 0 ? '' : `WHERE ${w.clauses.join(' AND ')}`}
    ),
    st AS (
      SELECT hb.*, CASE
          WHEN hb.deleted = 1 OR hb.quiet_ms > ? THEN 'gone'
          WHEN hb.quiet_ms > hb.interval_seconds * 1000 + ? THEN 'silent'
          WHEN hb.unhealthy = 1 THEN 'unhealthy'
          ELSE 'reporting' END AS state
      FROM hb
    )`;
  return {
    sql,
    params: (now, s) => [now, now, ...w.params, s.goneAfterSeconds * 1000, s.silentMarginSeconds * 1000],
  };
}

function vmFromRow(row: Record<string, unknown>): CoverageVm {
  const state = String(row.state) as CoverageState;
  const problems = JSON.parse(String(row.problems ?? '[]')) as HeartbeatProblem[];
  const deletedAt = row.deleted_at === null || row.deleted_at === undefined ? null : String(row.deleted_at);
  const vm: CoverageVm = {
    source: String(row.source),
    vmName: String(row.vm_name),
    vmId: String(row.vm_id),
    location: String(row.location),
    zone: String(row.zone),
    scaleSet: String(row.scale_set),
    resourceGroup: String(row.resource_group),
    subscriptionId: String(row.subscription_id),
    nodeName: row.node_name === null || row.node_name === undefined ? null : String(row.node_name),
    version: String(row.version),
    configDigest: String(row.config_digest),
    state,
    reason: '',
    problems,
    lastHeartbeatAt: String(row.sent_at),
    lastEnqueuedAt: String(row.enqueued_at),
    trigger: String(row.trigger),
    intervalSeconds: toNumber(row.interval_seconds),
    quietSeconds: Math.max(0, Math.round(toNumber(row.quiet_ms) / 1000)),
    deletedAt: toNumber(row.deleted) === 1 && deletedAt !== null ? deletedAt : null,
    firstHeartbeatAt: String(row.first_heartbeat_at),
  };
  vm.reason = coverageReason(vm);
  return vm;
}

/** One line saying why a VM is in its state. */
export function coverageReason(vm: CoverageVm): string {
  const last =
    vm.trigger === 'stop'
      ? `stopped cleanly at ${vm.lastHeartbeatAt} (service stopped, VM shut down or deallocated)`
      : `last heartbeat ${vm.lastHeartbeatAt}`;
  switch (vm.state) {
    case 'gone':
      return vm.deletedAt !== null
        ? `deleted by Azure (Preempt/Terminate started ${vm.deletedAt}); ${last}`
        : `no heartbeat for ${formatSeconds(vm.quietSeconds)}; ${last}`;
    case 'silent':
      return `no heartbeat for ${formatSeconds(vm.quietSeconds)} (interval ${formatSeconds(vm.intervalSeconds)}); ${last}`;
    case 'unhealthy':
      return vm.problems.map((p) => p.detail).join('; ');
    default:
      return '';
  }
}

function formatSeconds(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 360) / 10} h`;
  return `${Math.round(seconds / 8640) / 10} d`;
}

/**
 * The orders of the VM lists: silent and gone by their last heartbeat, oldest first (the longest quiet: a
 * stable order, unlike the quiet time, which grows between two pages), the others by name.
 */
const LIST_ORDER: Record<CoverageState, { columns: [string, string]; numeric: boolean }> = {
  silent: { columns: ['enqueued_ms', 'source'], numeric: true },
  gone: { columns: ['enqueued_ms', 'source'], numeric: true },
  unhealthy: { columns: ['vm_name', 'source'], numeric: false },
  reporting: { columns: ['vm_name', 'source'], numeric: false },
};

/**
 * A page of the VMs in `state` (see LIST_ORDER), with the total in that state. Without a VM name filter, from
 * the counts and the indexes: the VMs counted in that state still in it (latest_heartbeats_by_state_age or
 * _by_state_name, in the list's order) merged with those whose state changed into it since the last sweep
 * (coverage-changes.ts), so a page costs what it holds and the VMs whose state changed, not the fleet; with one,
 * by a scan of every latest heartbeat (listCoverageVmsScan).
 */
export async function listCoverageVms(
  db: SqlExecutor,
  state: CoverageState,
  filter: CoverageReport['filter'],
  request: PageRequest,
  now: Date,
  settings: CoverageSettings,
  known?: { counted: CountedCoverage; reading: ChangeReading },
): Promise<Page<CoverageVm> & { total: number }> {
  if (filter.vm) return listCoverageVmsScan(db, state, filter, request, now, settings);
  const reading = known?.reading ?? (await changeReading(db, now));
  const { clock, intervals } = reading;
  const counted = known?.counted ?? (await countedCoverage(db, filter, now, settings, reading));
  const limit = pageSize(request);
  const order = LIST_ORDER[state].columns.map((c) => `h.${c}`).join(', ');
  const after: SqlValue[] = request.cursor ? decodeCursor(request.cursor, 2) : [];
  const scope = scopeWhere(filter);
  const keyset: Fragment = after.length > 0 ? { sql: ` AND (${order}) > (?, ?)`, params: after } : NO_WHERE;
  const narrowed: Fragment = { sql: scope.sql + keyset.sql, params: [...scope.params, ...keyset.params] };
  const quiet = quietSql(clock);
  const stateNow = stateSql(quiet, settings);
  // Counted in the state and still in it: the index in the list's order, past the few that changed. (Said as
  // "in none of the others", which PostgreSQL estimates to keep most rows, so it reads the index in order up
  // to the limit instead of sorting every VM counted in the state.)
  const others = COVERAGE_STATES.filter((s) => s !== state);
  const stayed: Fragment = {
    sql: `SELECT ${ROW_COLUMNS}, ${quiet.sql} AS quiet_ms, '${state}' AS state FROM latest_heartbeats h
      WHERE h.counted_state = ? AND ${stateNow.sql} NOT IN (?, ?, ?)${narrowed.sql} ORDER BY ${order} LIMIT ?`,
    params: [...quiet.params, state, ...stateNow.params, ...others, ...narrowed.params, limit + 1],
  };
  const changed = changedSelect(clock, intervals, settings, { sql: ROW_COLUMNS, params: [] }, narrowed);
  const sql =
    changed === undefined
      ? stayed.sql
      : `SELECT * FROM (SELECT * FROM (${stayed.sql}) s UNION ALL
           SELECT * FROM (${changed.sql}) c WHERE c.state = ?) u
         ORDER BY ${LIST_ORDER[state].columns.join(', ')} LIMIT ?`;
  const rows = await db.all(
    sql,
    changed === undefined ? stayed.params : [...stayed.params, ...changed.params, state, limit + 1],
  );
  return listPage(rows, limit, state, counted.byState[state]);
}

/** A latest heartbeat's columns as a listed VM needs them (with when Azure deleted it). */
const ROW_COLUMNS = 'h.*, (SELECT v.deleted_at FROM vms v WHERE v.source = h.source) AS deleted_at';
const NO_WHERE: Fragment = { sql: '', params: [] };

/** The scope's region, zone and scale set as conditions on `h.` (each preceded by AND). */
function scopeWhere(scope: CoverageReport['filter']): Fragment {
  const w = coverageWhere({ location: scope.location, zone: scope.zone, scaleSet: scope.scaleSet });
  return { sql: w.clauses.map((c) => ` AND ${c}`).join(''), params: w.params };
}

/** A page of a list: up to `limit` of `rows` (one more was read to know there is a next page) and its cursor. */
function listPage(
  rows: ReadonlyArray<Record<string, unknown>>,
  limit: number,
  state: CoverageState,
  total: number,
): Page<CoverageVm> & { total: number } {
  const order = LIST_ORDER[state];
  const last = rows[Math.min(limit, rows.length) - 1];
  return {
    items: rows.slice(0, limit).map(vmFromRow),
    total,
    nextCursor:
      rows.length > limit && last !== undefined
        ? encodeCursor(
            order.columns.map((c) => (order.numeric && c !== 'source' ? toNumber(last[c]) : String(last[c]))),
          )
        : null,
  };
}

/** listCoverageVms by a scan of every latest heartbeat (any state and filter; the tests' oracle). */
export async function listCoverageVmsScan(
  db: SqlExecutor,
  state: CoverageState,
  filter: CoverageReport['filter'],
  request: PageRequest,
  now: Date,
  settings: CoverageSettings,
): Promise<Page<CoverageVm> & { total: number }> {
  const limit = pageSize(request);
  const cte = statesCte(filter);
  const order = LIST_ORDER[state];
  const params: SqlValue[] = [...cte.params(now.getTime(), settings), state];
  let after = '';
  if (request.cursor) {
    after = `WHERE (${order.columns.join(', ')}) > (?, ?)`;
    params.push(...decodeCursor(request.cursor, 2));
  }
  // The total is counted before the keyset condition (as the blast radius does), so every page has it.
  const rows = await db.all(
    `${cte.sql}
     SELECT * FROM (SELECT st.*, count(*) OVER () AS total FROM st WHERE state = ?) l
     ${after} ORDER BY ${order.columns.join(', ')} LIMIT ?`,
    [...params, limit + 1],
  );
  const total =
    rows[0] !== undefined
      ? toNumber(rows[0].total)
      : request.cursor
        ? (await listCoverageVmsScan(db, state, filter, { limit: 1 }, now, settings)).total
        : 0;
  return listPage(rows, limit, state, total);
}

/**
 * The coverage report: counts by state, version, region and scale set, and the first page of each list. From
 * the coverage counts (coverage-counts.ts) and the VMs whose state changed since the last sweep
 * (coverage-changes.ts), so its cost follows the regions, scale sets and versions, the sweep's cadence and a
 * page, not the fleet; with a VM name filter, by a scan (coverageReportScan).
 */
export async function coverageReport(
  db: SqlExecutor,
  filter: CoverageReport['filter'],
  now: Date,
  settingsOverride?: CoverageSettings,
  pageLimit = 100,
): Promise<CoverageReport> {
  if (filter.vm) return coverageReportScan(db, filter, now, settingsOverride, pageLimit);
  const [settings, reading] = await Promise.all([
    settingsOverride ?? readCoverageSettings(db),
    changeReading(db, now),
  ]);
  const counted = await countedCoverage(db, filter, now, settings, reading);
  const [silent, unhealthy] = await Promise.all([
    listCoverageVms(db, 'silent', filter, { limit: pageLimit }, now, settings, { counted, reading }),
    listCoverageVms(db, 'unhealthy', filter, { limit: pageLimit }, now, settings, { counted, reading }),
  ]);
  return {
    generatedAt: now.toISOString(),
    filter,
    settings,
    ...counted,
    partitions: partitionLags(
      reading.clock.readThrough.map((p) => ({
        partition_id: p.partitionId,
        read_through_ms: p.readThroughMs,
      })),
      now,
    ),
    silent,
    unhealthy,
  };
}

function partitionLags(rows: ReadonlyArray<Record<string, unknown>>, now: Date): PartitionReadThrough[] {
  return rows.map((p) => {
    const at = toNumber(p.read_through_ms);
    return {
      partitionId: String(p.partition_id),
      readThrough: new Date(at).toISOString(),
      lagSeconds: Math.max(0, Math.round((now.getTime() - at) / 1000)),
    };
  });
}

/** The report's counts. */
export type CountedCoverage = Pick<
  CoverageReport,
  'vms' | 'byState' | 'byVersion' | 'byLocation' | 'byScaleSet' | 'withoutHeartbeat'
>;

/** Adds `n` VMs in `state` to the report's counts. */
function addCounts(
  c: CountedCoverage,
  row: { version: string; location: string; scaleSet: string },
  state: CoverageState,
  n: number,
): void {
  c.byState[state] += n;
  const add = (map: Record<string, StateCounts>, key: string) => {
    map[key] ??= emptyCounts();
    map[key][state] += n;
  };
  add(c.byVersion, labelled('version', row.version));
  add(c.byLocation, labelled('location', row.location));
  add(c.byScaleSet, labelled('scale_set', row.scaleSet));
}

/** What the report calls an empty value: a VM without a region, or outside scale sets. */
const EMPTY_LABELS: Record<string, string> = { location: '(unknown)', scale_set: '(none)' };

/** A dimension's value as the report lists it (`dimension`: a coverage_counts column). */
function labelled(dimension: string, value: string): string {
  return value || (EMPTY_LABELS[dimension] ?? '');
}

/**
 * The counts by state, version, region and scale set: the kept counts, then each VM whose state changed since it
 * was counted (changedSelect) moved from its counted state to its state now. The whole fleet's from the counts per
 * dimension (coverage_dimension_counts: a row per version, region and scale set); a scope's region, zone and scale
 * set from the counts of every combination within it (coverage_counts). A VM name cannot narrow them (the counts
 * are not kept by name).
 */
export async function countedCoverage(
  db: SqlExecutor,
  scope: Omit<CoverageReport['filter'], 'vm'>,
  now: Date,
  settings: CoverageSettings,
  knownReading?: ChangeReading,
): Promise<CountedCoverage> {
  const w = coverageWhere({ location: scope.location, zone: scope.zone, scaleSet: scope.scaleSet });
  const { clock, intervals } = knownReading ?? (await changeReading(db, now));
  const changed = changedSelect(
    clock,
    intervals,
    settings,
    { sql: 'h.location, h.scale_set, h.version, h.counted_state', params: [] },
    scopeWhere(scope),
  );
  const c: CountedCoverage = {
    vms: 0,
    byState: emptyCounts(),
    byVersion: {},
    byLocation: {},
    byScaleSet: {},
    withoutHeartbeat: 0,
  };
  if (w.clauses.length === 0) await addFleetCounts(db, c, changed);
  else await addScopeCounts(db, c, w, changed);
  c.vms = COVERAGE_STATES.reduce((sum, state) => sum + c.byState[state], 0);
  for (const map of [c.byVersion, c.byLocation, c.byScaleSet])
    for (const [key, counts] of Object.entries(map))
      if (COVERAGE_STATES.every((state) => counts[state] === 0)) delete map[key];
  c.byVersion = sortKeys(c.byVersion);
  c.byLocation = sortKeys(c.byLocation);
  c.byScaleSet = sortKeys(c.byScaleSet);
  return c;
}

/**
 * Adds the whole fleet's counts to `c`: the counts per dimension, and each changed VM (`changed`) out of its
 * counted state into its state now, in each dimension; one statement (one snapshot), a row per version, region
 * and scale set with a VM in a state (the answer leaves the others out; the versions' rows all come, for the VMs
 * without a heartbeat): a fleet whose VMs have not sent one yet has a row per scale set with nothing to show.
 */
async function addFleetCounts(
  db: SqlExecutor,
  c: CountedCoverage,
  changed: Fragment | undefined,
): Promise<void> {
  const sums = COVERAGE_STATES.map((state) => `sum(${STATE_COLUMNS[state]}) AS ${state}`).join(', ');
  const moves = COVERAGE_STATES.map(
    (state) =>
      `CASE WHEN c.state = '${state}' THEN 1 ELSE 0 END - CASE WHEN c.counted_state = '${state}' THEN 1 ELSE 0 END`,
  ).join(', ');
  const dimensions = REPORTED_DIMENSIONS.map((d) => `SELECT '${d}' AS dimension`).join(' UNION ALL ');
  const rows = await db.all(
    `SELECT dimension, value, ${sums}, sum(${STATE_COLUMNS.none}) AS without_heartbeat FROM (
       SELECT dimension, value, ${COVERAGE_STATES.map((state) => STATE_COLUMNS[state]).join(', ')},
         ${STATE_COLUMNS.none} FROM coverage_dimension_counts
       WHERE dimension IN (${REPORTED_DIMENSIONS.map((d) => `'${d}'`).join(', ')})
       ${
         changed === undefined
           ? ''
           : `UNION ALL SELECT d.dimension, CASE d.dimension WHEN 'version' THEN c.version
                WHEN 'location' THEN c.location ELSE c.scale_set END, ${moves}, 0
              FROM (${changed.sql}) c CROSS JOIN (${dimensions}) d`
       }
     ) x GROUP BY dimension, value
     HAVING dimension = 'version' OR ${COVERAGE_STATES.map((state) => `sum(${STATE_COLUMNS[state]}) <> 0`).join(' OR ')}`,
    changed?.params ?? [],
  );
  const maps: Record<string, Record<string, StateCounts>> = {
    version: c.byVersion,
    location: c.byLocation,
    scale_set: c.byScaleSet,
  };
  for (const row of rows) {
    const dimension = String(row.dimension);
    const value = String(row.value);
    const counts = Object.fromEntries(COVERAGE_STATES.map((s) => [s, toNumber(row[s])])) as StateCounts;
    // Every VM has one version: the versions' sums are the fleet's.
    if (dimension === 'version') {
      c.withoutHeartbeat += toNumber(row.without_heartbeat);
      for (const state of COVERAGE_STATES) c.byState[state] += counts[state];
    }
    const map = maps[dimension];
    if (map !== undefined) map[labelled(dimension, value)] = counts;
  }
}

/**
 * Adds a scope's counts to `c`: the counts of every combination within it (`where`), and each changed VM
 * (`changed`, narrowed alike) out of its counted state into its state now; one statement (one snapshot).
 */
async function addScopeCounts(
  db: SqlExecutor,
  c: CountedCoverage,
  where: { clauses: string[]; params: SqlValue[] },
  changed: Fragment | undefined,
): Promise<void> {
  const rows = await db.all(
    `SELECT state, location, scale_set, version, sum(n) AS n FROM (
       SELECT state, location, scale_set, version, vms AS n FROM coverage_counts h WHERE ${where.clauses.join(' AND ')}
       ${
         changed === undefined
           ? ''
           : `UNION ALL SELECT CASE WHEN m.n = -1 THEN c.counted_state ELSE c.state END, c.location, c.scale_set,
                c.version, m.n FROM (${changed.sql}) c CROSS JOIN (SELECT -1 AS n UNION ALL SELECT 1 AS n) m`
       }
     ) x GROUP BY state, location, scale_set, version HAVING sum(n) <> 0`,
    [...where.params, ...(changed?.params ?? [])],
  );
  for (const row of rows) {
    const n = toNumber(row.n);
    if (row.state === 'none') c.withoutHeartbeat += n;
    else
      addCounts(
        c,
        { version: String(row.version), location: String(row.location), scaleSet: String(row.scale_set) },
        String(row.state) as CoverageState,
        n,
      );
  }
}

/** coverageReport by a scan of every latest heartbeat (any filter; the tests' oracle). */
export async function coverageReportScan(
  db: SqlExecutor,
  filter: CoverageReport['filter'],
  now: Date,
  settingsOverride?: CoverageSettings,
  pageLimit = 100,
): Promise<CoverageReport> {
  const settings = settingsOverride ?? (await readCoverageSettings(db));
  const cte = statesCte(filter);
  const [groups, without, partitions, silent, unhealthy] = await Promise.all([
    db.all(
      `${cte.sql}
       SELECT state, version, location, scale_set, count(*) AS n FROM st GROUP BY state, version, location, scale_set`,
      cte.params(now.getTime(), settings),
    ),
    db.all(
      `SELECT count(*) AS n FROM vms v WHERE NOT EXISTS (SELECT 1 FROM latest_heartbeats h WHERE h.source = v.source)
       ${scopeFilter(filter)}`,
      scopeParams(filter),
    ),
    db.all('SELECT partition_id, read_through_ms FROM partition_progress ORDER BY partition_id'),
    listCoverageVmsScan(db, 'silent', filter, { limit: pageLimit }, now, settings),
    listCoverageVmsScan(db, 'unhealthy', filter, { limit: pageLimit }, now, settings),
  ]);
  const byState = emptyCounts();
  const byVersion: Record<string, StateCounts> = {};
  const byLocation: Record<string, StateCounts> = {};
  const byScaleSet: Record<string, StateCounts> = {};
  let vms = 0;
  for (const row of groups) {
    const state = String(row.state) as CoverageState;
    const n = toNumber(row.n);
    vms += n;
    byState[state] += n;
    const add = (map: Record<string, StateCounts>, key: string) => {
      map[key] ??= emptyCounts();
      map[key][state] += n;
    };
    add(byVersion, String(row.version));
    add(byLocation, String(row.location ?? '') || '(unknown)');
    add(byScaleSet, String(row.scale_set ?? '') || '(none)');
  }
  return {
    generatedAt: now.toISOString(),
    filter,
    settings,
    vms,
    byState,
    byVersion: sortKeys(byVersion),
    byLocation: sortKeys(byLocation),
    byScaleSet: sortKeys(byScaleSet),
    withoutHeartbeat: toNumber(without[0]?.n),
    partitions: partitionLags(partitions, now),
    silent,
    unhealthy,
  };
}

/** The filter's scope conditions over vms (`v.`), for the VMs without a heartbeat. */
function scopeFilter(filter: CoverageReport['filter']): string {
  return coverageWhere(filter)
    .clauses.map((c) => `AND ${c.replaceAll('h.', 'v.')}`)
    .join(' ');
}

function scopeParams(filter: CoverageReport['filter']): SqlValue[] {
  return coverageWhere(filter).params;
}

function sortKeys<T>(map: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** One UTC day of a VM's coverage. */
export interface CoverageDay {
  day: string;
  /** Hours (0–23, UTC) in which a heartbeat arrived. */
  hours: number[];
  /** Hours in which a heartbeat reported a problem. */
  unhealthyHours: number[];
}

/** The days a VM (by CloudEvent source, else by VM name) was covered, oldest first, within the window. */
export async function vmCoverageDays(
  db: SqlExecutor,
  vm: string,
  window: { since?: string | undefined; until?: string | undefined } = {},
): Promise<{ source: string; days: CoverageDay[] } | undefined> {
  let [row] = await db.all('SELECT source FROM latest_heartbeats WHERE source = ?', [vm]);
  if (row === undefined)
    [row] = await db.all(
      'SELECT source FROM latest_heartbeats WHERE vm_name = ? ORDER BY enqueued_ms DESC LIMIT 1',
      [vm],
    );
  if (row === undefined) return undefined;
  const source = String(row.source);
  const clauses = ['source = ?'];
  const params: SqlValue[] = [source];
  if (window.since) {
    clauses.push('day >= ?');
    params.push(new Date(window.since).toISOString().slice(0, 10));
  }
  if (window.until) {
    clauses.push('day <= ?');
    params.push(new Date(Date.parse(window.until) - 1).toISOString().slice(0, 10));
  }
  const rows = await db.all(
    `SELECT day, hours, unhealthy_hours FROM coverage_days WHERE ${clauses.join(' AND ')} ORDER BY day`,
    params,
  );
  const bits = (mask: unknown) => {
    const m = toNumber(mask);
    return Array.from({ length: 24 }, (_, h) => h).filter((h) => Math.floor(m / 2 ** h) % 2 === 1);
  };
  return {
    source,
    days: rows.map((r) => ({
      day: String(r.day),
      hours: bits(r.hours),
      unhealthyHours: bits(r.unhealthy_hours),
    })),
  };
}

/** The numbers the fleet metrics export: VMs per state, and per version and state (from the counts). */
export async function coverageGauges(
  db: SqlExecutor,
  now: Date,
): Promise<{ byState: StateCounts; byVersion: Record<string, StateCounts> }> {
  const { byState, byVersion } = await countedCoverage(db, {}, now, await readCoverageSettings(db));
  return { byState, byVersion };
}

/**
 * Backfill and copy: records that did not come through the hub enter the history through the same
 * validation and fold as consumed ones (FleetHistory.ingest), so both are idempotent.
 *
 * - `importJsonLines`: JSON-lines CloudEvents (the file sink's output; heartbeats included), a file or standard
 *   input ("-"), read as a stream in batches. A line that is not a valid record or heartbeat is kept in
 *   `rejected` (partition `import:<file>`, sequence = line number), so importing the same file again changes
 *   nothing. No hub enqueued these: each line counts as enqueued at its CloudEvent `time` (what coverage
 *   measures a VM's silence by), epoch 0 when it has none.
 * - `copySqliteHistory`: every record (and rejected body) of a SQLite history file of this or an earlier
 *   version, read in key order from a read-only connection, into another store; with coverage (schema 3 on):
 *   each VM's latest heartbeat (ingested again), its days of coverage and the partitions' read-through marks.
 */
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { decodeBody } from './history/body.ts';
import { upsertCoverageDays } from './history/heartbeat-ingest.ts';
import type { FleetHistory, RawFleetEvent } from './history/index.ts';

const { createReadStream, existsSync } = process.getBuiltinModule('node:fs');

const BATCH = 500;
/** Reasons printed per file; the rest are counted. */
const MAX_REPORTED_REJECTIONS = 10;

export interface ImportResult {
  files: number;
  lines: number;
  accepted: number;
  duplicates: number;
  rejected: number;
  /** Heartbeats (kept as each VM's latest and its days of coverage). */
  heartbeats: number;
}

/** Imports JSON-lines files ("-" = stdin); `report` gets one line per rejected line (the first few). */
export async function importJsonLines(
  history: FleetHistory,
  files: readonly string[],
  report: (line: string) => void,
): Promise<ImportResult> {
  const result: ImportResult = { files: 0, lines: 0, accepted: 0, duplicates: 0, rejected: 0, heartbeats: 0 };
  for (const file of files) {
    if (file !== '-' && !existsSync(file)) throw new Error(`fleet import: ${file} does not exist`);
    const input = file === '-' ? process.stdin : createReadStream(file, { encoding: 'utf8' });
    const partitionId = `import:${file === '-' ? 'stdin' : resolve(file)}`;
    const name = file === '-' ? 'stdin' : basename(file);
    let batch: RawFleetEvent[] = [];
    let lineNumber = 0;
    let reported = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const r = await history.ingest(batch);
      result.accepted += r.accepted;
      result.duplicates += r.duplicates;
      result.rejected += r.rejected;
      result.heartbeats += r.heartbeats;
      for (const { index, reason } of r.rejections) {
        if (reported++ < MAX_REPORTED_REJECTIONS)
          report(`${name}:${batch[index]?.sequenceNumber ?? '?'}: rejected: ${reason}`);
      }
      batch = [];
    };
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      lineNumber++;
      if (line.trim() === '') continue;
      result.lines++;
      batch.push({ body: line, partitionId, sequenceNumber: lineNumber, enqueuedAt: lineTime(line) });
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    if (reported > MAX_REPORTED_REJECTIONS)
      report(`${name}: ${reported - MAX_REPORTED_REJECTIONS} more lines rejected (see the rejected table)`);
    result.files++;
  }
  return result;
}

/** The first `"time"` of a CloudEvent line (the envelope's: it comes before `data`), else epoch 0. */
function lineTime(line: string): Date {
  const match = /"time"\s*:\s*"([^"]{1,64})"/.exec(line);
  const t = match === null ? Number.NaN : Date.parse(match[1]!);
  return new Date(Number.isNaN(t) ? 0 : t);
}

export interface CopyResult {
  records: number;
  accepted: number;
  duplicates: number;
  rejected: number;
  /** Latest heartbeats copied (one per VM). */
  heartbeats: number;
}

/** Copies a SQLite history file (read-only) into `target`. */
export async function copySqliteHistory(
  from: string,
  target: FleetHistory,
  report: (line: string) => void,
): Promise<CopyResult> {
  if (!existsSync(from)) throw new Error(`fleet migrate: ${from} does not exist`);
  const source = new DatabaseSync(from, { readOnly: true });
  const result: CopyResult = { records: 0, accepted: 0, duplicates: 0, rejected: 0, heartbeats: 0 };
  try {
    const add = (r: { accepted: number; duplicates: number; rejected: number }) => {
      result.accepted += r.accepted;
      result.duplicates += r.duplicates;
      result.rejected += r.rejected;
    };
    const page = source.prepare(
      `SELECT source, id, body, partition_id, sequence_number, enqueued_at FROM records
       WHERE (source, id) > (?, ?) ORDER BY source, id LIMIT ${BATCH}`,
    );
    let after: [string, string] = ['', ''];
    for (;;) {
      const rows = page.all(...after) as Array<Record<string, unknown>>;
      if (rows.length === 0) break;
      result.records += rows.length;
      add(
        await target.ingest(
          rows.map((row) => ({
            body: decodeBody(row.body),
            partitionId: String(row.partition_id),
            sequenceNumber: Number(row.sequence_number),
            enqueuedAt: new Date(String(row.enqueued_at)),
          })),
        ),
      );
      const last = rows.at(-1)!;
      after = [String(last.source), String(last.id)];
      report(`copied ${result.records} records`);
    }
    const rejected = source
      .prepare('SELECT partition_id, sequence_number, enqueued_at, body FROM rejected ORDER BY seq')
      .all() as Array<Record<string, string | number>>;
    for (let i = 0; i < rejected.length; i += BATCH) {
      add(
        await target.ingest(
          rejected.slice(i, i + BATCH).map((row) => ({
            body: String(row.body),
            partitionId: String(row.partition_id),
            sequenceNumber: Number(row.sequence_number),
            enqueuedAt: new Date(String(row.enqueued_at)),
          })),
        ),
      );
    }
    result.heartbeats = await copyCoverage(source, target);
  } finally {
    source.close();
  }
  return result;
}

/** Coverage of a history with schema 4 or later (the days' dimensions from 7 on): latest heartbeats, days of coverage, read-through marks. */
async function copyCoverage(source: DatabaseSync, target: FleetHistory): Promise<number> {
  const tables = new Set(
    source
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((r) => String(r.name)),
  );
  if (!tables.has('latest_heartbeats')) return 0;
  const latest = source
    .prepare('SELECT body, partition_id, enqueued_at FROM latest_heartbeats ORDER BY source')
    .all() as Array<Record<string, unknown>>;
  for (let i = 0; i < latest.length; i += BATCH)
    await target.ingest(
      latest.slice(i, i + BATCH).map((row, j) => ({
        body: String(row.body),
        partitionId: String(row.partition_id),
        sequenceNumber: i + j,
        enqueuedAt: new Date(String(row.enqueued_at)),
      })),
    );
  // A day's region, zone and scale set (schema 7); before, those of the VM's latest heartbeat (as migrating does).
  const dayColumns = new Set(
    source
      .prepare("SELECT name FROM pragma_table_info('coverage_days')")
      .all()
      .map((r) => String(r.name)),
  );
  const dims = dayColumns.has('scale_set')
    ? 'd.location, d.zone, d.scale_set'
    : "coalesce(h.location, '') AS location, coalesce(h.zone, '') AS zone, coalesce(h.scale_set, '') AS scale_set";
  const days = source
    .prepare(
      `SELECT d.source, d.day, d.hours, d.unhealthy_hours, ${dims} FROM coverage_days d
       LEFT JOIN latest_heartbeats h ON h.source = d.source ORDER BY d.source, d.day`,
    )
    .all() as Array<Record<string, unknown>>;
  for (let i = 0; i < days.length; i += BATCH) {
    const chunk = days.slice(i, i + BATCH).map((d) => ({
      source: String(d.source),
      day: String(d.day),
      hours: Number(d.hours),
      unhealthy: Number(d.unhealthy_hours),
      location: String(d.location),
      zone: String(d.zone),
      scaleSet: String(d.scale_set),
    }));
    await target.db.transaction((tx) => upsertCoverageDays(tx, chunk));
  }
  for (const row of source.prepare('SELECT partition_id, read_through_ms FROM partition_progress').all())
    await target.recordReadThrough(String(row.partition_id), Number(row.read_through_ms));
  return latest.length;
}

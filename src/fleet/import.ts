/**
 * Backfill and copy: records that did not come through the hub enter the history through the same
 * validation and fold as consumed ones (FleetHistory.ingest), so both are idempotent.
 *
 * - `importJsonLines`: JSON-lines CloudEvents (the file sink's output), a file or standard input ("-"), read
 *   as a stream in batches. A line that is not a valid record is kept in `rejected` (partition
 *   `import:<file>`, sequence = line number), so importing the same file again changes nothing.
 * - `copySqliteHistory`: every record (and rejected body) of a SQLite history file of this or an earlier
 *   version, read in key order from a read-only connection, into another store.
 */
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { decodeBody } from './history/body.ts';
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
}

/** Imports JSON-lines files ("-" = stdin); `report` gets one line per rejected line (the first few). */
export async function importJsonLines(
  history: FleetHistory,
  files: readonly string[],
  report: (line: string) => void,
): Promise<ImportResult> {
  const result: ImportResult = { files: 0, lines: 0, accepted: 0, duplicates: 0, rejected: 0 };
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
      batch.push({ body: line, partitionId, sequenceNumber: lineNumber, enqueuedAt: new Date(0) });
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    if (reported > MAX_REPORTED_REJECTIONS)
      report(`${name}: ${reported - MAX_REPORTED_REJECTIONS} more lines rejected (see the rejected table)`);
    result.files++;
  }
  return result;
}

export interface CopyResult {
  records: number;
  accepted: number;
  duplicates: number;
  rejected: number;
}

/** Copies a SQLite history file (read-only) into `target`. */
export async function copySqliteHistory(
  from: string,
  target: FleetHistory,
  report: (line: string) => void,
): Promise<CopyResult> {
  if (!existsSync(from)) throw new Error(`fleet migrate: ${from} does not exist`);
  const source = new DatabaseSync(from, { readOnly: true });
  const result: CopyResult = { records: 0, accepted: 0, duplicates: 0, rejected: 0 };
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
  } finally {
    source.close();
  }
  return result;
}

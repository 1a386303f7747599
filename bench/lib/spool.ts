/**
 * A spool of records: written once as JSON lines to a file, then read back one record at a time. The fleet
 * benchmark generates its synthetic fleet into one before the load, so that the process ingesting does not hold
 * the generator's world (hundreds of MB at 40,000 VMs, every event of 90 days planned): a consumer does not, and
 * every major garbage collection during the load would mark it, a cost that grows with the benchmark's fleet size,
 * not with the code measured. Each record comes back as the consumer gets it from the Event Hubs SDK: parsed from
 * its JSON.
 */
import { closeSync, fsyncSync, openSync, readSync, writeSync } from 'node:fs';

/** Bytes written or read per system call. */
const CHUNK = 4 * 1024 * 1024;

/** Writes every record of `records` to `path` (created or truncated), one JSON line each; returns how many. */
export function writeSpool(path: string, records: Iterable<unknown>): number {
  const fd = openSync(path, 'w');
  let count = 0;
  try {
    let lines: string[] = [];
    let length = 0;
    const flush = () => {
      if (lines.length > 0) writeSync(fd, lines.join(''));
      lines = [];
      length = 0;
    };
    for (const record of records) {
      const line = `${JSON.stringify(record)}\n`;
      lines.push(line);
      length += line.length;
      count++;
      if (length >= CHUNK) flush();
    }
    flush();
    // On disk before the load starts: otherwise the kernel writes the spool back (1.5 GB at 10,000 VMs with a
    // week of heartbeats) while the load runs, and the store's own writes wait behind it.
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return count;
}

/** The records of the spool at `path`, in the order written, each parsed from its line. */
export function* readSpool<T>(path: string): Generator<T> {
  const fd = openSync(path, 'r');
  try {
    let buffer = Buffer.alloc(CHUNK);
    // Bytes [0, filled) of `buffer` are read and not yet parsed.
    let filled = 0;
    for (;;) {
      if (filled === buffer.length) {
        // A line longer than the buffer: grow it.
        const bigger = Buffer.alloc(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
      const read = readSync(fd, buffer, filled, buffer.length - filled, null);
      filled += read;
      let start = 0;
      for (let end = buffer.indexOf(10, start); end !== -1 && end < filled; end = buffer.indexOf(10, start)) {
        yield JSON.parse(buffer.toString('utf8', start, end)) as T;
        start = end + 1;
      }
      if (read === 0) {
        if (start < filled) throw new Error(`spool ${path} ends inside a line (${filled - start} bytes)`);
        return;
      }
      buffer.copy(buffer, 0, start, filled);
      filled -= start;
    }
  } finally {
    closeSync(fd);
  }
}

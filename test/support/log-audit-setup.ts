/**
 * Vitest setup file: every JSON log line a test writes is parsed with a parser that rejects nothing silently
 * (test/support/logs.ts: a key written twice, or a line that is not JSON, is a problem); a test during which such
 * a line was written fails, naming it (issue 31 item 5: strict parsers such as Elasticsearch's reject those lines).
 * Audited here besides the capturing loggers and the CLI children (test/support/logs.ts, child.ts): the pino lines
 * this test process writes to its own standard output and error, which pino writes with fs.writeSync (sonic-boom).
 */
import fs from 'node:fs';
import { afterEach } from 'vitest';
import { lineAuditor, takeLogProblems } from './logs.ts';

const auditors = new Map([
  [1, lineAuditor('the test process standard output')],
  [2, lineAuditor('the test process standard error')],
]);
const writeSync = fs.writeSync;
/** Only pino's lines: anything else a test prints is not a log line. */
const PINO_LINE = /^\{"level":/;
fs.writeSync = ((fd: number, data: unknown, ...rest: unknown[]) => {
  const auditor = auditors.get(fd);
  if (auditor !== undefined && typeof data === 'string' && PINO_LINE.test(data)) auditor.write(data);
  return (writeSync as (...args: unknown[]) => number)(fd, data, ...rest);
}) as typeof fs.writeSync;

afterEach(() => {
  for (const auditor of auditors.values()) auditor.end();
  const problems = takeLogProblems();
  if (problems.length > 0) {
    throw new Error(`log lines a strict JSON parser rejects (src/log.ts):\n${problems.join('\n')}`);
  }
});

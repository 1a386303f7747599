/**
 * Log lines in tests: a capturing logger built like `run`'s (src/log.ts createLogger), and the audit every JSON
 * log line a test run writes goes through (issue 31 item 5): each line is parsed with a strict JSON parser that
 * keeps duplicate keys (@humanwhocodes/momoa: JSON.parse would silently keep only the last), and a line that is
 * not valid JSON or repeats a key in any object is recorded as a problem. The setup file ./log-audit-setup.ts
 * fails the test that wrote such a line.
 *
 * What is audited: every line of a `run`/CLI child's stderr (test/support/child.ts: spawnCli and runCli), every
 * line of the capturing loggers below, and every pino line the test process itself writes to its standard output
 * or error (the setup file watches those file descriptors).
 */
import { Writable } from 'node:stream';
import { type AnyNode, parse } from '@humanwhocodes/momoa';
import { createLogger, type Logger } from '../../src/log.ts';

const problems: string[] = [];

/**
 * The keys that occur more than once in one object of `json` (at any depth), as "path.key"; throws when `json`
 * is not valid JSON.
 */
export function duplicateKeys(json: string): string[] {
  const found: string[] = [];
  const walk = (node: AnyNode, path: string): void => {
    if (node.type === 'Object') {
      const seen = new Set<string>();
      for (const member of node.members) {
        const name = member.name.type === 'String' ? member.name.value : member.name.name;
        if (seen.has(name)) found.push(path === '' ? name : `${path}.${name}`);
        seen.add(name);
        walk(member.value, path === '' ? name : `${path}.${name}`);
      }
    } else if (node.type === 'Array') {
      node.elements.forEach((element, i) => {
        walk(element.value, `${path}[${i}]`);
      });
    }
  };
  walk(parse(json, { mode: 'json' }).body, '');
  return found;
}

/**
 * Audits every complete line of `text` that is a JSON object (a log line): records a line that is not valid
 * JSON or carries a key twice, naming `source`. Other lines (a CLI's plain-text error) are not log lines.
 */
export function auditLogText(text: string, source: string): void {
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const duplicates = duplicateKeys(line);
      if (duplicates.length > 0) {
        problems.push(`${source}: a key written twice (${duplicates.join(', ')}): ${line.slice(0, 300)}`);
      }
    } catch (error) {
      problems.push(`${source}: not valid JSON (${(error as Error).message}): ${line.slice(0, 300)}`);
    }
  }
}

/** Feeds a stream of text to auditLogText line by line (complete lines only, the rest waits for its end). */
export function lineAuditor(source: string): { write(chunk: string): void; end(): void } {
  let pending = '';
  return {
    write(chunk) {
      pending += chunk;
      const cut = pending.lastIndexOf('\n');
      if (cut < 0) return;
      auditLogText(pending.slice(0, cut), source);
      pending = pending.slice(cut + 1);
    },
    end() {
      if (pending !== '') auditLogText(pending, source);
      pending = '';
    },
  };
}

/** The problems recorded since the last call (and forgets them). */
export function takeLogProblems(): string[] {
  return problems.splice(0);
}

/** A destination stream for a logger: every line is audited, then handed to `onLine` (parsed by the caller). */
export function auditedStream(onLine: (line: string) => void, source = 'a capturing logger'): Writable {
  const audit = lineAuditor(source);
  return new Writable({
    write(chunk, _encoding, callback) {
      const text = String(chunk);
      audit.write(text);
      for (const line of text.split('\n')) if (line.trim() !== '') onLine(line);
      callback();
    },
  });
}

/**
 * A JSON logger built like `run`'s (createLogger: redaction, bindings without repeats) whose lines are kept in
 * memory and audited: `output()` the text, `lines()` the parsed objects.
 */
export function capturingLogger(level: 'trace' | 'debug' | 'info' = 'trace'): {
  logger: Logger;
  output: () => string;
  lines: () => Array<Record<string, unknown>>;
} {
  const written: string[] = [];
  const logger = createLogger({ level, pretty: false, destination: auditedStream((l) => written.push(l)) });
  return {
    logger,
    output: () => written.map((l) => `${l}\n`).join(''),
    lines: () => written.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

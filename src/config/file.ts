/**
 * Reading a YAML config file into a raw object, without validation. Light on purpose (no schema, no zod):
 * the entry point also reads the file this way to find where `run` will poll before the rest loads
 * (src/cli/first-poll.ts); yaml itself loads only when there is a file to parse.
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ConfigError } from './errors.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');

/** Reads and parses a YAML config file into a raw object (no validation). */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`cannot read config file ${file}: ${code}`, []);
  }
  // yaml loads only when there is a file to parse: `run --sink stdout` without --config never pays for it.
  const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The first error is where the file goes wrong (those after it usually follow from it): it gets the lines it
    // points at, the others their one-line message.
    throw new ConfigError(
      `config file ${file} is not valid YAML:`,
      doc.errors.map((e, i) => yamlProblem(e.message, i === 0)),
    );
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`config file ${file}: the top level must be a mapping of keys`, []);
  }
  return value as Record<string, unknown>;
}

/**
 * One problem line for a YAML error. yaml's message is "<what> at line L, column C:", a blank line, the lines it
 * points at and a caret under the column. With `withLines`, those lines follow, indented under the problem (a
 * message that ends in ":" says what follows); without, the message ends at the position. In the quoted lines,
 * every run of 16 or more letters and digits that has both is masked with as many asterisks (the caret stays in
 * place): an inline key, token or webhook path segment next to the mistake is never printed (the CLI's redactor
 * catches credential shapes as well).
 */
export function yamlProblem(message: string, withLines: boolean): string {
  const [first = message, ...rest] = message.split('\n');
  const lines = rest.filter((line, i) => !(line.trim() === '' && (i === 0 || i === rest.length - 1)));
  while (lines.length > 0 && lines.at(-1)?.trim() === '') lines.pop();
  if (!withLines || lines.length === 0) return first.replace(/:$/, '');
  return [first, ...lines.map((line) => `    ${maskLongTokens(line)}`)].join('\n');
}

function maskLongTokens(line: string): string {
  return line.replace(/[A-Za-z0-9+/=_~-]{16,}/g, (run) =>
    /[0-9]/.test(run) && /[A-Za-z]/.test(run) ? '*'.repeat(run.length) : run,
  );
}

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
    throw new ConfigError(
      `config file ${file} is not valid YAML:`,
      doc.errors.map((e) => e.message.split('\n')[0] ?? e.message),
    );
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`config file ${file}: the top level must be a mapping of keys`, []);
  }
  return value as Record<string, unknown>;
}

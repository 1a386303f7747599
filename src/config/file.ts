/**
 * Reading a YAML config file into a raw object, without validation. Light on purpose (no schema, no zod):
 * the entry point also reads the file this way to find where `run` will poll before the rest loads
 * (src/cli/first-poll.ts); yaml itself loads only when there is a file to parse, and is let go afterwards
 * (withYaml).
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ConfigError } from './errors.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');

/**
 * The last file parsed: its path, text and value. `run --config` reads its file twice at start-up (first for
 * where to poll, src/cli/first-poll.ts, then the configuration loader), and yaml is let go after each read
 * (withYaml), so the second read would load and compile it again: 6–10 ms of every start (measured). A read
 * whose file holds the same text as last time returns a copy of the value it had instead (an unchanged file at a
 * reload too); any other text is parsed as always. A few KB, held for the life of the process.
 */
let lastParsed: { file: string; text: string; value: Record<string, unknown> } | undefined;

/** Reads and parses a YAML config file into a raw object (no validation); each call returns its own object. */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`cannot read config file ${file}: ${code}`, []);
  }
  if (lastParsed?.file === file && lastParsed.text === text) return structuredClone(lastParsed.value);
  const value = parseConfigText(file, text);
  lastParsed = { file, text, value: structuredClone(value) };
  return value;
}

function parseConfigText(file: string, text: string): Record<string, unknown> {
  const doc = withYaml((yaml) => yaml.parseDocument(text, { prettyErrors: true, uniqueKeys: true }));
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

/** yaml's modules, as the CommonJS loader caches them. */
const YAML_MODULE = /[\\/]node_modules[\\/]yaml[\\/]/;

/**
 * Runs `use` with the yaml package, which is needed when a file is read (at start-up, at each reload, by the
 * config commands) and never in between. It loads only then (`run --sink stdout` without --config never pays
 * for it), as CommonJS, and the modules this call loaded leave the require cache afterwards, so the next
 * collection frees them: kept, its ~290 KB of source and its objects held about 0.5 MiB of an idle `run`'s
 * heap for the life of the process (the footprint note in docs/performance.md).
 * A reload of a changed file loads it again (an unchanged one is not parsed: readConfigFile).
 * The bundled executable has yaml inside its one script (nothing to let go; the cache has no entry for it).
 */
export function withYaml<T>(use: (yaml: typeof Yaml) => T): T {
  const cache = createRequire(import.meta.url).cache;
  const cachedBefore = new Set(Object.keys(cache));
  try {
    // Written as one call expression: the release bundle turns exactly this form into a plain `require('yaml')`
    // that esbuild bundles (scripts/package/bundle.ts); a `require` kept in a variable would be looked up on a
    // disk the executable does not have ("Cannot find module 'yaml'").
    return use(createRequire(import.meta.url)('yaml') as typeof Yaml);
  } finally {
    for (const id of Object.keys(cache)) {
      if (!cachedBefore.has(id) && YAML_MODULE.test(id)) delete cache[id];
    }
  }
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

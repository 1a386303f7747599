/**
 * Turns zod issues into one line each that names the key path and what was expected, e.g.
 * `sinks[1].url: expected an http(s) URL` or `imds.pollIntervalMs: expected a number >= 200, got 100`.
 * Received values are only echoed for enum/literal mismatches (never for free-form strings, which may be
 * secrets).
 */
import type { z } from 'zod';
import { ConfigError } from '../errors.ts';

// ConfigError lives in src/errors.ts (shared by every layer, so that sink and fleet options errors extend it).
export { ConfigError };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `['sinks', 1, 'url']` → `sinks[1].url`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && IDENTIFIER.test(segment))
      out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === '' ? '(top level)' : out;
}

function describeInput(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'a mapping';
  return `a ${typeof input}`;
}

function shown(input: unknown): string {
  if (typeof input === 'string' && input.length <= 60) return JSON.stringify(input);
  if (typeof input === 'number' || typeof input === 'boolean') return String(input);
  return describeInput(input);
}

const TYPE_NAMES: Record<string, string> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
};

function boundText(issue: { origin?: string; inclusive?: boolean }, bound: unknown, small: boolean): string {
  const n = String(bound);
  switch (issue.origin) {
    case 'array':
    case 'set':
      return `at ${small ? 'least' : 'most'} ${n} item(s)`;
    case 'string':
      return `at ${small ? 'least' : 'most'} ${n} character(s)`;
    default: {
      const op = small ? (issue.inclusive === false ? '>' : '>=') : issue.inclusive === false ? '<' : '<=';
      return `a number ${op} ${n}`;
    }
  }
}

/** Allowed keys of the object schema at `path` (following the input through unions), for "unknown key" hints. */
function allowedKeysAt(
  schema: z.ZodType,
  path: readonly PropertyKey[],
  input: unknown,
): string[] | undefined {
  // biome-ignore lint/suspicious/noExplicitAny: walking zod's internal definitions generically
  let node: any = schema;
  let value: unknown = input;
  const unwrap = () => {
    for (;;) {
      const def = node?._zod?.def;
      if (def === undefined) return;
      if (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type))
        node = def.innerType;
      else if (def.type === 'pipe') node = def.in;
      else if (def.type === 'union') {
        const discriminator: string | undefined = def.discriminator;
        const branch = def.options.find((option: z.ZodType) => {
          const shape = (option as z.ZodObject).shape;
          if (discriminator === undefined || shape === undefined) return false;
          const literal = shape[discriminator]?._zod?.def;
          return literal?.values?.includes((value as Record<string, unknown> | undefined)?.[discriminator]);
        });
        if (branch === undefined) return;
        node = branch;
      } else return;
    }
  };
  unwrap();
  for (const segment of path) {
    const def = node?._zod?.def;
    if (def?.type === 'object') node = def.shape[segment as string];
    else if (def?.type === 'array') node = def.element;
    else return undefined;
    value = (value as Record<PropertyKey, unknown> | undefined)?.[segment];
    unwrap();
  }
  return node?._zod?.def?.type === 'object' ? Object.keys(node._zod.def.shape) : undefined;
}

/**
 * One readable line per problem. `flags` maps a key path (e.g. `imds.pollIntervalMs`) to the CLI option that
 * set it, so errors caused by an option say so.
 */
export function formatIssues(
  issues: readonly z.core.$ZodIssue[],
  schema: z.ZodType,
  input: unknown,
  flags: Record<string, string> = {},
): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeysAt(schema, issue.path, input);
      for (const key of issue.keys) {
        const hint = allowed === undefined ? '' : ` (allowed here: ${allowed.join(', ')})`;
        lines.push(`${formatPath([...issue.path, key])}: unknown key${hint}`);
      }
      continue;
    }
    const at = formatPath(issue.path);
    const flag = flags[at] === undefined ? '' : ` (from ${flags[at]})`;
    lines.push(`${at}${flag}: ${describeIssue(issue)}`);
  }
  return lines;
}

/** zod's own message for a union without a custom error. */
const DEFAULT_UNION_MESSAGE = 'Invalid input';

function describeIssue(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case 'invalid_type': {
      const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
      if (input === undefined) return `required (expected ${expected})`;
      return `expected ${expected}, got ${describeInput(input)}`;
    }
    case 'too_small':
      return `expected ${boundText(issue, issue.minimum, true)}${typeof input === 'number' ? `, got ${input}` : ''}`;
    case 'too_big':
      return `expected ${boundText(issue, issue.maximum, false)}${typeof input === 'number' ? `, got ${input}` : ''}`;
    case 'invalid_format':
      if (issue.format === 'url') return 'expected an http:// or https:// URL';
      if (issue.format === 'regex') return `expected ${issue.message}`;
      return `expected a valid ${issue.format}`;
    case 'invalid_value': {
      const options = issue.values.map((v) => JSON.stringify(v)).join(' | ');
      return `expected ${issue.values.length === 1 ? options : `one of ${options}`}, got ${shown(input)}`;
    }
    case 'invalid_union': {
      if (issue.discriminator !== undefined) {
        const options = (issue as { options?: unknown[] }).options ?? [];
        const value = (input as Record<string, unknown> | undefined)?.[issue.discriminator];
        const list = options.map((v) => JSON.stringify(v)).join(' | ');
        if (value === undefined) return `required (expected one of ${list})`;
        return `expected one of ${list}, got ${shown(value)}`;
      }
      // A union that names what it accepts (e.g. secrets) says so in its own message; otherwise list the branches.
      const expected =
        issue.message !== '' && issue.message !== DEFAULT_UNION_MESSAGE
          ? issue.message
          : [...new Set(issue.errors.map(describeUnionBranch))].join(' or ');
      if (input === undefined) return `required (expected ${expected})`;
      return `expected ${expected}, got ${describeInput(input)}`;
    }
    case 'invalid_key':
      // A record key that failed its own check (e.g. a reserved header name): say what the check said.
      return issue.issues.map(describeIssue).join('; ');
    case 'not_multiple_of':
      return `expected a multiple of ${String(issue.divisor)}`;
    default:
      return issue.message;
  }
}

/** What one branch of a union wanted: a type ("a string") or a mapping with its required keys. */
function describeUnionBranch(branch: readonly z.core.$ZodIssue[]): string {
  const rootType = branch.find((b) => b.path.length === 0 && b.code === 'invalid_type');
  if (rootType?.code === 'invalid_type') return TYPE_NAMES[rootType.expected] ?? rootType.expected;
  const missing = branch
    .filter(
      (b) =>
        b.code === 'invalid_type' && b.path.length === 1 && (b as { input?: unknown }).input === undefined,
    )
    .map((b) => String(b.path[0]));
  if (missing.length > 0) return `{ ${missing.map((k) => `${k}: …`).join(', ')} }`;
  const first = branch[0];
  return first === undefined ? 'something else' : describeIssue(first);
}

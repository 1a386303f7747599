/**
 * Error types and helpers shared by every layer (the CLI, config, sources, sinks, store).
 * Nothing here imports from src/cli: the CLI depends on this module, not the other way round.
 */

/** A usage or configuration error: the CLI prints the message and exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A configuration that failed to load or validate. Extends UsageError, so the CLI exits with code 2. */
export class ConfigError extends UsageError {
  /** One line per problem, each starting with the key path. */
  readonly problems: readonly string[];
  constructor(heading: string, problems: readonly string[]) {
    super(problems.length === 0 ? heading : `${heading}\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** How much of a thrown non-Error object's JSON form a message keeps. */
const MAX_OBJECT_TEXT = 500;

/**
 * The message of anything thrown — the one way to turn an unknown error into text (a Biome plugin,
 * scripts/lint/error-message.grit, refuses the other forms in src):
 *
 * - an Error: its message; an empty one falls back to its inner errors' messages (an AggregateError, such as
 *   Node's connect to every address of a name), its `code`, or its name — never an empty string;
 * - a string: itself;
 * - any other object: its `message` when that is a non-empty string (SDKs throw such plain objects), else its own
 *   `toString()` when it has one, else its JSON (cut to 500 characters) — never `[object Object]`;
 * - anything else (number, symbol, null, undefined...): its string form; `null`/`undefined` say they were thrown.
 *
 * Not redacted; use `redactedMessage` (src/redact.ts), which is built on this, when the text may carry a secret.
 */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message !== '' ? error.message : emptyErrorMessage(error);
  if (typeof error === 'string') return error;
  if (error === null || error === undefined) return `${String(error)} was thrown`;
  if (typeof error === 'object') return objectMessage(error);
  return String(error);
}

/** Anything thrown as an Error: itself when it is one, else a new Error with its errorMessage. */
export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(errorMessage(error));
}

function emptyErrorMessage(error: Error): string {
  if (error instanceof AggregateError && Array.isArray(error.errors) && error.errors.length > 0) {
    return (error.errors as unknown[]).map(errorMessage).join('; ');
  }
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? code : error.name;
}

function objectMessage(error: object): string {
  const message = (error as { message?: unknown }).message;
  if (typeof message === 'string' && message !== '') return message;
  if (typeof error.toString === 'function' && error.toString !== Object.prototype.toString) {
    const text = String(error);
    if (text !== '' && text !== '[object Object]') return text;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(error);
  } catch {
    json = undefined; // a cycle or a BigInt: named by its constructor below
  }
  if (json === undefined) return `a thrown ${error.constructor?.name ?? 'object'} that has no message`;
  return json.length > MAX_OBJECT_TEXT ? `${json.slice(0, MAX_OBJECT_TEXT)}...` : json;
}

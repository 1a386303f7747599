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

/**
 * The message of anything thrown: `error.message` for an Error, `String(error)` otherwise.
 * Not redacted; use `redactedMessage` (src/redact.ts), which is built on this, when the text may
 * carry a secret.
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

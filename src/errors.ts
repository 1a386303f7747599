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

/**
 * The message of anything thrown: `error.message` for an Error, `String(error)` otherwise.
 * Not redacted; use `redactedMessage` (src/redact.ts), which is built on this, when the text may
 * carry a secret.
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

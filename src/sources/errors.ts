/**
 * The source-neutral error of a request a source makes for the pipeline (SourceApproval.approve, src/sources/
 * types.ts): whether retrying can help and how long the server asked to wait. A source's own errors extend it
 * (ImdsError); approval reads only this.
 */
export abstract class SourceRequestError extends Error {
  /** True for transient failures that are retried with backoff; false for a final rejection. */
  declare readonly retryable: boolean;
  /** Delay the server asked for (Retry-After), in milliseconds. */
  declare readonly retryAfterMs?: number;
}

/**
 * Maps errors from @azure/event-hubs / @azure/core-amqp / @azure/identity to the delivery engine's
 * retryable/permanent decision. The table (and why) is documented in docs/sinks-event-hubs.md.
 */
import { isSocketErrorCode } from '../delivery-errors.ts';

/** SDK error codes that mean "this record (or this configuration) will never be accepted": dead-letter. */
export const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'MessagingEntityNotFoundError',
  'MessageTooLargeError',
  'ArgumentOutOfRangeError',
  'ArgumentError',
  'InvalidOperationError',
  'MessagingEntityDisabledError',
  'NotImplementedError',
]);

/**
 * SDK codes the SDK itself does not retry but the delivery engine should (with its long backoff):
 * - UnauthorizedError: role assignments and managed identities take minutes to propagate, and tokens can be
 *   rejected during rotation; dead-lettering would turn a fixable configuration delay into data loss.
 * - QuotaExceededError: throughput units / connection quota exhausted — a capacity condition that clears.
 * - SendOperationFailedError: the service released the message (not processed) — safe to send again.
 */
export const ENGINE_RETRIES_CODES: ReadonlySet<string> = new Set([
  'UnauthorizedError',
  'QuotaExceededError',
  'SendOperationFailedError',
]);

export interface ErrorClassification {
  retryable: boolean;
  /**
   * Low-cardinality code for metrics and dead-letter rows (src/sinks/delivery-errors.ts): a shared code
   * (aborted, network, payload-too-large) or the SDK code without the "Error" suffix.
   */
  code: string;
  /** The error whose code decided (for AggregateError: the last attempt's error). */
  decisive: unknown;
}

function codeOf(error: unknown): string | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? code : undefined;
}

function shortCode(code: string): string {
  return code.endsWith('Error') && code.length > 5 ? code.slice(0, -5) : code;
}

/**
 * Decides whether a failed send is retryable. An AggregateError (every SDK try failed) is decided by its last
 * inner error; errors without a known permanent code are retryable (the engine retries with backoff).
 */
export function classifyEventHubsError(error: unknown): ErrorClassification {
  let decisive = error;
  if (error instanceof AggregateError && error.errors.length > 0) decisive = error.errors.at(-1);
  const name = decisive instanceof Error ? decisive.name : undefined;
  if (name === 'AbortError') return { retryable: true, code: 'aborted', decisive };
  // @azure/identity: no managed identity endpoint yet, or the token request failed — retry later.
  if (name === 'CredentialUnavailableError')
    return { retryable: true, code: 'CredentialUnavailable', decisive };
  if (name === 'AuthenticationError' || name === 'AuthenticationRequiredError') {
    return { retryable: true, code: 'AuthenticationFailed', decisive };
  }
  const code = codeOf(decisive);
  if (code === undefined) return { retryable: true, code: 'unknown', decisive };
  // The shared codes of src/sinks/delivery-errors.ts where the SDK's code means the same.
  if (code === 'MessageTooLargeError') return { retryable: false, code: 'payload-too-large', decisive };
  if (isSocketErrorCode(code)) return { retryable: true, code: 'network', decisive };
  if (PERMANENT_CODES.has(code)) return { retryable: false, code: shortCode(code), decisive };
  return { retryable: true, code: shortCode(code), decisive };
}

/** A one-line, secret-free description of an SDK error for DeliveryError messages and logs. */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return `${error.errors.length} attempts failed; last: ${describeError(error.errors.at(-1))}`;
  }
  if (error instanceof Error) {
    const code = codeOf(error);
    return `${code ?? error.name}: ${error.message}`;
  }
  return String(error);
}

/**
 * Maps errors from @azure/event-hubs / @azure/core-amqp / @azure/identity to the delivery engine's decision:
 * retryable, permanent for the record (dead letter) or permanent for the destination (the sink pauses; docs/
 * delivery.md, "Two classes of permanent failure"). The table (and why) is documented in docs/sinks-event-hubs.md.
 */
import { IDENTITY_REFUSED, identityRefused } from '../../azure/credential-errors.ts';
import { errorMessage } from '../../errors.ts';
import { isSocketErrorCode } from '../delivery-errors.ts';
import type { FailureScope } from '../types.ts';

/** SDK error codes that mean "this record will never be accepted": dead-letter it. */
export const RECORD_CODES: ReadonlySet<string> = new Set([
  'MessageTooLargeError',
  'ArgumentOutOfRangeError',
  'ArgumentError',
  'InvalidOperationError',
  'NotImplementedError',
]);

/**
 * SDK error codes that mean "this hub refuses everything until it or the configuration is fixed", with what
 * each means and its fix: the sink pauses and keeps the records (a role assignment takes minutes to propagate;
 * dead-lettering every record meanwhile would need a replay of each).
 */
export const DESTINATION_CODES: ReadonlyMap<string, string> = new Map([
  [
    'UnauthorizedError',
    'Event Hubs refuses the credentials or what they may do; fix: give the identity the role "Azure Event Hubs Data Sender" on the event hub or its namespace (a new assignment takes effect within minutes), or check the connection string\'s key and its Send claim',
  ],
  [
    'MessagingEntityNotFoundError',
    "no such event hub in this namespace; fix: check eventHubName (or the connection string's EntityPath) and the namespace",
  ],
  [
    'MessagingEntityDisabledError',
    'the event hub is disabled; fix: make it Active again (az eventhubs eventhub update --status Active)',
  ],
]);

/**
 * SDK codes the SDK itself does not retry but the delivery engine should (with its long backoff):
 * - QuotaExceededError: throughput units / connection quota exhausted — a capacity condition that clears.
 * - SendOperationFailedError: the service released the message (not processed) — safe to send again.
 */
export const ENGINE_RETRIES_CODES: ReadonlySet<string> = new Set([
  'QuotaExceededError',
  'SendOperationFailedError',
]);

export interface ErrorClassification {
  retryable: boolean;
  /** For a permanent failure: the record's or the destination's. */
  scope?: FailureScope;
  /** For a failure of the destination: what it means and its fix. */
  refusal?: string;
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
 * Decides whether a failed send is retryable, or permanent for the record or for the destination. An
 * AggregateError (every SDK try failed) is decided by its last inner error; errors without a known permanent
 * code are retryable (the engine retries with backoff).
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
    // A 4xx from the token endpoint refuses the credential itself; anything else (5xx, no answer) may pass.
    if (identityRefused(decisive)) {
      return {
        retryable: false,
        scope: 'destination',
        refusal: IDENTITY_REFUSED,
        code: 'AuthenticationFailed',
        decisive,
      };
    }
    return { retryable: true, code: 'AuthenticationFailed', decisive };
  }
  const code = codeOf(decisive);
  if (code === undefined) return { retryable: true, code: 'unknown', decisive };
  // The shared codes of src/sinks/delivery-errors.ts where the SDK's code means the same.
  if (code === 'MessageTooLargeError')
    return { retryable: false, scope: 'record', code: 'payload-too-large', decisive };
  if (code === 'ENOTFOUND') {
    return {
      retryable: false,
      scope: 'destination',
      refusal:
        "the namespace's host name does not resolve (DNS: no such name); fix: check fullyQualifiedNamespace (or the connection string's Endpoint)",
      code: 'name-not-resolved',
      decisive,
    };
  }
  if (isSocketErrorCode(code)) return { retryable: true, code: 'network', decisive };
  const refusal = DESTINATION_CODES.get(code);
  if (refusal !== undefined)
    return { retryable: false, scope: 'destination', refusal, code: shortCode(code), decisive };
  if (RECORD_CODES.has(code)) return { retryable: false, scope: 'record', code: shortCode(code), decisive };
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
  return errorMessage(error);
}

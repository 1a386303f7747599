/**
 * Typed IMDS errors. Every failed request or unusable answer becomes an ImdsError with a low-cardinality
 * `reason` (a PollFailureReason), so the poller can count it as a failed poll — never as an empty document.
 */
import type { PollFailureReason } from '../../domain/index.ts';
import { SourceRequestError } from '../errors.ts';

/** Longest body excerpt kept in an error (characters). */
export const EXCERPT_LENGTH = 200;

export interface ImdsErrorOptions {
  httpStatus?: number;
  retryAfterMs?: number;
  excerpt?: string;
  retryable?: boolean;
  cause?: unknown;
}

/** Reasons that are transient: retried with backoff (410, 429, 5xx, network errors, timeouts). */
const RETRYABLE_REASONS: ReadonlySet<PollFailureReason> = new Set<PollFailureReason>([
  'timeout',
  'network',
  'throttled',
  'gone',
  'server-error',
]);

/** A failed IMDS request or an unusable IMDS answer. */
export class ImdsError extends SourceRequestError {
  readonly reason: PollFailureReason;
  readonly httpStatus?: number;
  /** Delay the server asked for with Retry-After, in milliseconds (an own property, undefined when not given). */
  override readonly retryAfterMs?: number = undefined;
  /** Short, single-line excerpt of the offending body. */
  readonly excerpt?: string;
  /** True for transient failures (410, 429, 5xx, network, timeout) that are retried with backoff. */
  override readonly retryable: boolean;

  constructor(reason: PollFailureReason, message: string, options: ImdsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ImdsError';
    this.reason = reason;
    if (options.httpStatus !== undefined) this.httpStatus = options.httpStatus;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.excerpt !== undefined) this.excerpt = options.excerpt;
    this.retryable = options.retryable ?? RETRYABLE_REASONS.has(reason);
  }
}

/** The body of an IMDS answer is not a usable document (not JSON, HTML, truncated, empty, wrong shape). */
export class ImdsResponseError extends ImdsError {
  constructor(message: string, body: string, options: Omit<ImdsErrorOptions, 'excerpt'> = {}) {
    super('invalid-response', message, { ...options, excerpt: excerptOf(body) });
    this.name = 'ImdsResponseError';
  }
}

/** A short single-line excerpt of a body for error messages and logs. */
export function excerptOf(body: string, length = EXCERPT_LENGTH): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}

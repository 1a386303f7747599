/**
 * The capture format shared by `--record FILE` (writer) and the replay source (reader): JSON lines, one
 * object per line, in observation order.
 *
 *   {"observedAt":"2022-04-11T22:11:58.120Z","document":{"DocumentIncarnation":2,"Events":[...]}}
 *   {"observedAt":"2022-04-11T22:12:03.004Z","failure":{"reason":"server-error","message":"IMDS server error 503"}}
 *
 * `document` is the raw JSON object IMDS answered (not the normalised form), so a capture replays through
 * the same tolerant parser as live traffic. `failure.reason` is a PollFailureReason.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { PollFailureReason } from '../types.ts';

export interface CaptureDocumentLine {
  observedAt: string;
  document: unknown;
}

export interface CaptureFailureLine {
  observedAt: string;
  failure: { reason: PollFailureReason; message: string };
}

export type CaptureLine = CaptureDocumentLine | CaptureFailureLine;

const FAILURE_REASONS: ReadonlySet<string> = new Set<PollFailureReason>([
  'timeout',
  'network',
  'bad-request',
  'not-found',
  'throttled',
  'gone',
  'server-error',
  'invalid-response',
  'unexpected-status',
  'aborted',
]);

/** Appends capture lines to a file (created with its directory when missing). */
export class CaptureWriter {
  readonly file: string;
  #ready: Promise<unknown> | undefined;

  constructor(file: string) {
    this.file = file;
  }

  /** Append one document as received from IMDS (`raw` is the parsed JSON body). */
  appendDocument(observedAtMs: number, raw: unknown): Promise<void> {
    return this.#append({ observedAt: new Date(observedAtMs).toISOString(), document: raw });
  }

  /** Append a failure line. */
  appendFailure(observedAtMs: number, reason: PollFailureReason, message: string): Promise<void> {
    return this.#append({ observedAt: new Date(observedAtMs).toISOString(), failure: { reason, message } });
  }

  /** Nothing is held open between appends; kept so callers can treat the writer as a resource. */
  async close(): Promise<void> {}

  async #append(line: CaptureLine): Promise<void> {
    this.#ready ??= mkdir(dirname(this.file), { recursive: true });
    await this.#ready;
    await appendFile(this.file, `${JSON.stringify(line)}\n`, 'utf8');
  }
}

/** A capture line that cannot be used; the message names the line number and the problem. */
export class CaptureLineError extends Error {
  readonly lineNumber: number;
  /** observedAt of the line when it had a valid one. */
  readonly observedAtMs: number | undefined;
  constructor(file: string, lineNumber: number, problem: string, observedAtMs?: number) {
    super(`capture ${file} line ${lineNumber}: ${problem}`);
    this.name = 'CaptureLineError';
    this.lineNumber = lineNumber;
    this.observedAtMs = observedAtMs;
  }
}

/** Parse one capture line; throws CaptureLineError naming the line and the problem. */
export function parseCaptureLine(file: string, lineNumber: number, line: string): CaptureLine {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new CaptureLineError(file, lineNumber, `not valid JSON (${detail})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new CaptureLineError(file, lineNumber, 'not a JSON object');
  }
  const record = json as Record<string, unknown>;
  const observedAtMs = typeof record.observedAt === 'string' ? Date.parse(record.observedAt) : Number.NaN;
  if (Number.isNaN(observedAtMs)) {
    throw new CaptureLineError(
      file,
      lineNumber,
      'missing or invalid "observedAt" (expected an ISO 8601 time)',
    );
  }
  const observedAt = record.observedAt as string;
  if ('document' in record) return { observedAt, document: record.document };
  const failure = record.failure;
  if (typeof failure === 'object' && failure !== null) {
    const { reason, message } = failure as Record<string, unknown>;
    if (typeof reason !== 'string' || !FAILURE_REASONS.has(reason)) {
      throw new CaptureLineError(
        file,
        lineNumber,
        `unknown failure reason ${JSON.stringify(reason)}`,
        observedAtMs,
      );
    }
    return {
      observedAt,
      failure: { reason: reason as PollFailureReason, message: typeof message === 'string' ? message : '' },
    };
  }
  throw new CaptureLineError(file, lineNumber, 'has neither "document" nor "failure"', observedAtMs);
}

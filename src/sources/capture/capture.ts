/**
 * The capture format shared by `--record FILE` (writer) and the replay source (reader): JSON lines, one
 * object per line, in observation order.
 *
 *   {"observedAt":"2022-04-11T22:11:58.120Z","document":{"DocumentIncarnation":2,"Events":[...]},"vm":{"name":"web-1",...}}
 *   {"observedAt":"2022-04-11T22:12:03.004Z","failure":{"reason":"server-error","message":"IMDS server error 503"}}
 *
 * `document` is the raw JSON object IMDS answered (not the normalised form), so a capture replays through
 * the same tolerant parser as live traffic. `vm` is the VM identity the recording forwarder knew at the time
 * (absent in captures written before it was added, or while IMDS had not answered /metadata/instance); replay
 * uses it, so records keep their source, vmid and affectsThisVm. `failure.reason` is a PollFailureReason.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { PollFailureReason, VmIdentity } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';

export interface CaptureDocumentLine {
  observedAt: string;
  document: unknown;
  /** The VM identity when the document was recorded (optional: older captures have none). */
  vm?: VmIdentity;
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

  /** Append one document as received from IMDS (`raw` is the parsed JSON body), with the VM identity if known. */
  appendDocument(observedAtMs: number, raw: unknown, vm?: VmIdentity): Promise<void> {
    return this.#append({
      observedAt: new Date(observedAtMs).toISOString(),
      document: raw,
      ...(vm === undefined ? {} : { vm }),
    });
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
    const detail = errorMessage(error);
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
  if ('document' in record) {
    const vm = captureIdentity(record.vm);
    return { observedAt, document: record.document, ...(vm === undefined ? {} : { vm }) };
  }
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

const IDENTITY_KEYS = [
  'name',
  'vmId',
  'resourceId',
  'subscriptionId',
  'resourceGroupName',
  'location',
  'zone',
  'vmScaleSetName',
  'vmSize',
  'osType',
  'computerName',
] as const satisfies ReadonlyArray<keyof VmIdentity>;

/** A captured `vm` object as a VmIdentity (missing or non-string values become ""); undefined without a name. */
function captureIdentity(value: unknown): VmIdentity | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const raw = value as Record<string, unknown>;
  const identity = Object.fromEntries(
    IDENTITY_KEYS.map((key) => [key, typeof raw[key] === 'string' ? raw[key] : '']),
  ) as unknown as VmIdentity;
  return identity.name === '' ? undefined : identity;
}

/**
 * What the sink compliance suite (test/unit/sinks/compliance.test.ts) needs from one sink type: the `Harness`
 * interface each type's harness implements (beside the sink's tests, listed in test/support/sink-harnesses.ts),
 * the context the suite hands it, and the helpers harnesses share.
 */
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { silentLogger } from '../../src/log.ts';
import type { Sink, SinkContext } from '../../src/sinks/types.ts';
import { makeRecord } from './records.ts';
import type { TestPki } from './tls-certs.ts';

/** How a test drives one sink type's real receiver. */
export interface Harness {
  /** Raw options, parsed with the factory's own schema. */
  options: Record<string, unknown>;
  /** Configured secret values that must never show up in an error. */
  secrets: string[];
  /** Builds the sink some other way than factory.create (stdout: a captured stream instead of fd 1). */
  create?(name: string): Promise<Sink>;
  /** Ids of the records that reached the receiver, in arrival order (duplicates included). */
  arrived(): string[];
  /**
   * Make every following delivery fail: 'retryable' (a transient failure: busy, unavailable), 'record' (the
   * destination refuses the records it is sent, as it refuses an invalid one: a permanent failure of the record)
   * or 'destination' (it refuses everything, as a destination with revoked credentials, a missing role, a
   * deleted endpoint or stream does: a permanent failure of the destination). Only the kinds the destination has:
   * 'record' where `permanent`, 'destination' where `refusal` is set.
   */
  breakDestination(kind: 'retryable' | 'record' | 'destination'): void;
  repair(): void;
  /** Whether the destination has a record failure mode (file and stdout only fail retryably). */
  permanent: boolean;
  /**
   * What breakDestination('destination') does, as an operator would meet it (e.g. "HTTP 401: the token was
   * revoked"); undefined where the destination cannot refuse everything (file and stdout: a local write).
   */
  refusal?: string;
  /** Make the destination stop answering (undefined: a local write that cannot hang, file and stdout). */
  hang?(): void;
  /**
   * Make the destination permanently reject this one record and accept every other (the receiver fails the
   * request, or the part of a batch, that carries it). Returns the record to commit: Event Hubs gets an oversized
   * copy, which the hub's message size limit rejects. Undefined where the destination has no permanent failure
   * (file, stdout). repair() lifts it.
   */
  poison?(record: LifecycleRecord): LifecycleRecord;
  /**
   * Why this batch sink cannot name the failing record (its protocol accepts or rejects a request as a whole):
   * it leaves failedIndex unset and the engine isolates the record. Unset: the sink must report failedIndex.
   */
  failedIndexUnknown?: string;
  /** Stops the receiver and undoes whatever the harness set up (environment variables, doubles). */
  close(): Promise<void>;
}

/** What the suite hands a harness factory. */
export interface HarnessContext {
  /**
   * Every record the suite has built so far. A receiver that sees only payload text (a Slack message, an
   * Adaptive Card) maps it back to record ids with idsInBodies.
   */
  known(): readonly LifecycleRecord[];
  /** A scratch directory for the harness's files (output files, control files), removed after the suite. */
  dir: string;
  /**
   * Set for the suite's run over TLS of every sink type with a `tls` option (the HTTP sinks): start the receiver
   * over HTTPS with `tls.server` (test/support/tls-certs.ts) and put `tls: { ca: { file: tls.ca.certFile } }`
   * in the options. A harness whose receiver is always HTTPS (its options carry `tls`) may ignore it.
   */
  tls?: TestPki;
}

/** Builds one sink type's harness (its receiver started). */
export type HarnessFactory = (context: HarnessContext) => Promise<Harness>;

/** A configured secret: harnesses put it in URLs and headers, receivers echo it back in failures. */
export const SECRET = 'Sup3rS3cretT0ken-compliance-4711';
/** The environment variable the suite sets to SECRET, for options that reference `${SEF_COMPLIANCE_SECRET}`. */
export const ENV_SECRET = 'SEF_COMPLIANCE_SECRET';

/** Numbered batches of records with unique event ids, so a receiver's payload names its record; remembers all. */
export class RecordBatches {
  #batches = 0;
  readonly #all: LifecycleRecord[] = [];

  next(n: number): LifecycleRecord[] {
    this.#batches += 1;
    const tag = String(this.#batches).padStart(4, '0');
    const batch = Array.from({ length: n }, (_, i) =>
      makeRecord('scheduled', { eventId: `C0DE${tag}-0000-4000-8000-${String(i).padStart(12, '0')}` }),
    );
    this.#all.push(...batch);
    return batch;
  }

  all(): readonly LifecycleRecord[] {
    return this.#all;
  }
}

/** Record ids whose event id appears in a text payload, in order of the payloads. */
export function idsInBodies(bodies: string[], known: readonly LifecycleRecord[]): string[] {
  const ids: string[] = [];
  for (const body of bodies) for (const r of known) if (body.includes(r.data.EventId)) ids.push(r.id);
  return ids;
}

/** The SinkContext the suite creates sinks with: silent, no VM identity, state in `stateDir`. */
export function sinkContext(stateDir: string): SinkContext {
  return { logger: silentLogger(), vm: () => undefined, stateDir };
}

/**
 * The delivery engine: one worker per sink draining that sink's outbox queue in commit order, at least once.
 * Rows are removed only after the sink confirmed, in a transaction. Retryable failures back off (full jitter,
 * capped, no time limit) with attempts and next-attempt time persisted in the row. A permanent failure of one
 * record sends it to dead letters; one of the destination (it refuses everything: credentials, authorization, a
 * missing endpoint, TLS trust) pauses the sink instead: its records stay pending and one record probes the
 * destination, slowly backing off, until it accepts again (docs/delivery.md). Wake-up is event-driven: an idle worker sleeps until notify() (called after each commit), with
 * one coarse rescan as a safety net (DEFAULT_RESCAN_INTERVAL_MS); a waiting worker's only other timers are its
 * next retry and the next expiry (caps.maxAgeMs). Events go to the observer given in the options.
 */
import {
  type BackoffOptions,
  DEFAULT_BACKOFF,
  equalJitterBackoffMs,
  MAX_RETRY_AFTER_MS,
  PAUSE_PROBE_BACKOFF,
  retryDelayMs,
} from '../backoff.ts';
import { type Clock, systemClock } from '../clock.ts';
import { formatDurationMs } from '../duration.ts';
import { childLogger, type Logger } from '../log.ts';
import { redactedMessage } from '../redact.ts';
import { DeliveryError, type Sink } from '../sinks/types.ts';
import type { Caps, DeadLetterCaps, Outbox, OutboxRow } from '../store/index.ts';
import { StoreWriteError } from '../store/index.ts';
import type { DeliveryEngineEvent, DeliveryObserver } from './events.ts';

export interface EngineSink {
  sink: Sink;
  /** Override the sink's own maxBatch (never above it). */
  maxBatch?: number;
  backoff?: Partial<BackoffOptions>;
  /** Backoff of a paused sink's one-record probes (default PAUSE_PROBE_BACKOFF: 10 s doubling to 5 min). */
  probeBackoff?: Partial<BackoffOptions>;
  /** Pending caps (beyond them rows become dead letters) and dead-letter caps (beyond them the oldest are dropped). */
  caps?: Caps & DeadLetterCaps;
  /** Abort a delivery that has not settled after this long and retry it (default 120 s). */
  deliveryTimeoutMs?: number;
}

export interface DeliveryEngineOptions {
  store: Outbox;
  sinks: EngineSink[];
  clock?: Clock;
  random?: () => number;
  logger: Logger;
  /** Receives every engine event (the pipeline passes its PipelineObserver's delivery callback on). */
  observer?: DeliveryObserver;
  /**
   * Safety-net rescan of an idle worker's queue, for rows another process added (`deadletters replay`): nothing
   * notifies this process of those. Default DEFAULT_RESCAN_INTERVAL_MS; Infinity: none (idle means no timer).
   */
  rescanIntervalMs?: number;
  /** Wait between retries of a failed store write (ack, bookkeeping). Default 1000 ms. */
  storeRetryMs?: number;
  /** Call sink.close() in stop(). Default true. */
  closeSinks?: boolean;
}

/**
 * An idle worker sleeps until a commit notifies it. Its only timer is this coarse rescan, kept for one reason:
 * `deadletters replay` (another process) moves rows back into the outbox and cannot notify a running forwarder.
 * Everything else that makes work is in this process: commits call notify(), retries and expiry have timers of
 * their own (see SinkWorker.#run).
 */
export const DEFAULT_RESCAN_INTERVAL_MS = 60_000;

/** A sink the engine holds paused because its destination refuses everything (see DeliveryEngine.paused). */
export interface PausedSink {
  sink: string;
  /** DeliveryError.code of the refusal that paused it, or of the latest one (e.g. http-403, tls). */
  code: string;
  /** The cause and its fix, redacted. */
  message: string;
  /** When the pause began (epoch ms). */
  since: number;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
const ABORT_GRACE_MS = 1000;

/**
 * Delivers committed outbox rows to every configured sink. Each sink has one worker; addSink() is the one way a
 * worker comes to be (at construction and when a reload adds or rebuilds a sink) and #retire() the one way it goes
 * (removeSink() for one, stop() for all). A sink's queue is the outbox rows under its name: a worker added later
 * starts from whatever is pending there, and a removed worker's rows stay pending.
 */
export class DeliveryEngine {
  readonly #workers = new Map<string, SinkWorker>();
  readonly #clock: Clock;
  readonly #closeSinks: boolean;
  readonly #observer: DeliveryObserver | undefined;
  readonly #store: Outbox;
  readonly #workerDeps: Omit<WorkerDeps, 'logger'>;
  readonly #logger: Logger;
  /** Workers being removed (removeSink) until they have ended: stop() waits for them too. */
  readonly #retiring = new Set<Promise<void>>();
  /** whenDrained() callers waiting for the next 'idle' report. */
  #idleWaiters: Array<() => void> = [];
  #started = false;
  #stopped: Promise<void> | undefined;

  constructor(options: DeliveryEngineOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#closeSinks = options.closeSinks ?? true;
    this.#observer = options.observer;
    this.#store = options.store;
    this.#logger = options.logger;
    this.#workerDeps = {
      store: options.store,
      clock: this.#clock,
      random: options.random ?? Math.random,
      rescanIntervalMs: options.rescanIntervalMs ?? DEFAULT_RESCAN_INTERVAL_MS,
      storeRetryMs: options.storeRetryMs ?? 1000,
      report: (event) => this.#report(event),
    };
    for (const sink of options.sinks) this.addSink(sink);
  }

  /** The names of the sinks this engine delivers to, in the order they were added. */
  get sinks(): string[] {
    return [...this.#workers.keys()];
  }

  /** The sink a worker delivers to, by name; undefined when there is none. */
  sink(name: string): Sink | undefined {
    return this.#workers.get(name)?.sink;
  }

  #report(event: DeliveryEngineEvent): void {
    if (event.type === 'idle' && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const wake of waiters) wake();
    }
    try {
      this.#observer?.delivery?.(event);
    } catch {
      // a faulty observer must never break delivery
    }
  }

  /** Start one worker per sink. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const w of this.#workers.values()) w.start();
  }

  /**
   * Adds a sink's worker, started at once when the engine runs. Its queue is whatever the outbox holds under its
   * name. Throws when a sink of that name is already delivered to (remove it first) or the engine has stopped.
   */
  addSink(config: EngineSink): void {
    const name = config.sink.name;
    if (this.#stopped !== undefined)
      throw new Error(`cannot add sink "${name}": the delivery engine has stopped`);
    if (this.#workers.has(name)) throw new Error(`two sinks are named "${name}"; sink names must be unique`);
    const logger = childLogger(this.#logger, { component: 'delivery', sink: name });
    const worker = new SinkWorker(config, { ...this.#workerDeps, logger });
    this.#workers.set(name, worker);
    if (this.#started) worker.start();
  }

  /**
   * Removes a sink's worker the way stop() ends every worker: no new work; an in-flight delivery gets
   * `deadlineMs` to settle (a confirmation is acknowledged), then it is aborted; the sink is closed unless
   * closeSinks is false. Its pending rows stay in the outbox, untouched. Resolves once the worker has ended, so a
   * worker added for the same name afterwards never delivers a row twice. No such sink: nothing happens.
   */
  async removeSink(name: string, deadlineMs: number): Promise<void> {
    const worker = this.#workers.get(name);
    if (worker === undefined) return;
    this.#workers.delete(name);
    const retired = this.#retire([worker], deadlineMs);
    this.#retiring.add(retired);
    try {
      await retired;
    } finally {
      this.#retiring.delete(retired);
    }
  }

  /**
   * Resolves when no sink has pending rows, or when `signal` aborts. Checked now and whenever a worker reports
   * its queue empty ('idle'): no timer, and nothing at all while no one waits.
   */
  async whenDrained(signal: AbortSignal): Promise<void> {
    const aborted = new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    while (!signal.aborted) {
      // Before the check, so that an idle report right after it is not missed.
      const idle = new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
      if (this.sinks.every((sink) => this.#store.pending(sink, 1).length === 0)) return;
      await Promise.race([idle, aborted]);
    }
  }

  /** The sinks paused now (their destination refuses everything; records stay pending), in the order added. */
  paused(): PausedSink[] {
    return [...this.#workers.values()].flatMap((w) => {
      const paused = w.paused;
      return paused === undefined ? [] : [paused];
    });
  }

  /** Wake every idle worker at once (call right after each commit). */
  notify(): void {
    for (const w of this.#workers.values()) w.notify();
  }

  /**
   * Stop taking work; give in-flight deliveries `deadlineMs` to finish, then abort them (AbortSignal). Rows not
   * confirmed stay pending for the next start. Closes the sinks unless closeSinks is false.
   */
  stop(deadlineMs = 5000): Promise<void> {
    if (this.#stopped === undefined) {
      const workers = [...this.#workers.values()];
      this.#workers.clear();
      const retiring = [...this.#retiring];
      this.#stopped = this.#retire(workers, deadlineMs).then(() => Promise.all(retiring).then(() => {}));
    }
    return this.#stopped;
  }

  /** Ends `workers` (see removeSink); their rows stay pending. */
  async #retire(workers: readonly SinkWorker[], deadlineMs: number): Promise<void> {
    for (const w of workers) w.requestStop();
    const all = Promise.all(workers.map((w) => w.finished));
    if (!(await this.#within(all, deadlineMs))) {
      for (const w of workers) w.abort();
      await this.#within(all, ABORT_GRACE_MS);
    }
    for (const w of workers) w.abandon();
    if (this.#closeSinks) {
      await Promise.all(
        workers.map(async (w) => {
          try {
            await w.sink.close?.();
          } catch {
            // closing is best effort
          }
        }),
      );
    }
  }

  /** Resolve true if `p` settles within `ms` (on the engine clock), false otherwise. */
  #within(p: Promise<unknown>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.#clock.setTimeout(() => resolve(false), ms);
      void p.then(() => {
        this.#clock.clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

interface WorkerDeps {
  store: Outbox;
  clock: Clock;
  random: () => number;
  logger: Logger;
  rescanIntervalMs: number;
  storeRetryMs: number;
  report(event: DeliveryEngineEvent): void;
}

/** Drains one sink's queue. */
class SinkWorker {
  readonly sink: Sink;
  readonly #deps: WorkerDeps;
  readonly #maxBatch: number;
  readonly #backoff: BackoffOptions;
  readonly #probeBackoff: BackoffOptions;
  readonly #caps: (Caps & DeadLetterCaps) | undefined;
  /** Check the dead-letter caps before the next read: at start, and after this worker made dead letters. */
  #deadLettersToCheck = true;
  readonly #deliveryTimeoutMs: number;
  readonly #abort = new AbortController();
  #finished: Promise<void> = Promise.resolve();
  #stopping = false;
  #abandoned = false;
  #notified = false;
  #hadWork = false;
  /** The current run of failed attempts (since the last success): how many, and when the first one failed. */
  #failing: { attempts: number; sinceMs: number } | undefined;
  /** While the head seq is ≤ this, deliver one record at a time (isolating a permanent failure). */
  #isolateThrough = 0;
  /**
   * Set while the destination refuses everything (a permanent failure of scope 'destination'): one record at a
   * time, each attempt a probe on the probe backoff, until a delivery (or a record-level answer) resumes it.
   */
  #pause: { code: string; message: string; since: number; probes: number } | undefined;
  /** Codes of destination refusals logged at error level since the last delivery: each is logged once. */
  readonly #loggedCauses = new Set<string>();
  /**
   * When the head row's retry is due, on the MONOTONIC clock: the row's next_attempt_at is wall-clock time (it
   * must survive a restart), and a wall clock stepped back by hours would otherwise hold the retry back by as
   * much. Set when this worker schedules a retry, or when it first waits for one it did not schedule.
   */
  #retryDue: { seq: number; nextAttemptAt: number; dueMonotonic: number } | undefined;
  #wake: (() => void) | undefined;

  constructor(config: EngineSink, deps: WorkerDeps) {
    this.sink = config.sink;
    this.#deps = deps;
    const own = Math.max(1, Math.floor(config.sink.maxBatch));
    this.#maxBatch = Math.max(1, Math.min(own, Math.floor(config.maxBatch ?? own)));
    this.#backoff = { ...DEFAULT_BACKOFF, ...config.backoff };
    this.#probeBackoff = { ...PAUSE_PROBE_BACKOFF, ...config.probeBackoff };
    this.#caps = config.caps;
    this.#deliveryTimeoutMs = config.deliveryTimeoutMs ?? 120_000;
  }

  get finished(): Promise<void> {
    return this.#finished;
  }

  /** This sink's pause, while its destination refuses everything. */
  get paused(): PausedSink | undefined {
    const pause = this.#pause;
    if (pause === undefined) return undefined;
    return { sink: this.sink.name, code: pause.code, message: pause.message, since: pause.since };
  }

  start(): void {
    this.#finished = this.#run().catch((error: unknown) => {
      this.#deps.logger.fatal(
        { err: describe(error) },
        'delivery worker crashed; records stay pending for the next start',
      );
    });
  }

  notify(): void {
    this.#notified = true;
    this.#wake?.();
  }

  requestStop(): void {
    this.#stopping = true;
    this.#wake?.();
  }

  abort(): void {
    this.#abort.abort(new Error('forwarder is shutting down'));
  }

  /** After stop(): a delivery that settles later changes nothing (its rows stay pending). */
  abandon(): void {
    this.#abandoned = true;
  }

  async #run(): Promise<void> {
    const { store, clock, logger } = this.#deps;
    while (!this.#stopping) {
      this.#notified = false;
      let rows: OutboxRow[];
      try {
        this.#enforceCaps();
        this.#enforceDeadLetterCaps();
        rows = store.pending(this.sink.name, this.#batchSize());
      } catch (error) {
        this.#storeError(error, 'reading the outbox');
        await this.#sleep(this.#deps.storeRetryMs, false);
        continue;
      }
      const head = rows[0];
      if (head === undefined) {
        this.#isolateThrough = 0;
        if (this.#hadWork) {
          this.#hadWork = false;
          store.compact();
          this.#deps.report({ type: 'drained', sink: this.sink.name });
        }
        this.#deps.report({ type: 'idle', sink: this.sink.name });
        // Nothing pending, so nothing can expire or be retried: sleep until a commit notifies (or the rescan).
        await this.#sleep(this.#deps.rescanIntervalMs, true);
        continue;
      }
      this.#hadWork = true;
      if (this.#isolateThrough > 0 && head.seq > this.#isolateThrough) {
        this.#isolateThrough = 0; // isolation done: back to full batches
        continue;
      }
      const retryInMs = this.#retryInMs(head);
      if (retryInMs > 0) {
        // Waiting for the retry; wake earlier when a row expires (caps.maxAgeMs), so it is dead-lettered on time.
        await this.#sleep(Math.min(retryInMs, this.#expiresAt(rows) - clock.now()), false);
        continue;
      }
      await this.#deliver(rows);
      await this.#awaitScheduledRetry(rows);
    }
    logger.debug('delivery worker stopped');
  }

  /**
   * After a failed attempt this worker knows when its head is due (#retryDue) and holds the rows it would read
   * again: it waits here, as the loop would after reading them, instead of checking the caps and reading (and
   * parsing) the whole batch once more only to learn that. On waking, the loop reads as always. During an outage
   * that halves the reads per attempt (a 100-record batch on a 10,000-row queue: about 2 ms of CPU each).
   */
  async #awaitScheduledRetry(rows: readonly OutboxRow[]): Promise<void> {
    const due = this.#retryDue;
    if (due === undefined) return;
    const waiting = rows.filter((r) => r.seq >= due.seq);
    if (waiting[0]?.seq !== due.seq) return; // not scheduled by this attempt
    const { clock } = this.#deps;
    const retryInMs = due.dueMonotonic - clock.monotonic();
    if (retryInMs <= 0) return;
    await this.#sleep(Math.min(retryInMs, this.#expiresAt(waiting) - clock.now()), false);
  }

  /**
   * How long until the head row may be retried (≤ 0: now), measured on the monotonic clock, so that a step of
   * the wall clock in either direction never delays a retry beyond its backoff. A retry this worker scheduled
   * is due its delay after it was scheduled. One it did not schedule (stored by an earlier run, whatever the
   * wall clock did since) is converted once, from the stored time, bounded by the longest delay a retry can
   * have (a stored time further out than that means the wall clock was stepped back).
   */
  #retryInMs(head: OutboxRow): number {
    const { clock } = this.#deps;
    const known = this.#retryDue;
    if (known !== undefined && known.seq === head.seq && known.nextAttemptAt === head.nextAttemptAt) {
      return known.dueMonotonic - clock.monotonic();
    }
    this.#retryDue = undefined;
    const remaining = Math.min(head.nextAttemptAt - clock.now(), this.#maxRetryDelayMs());
    if (remaining <= 0) return 0;
    this.#retryDue = {
      seq: head.seq,
      nextAttemptAt: head.nextAttemptAt,
      dueMonotonic: clock.monotonic() + remaining,
    };
    return remaining;
  }

  /** The longest delay a retry can have: the backoff cap, a capped Retry-After, or the probe backoff cap. */
  #maxRetryDelayMs(): number {
    return Math.max(this.#backoff.maxMs, MAX_RETRY_AFTER_MS, this.#probeBackoff.maxMs);
  }

  /**
   * The first instant at which one of `rows` is past caps.maxAgeMs (the store expires created_at < now − maxAge).
   * Rows are read in commit order and created_at is the commit (or replay) time, so the head rows are the oldest;
   * the min only guards against a wall clock stepped back between commits.
   */
  #expiresAt(rows: readonly OutboxRow[]): number {
    const maxAgeMs = this.#caps?.maxAgeMs;
    if (maxAgeMs === undefined) return Number.POSITIVE_INFINITY;
    return Math.min(...rows.map((r) => r.createdAt)) + maxAgeMs + 1;
  }

  #batchSize(): number {
    return this.#isolateThrough > 0 || this.#pause !== undefined ? 1 : this.#maxBatch;
  }

  #enforceCaps(): void {
    if (this.#caps === undefined) return;
    const moved = this.#deps.store.enforceCapsByReason(this.sink.name, this.#caps, this.#deps.clock.now());
    if (moved.overflow + moved.expired > 0) this.#deadLettersToCheck = true;
    if (moved.overflow > 0)
      this.#deps.report({
        type: 'deadLettered',
        sink: this.sink.name,
        count: moved.overflow,
        reason: 'overflow',
      });
    if (moved.expired > 0)
      this.#deps.report({
        type: 'deadLettered',
        sink: this.sink.name,
        count: moved.expired,
        reason: 'expired',
      });
  }

  /**
   * Beyond the dead-letter caps, the oldest dead letters are dropped for good (docs/delivery.md, "Dead-letter
   * cap"): loudly, at error level, and as an event (sef_dead_letters_dropped_total). Only checked when this worker
   * made dead letters since the last check (and once at start), and the check reads an index only.
   */
  #enforceDeadLetterCaps(): void {
    if (!this.#deadLettersToCheck) return;
    const caps = this.#caps;
    if (caps?.maxDeadLetterRows === undefined && caps?.maxDeadLetterBytes === undefined) {
      this.#deadLettersToCheck = false;
      return;
    }
    const dropped = this.#deps.store.enforceDeadLetterCaps(this.sink.name, caps);
    this.#deadLettersToCheck = false;
    if (dropped.rows === 0) return;
    const { maxDeadLetterRows, maxDeadLetterBytes } = caps;
    this.#deps.logger.error(
      { droppedRows: dropped.rows, droppedBytes: dropped.bytes, maxDeadLetterRows, maxDeadLetterBytes },
      `dead letters over the sink's caps: dropped the ${dropped.rows} oldest (${dropped.bytes} bytes) for good; ` +
        'they can no longer be replayed. Fix what the sink rejects and replay its dead letters ' +
        '(`deadletters list`, `deadletters replay`), or raise delivery.caps.maxDeadLetterRows / maxDeadLetterBytes',
    );
    this.#deps.report({
      type: 'deadLettersDropped',
      sink: this.sink.name,
      count: dropped.rows,
      bytes: dropped.bytes,
    });
  }

  async #deliver(rows: OutboxRow[]): Promise<void> {
    const { clock } = this.#deps;
    const timeout = new AbortController();
    const timer = clock.setTimeout(
      () => timeout.abort(new Error(`delivery did not settle within ${this.#deliveryTimeoutMs} ms`)),
      Math.min(this.#deliveryTimeoutMs, MAX_TIMER_MS),
    );
    const signal = AbortSignal.any([this.#abort.signal, timeout.signal]);
    let failure: { error: unknown } | undefined;
    try {
      await this.sink.deliver(
        rows.map((r) => r.record),
        signal,
      );
    } catch (error) {
      failure = {
        error: timeout.signal.aborted && !this.#abort.signal.aborted ? timeout.signal.reason : error,
      };
    } finally {
      clock.clearTimeout(timer);
    }
    if (this.#abandoned) return;
    if (failure === undefined) {
      await this.#acknowledge(rows);
      return;
    }
    if (this.#abort.signal.aborted) return; // shutdown: rows stay pending, attempts unchanged
    await this.#handleFailure(rows, failure.error);
  }

  async #acknowledge(rows: OutboxRow[]): Promise<void> {
    if (rows.length === 0) return;
    const ok = await this.#storeWrite('acknowledging delivered rows', () =>
      this.#deps.store.ack(
        this.sink.name,
        rows.map((r) => r.seq),
      ),
    );
    if (!ok) return;
    const now = this.#deps.clock.now();
    if (this.#pause !== undefined) this.#resume(now);
    else this.#logRecovery(rows[0] as OutboxRow, now);
    this.#loggedCauses.clear();
    this.#deps.report({
      type: 'delivered',
      sink: this.sink.name,
      count: rows.length,
      latenciesMs: rows.map((r) => now - r.createdAt),
      recordIds: rows.map((r) => r.recordId),
    });
  }

  /**
   * After failed attempts, the first successful delivery logs one info line: how many attempts failed and for
   * how long. Attempts come from the row (persisted, so they survive a restart); the duration from this
   * worker's memory, else from the row's commit time (the record waited at least that long).
   */
  #logRecovery(head: OutboxRow, now: number): void {
    const failing = this.#failing;
    this.#failing = undefined;
    if (failing === undefined && head.attempts === 0) return;
    const attempts = Math.max(failing?.attempts ?? 0, head.attempts);
    const failingForMs = Math.max(0, now - (failing?.sinceMs ?? head.createdAt));
    this.#deps.logger.info(
      { attempts, failingForMs },
      `sink recovered: delivered after ${attempts} failed attempt${attempts === 1 ? '' : 's'} over ${formatDurationMs(failingForMs)}`,
    );
  }

  /**
   * The destination accepts again (a delivery, or an answer about one record): one info line saying for how
   * long it was paused, the 'resumed' event, and full batches from now on.
   */
  #resume(now: number): void {
    const pause = this.#pause;
    if (pause === undefined) return;
    this.#pause = undefined;
    this.#failing = undefined;
    const pausedForMs = Math.max(0, now - pause.since);
    this.#deps.logger.info(
      { code: pause.code, pausedForMs, probes: pause.probes },
      `sink resumed: the destination accepts records again after ${formatDurationMs(pausedForMs)} paused (${pause.code})`,
    );
    this.#deps.report({ type: 'resumed', sink: this.sink.name, code: pause.code, pausedForMs });
  }

  async #handleFailure(rows: OutboxRow[], error: unknown): Promise<void> {
    const { logger, clock } = this.#deps;
    const head = rows[0] as OutboxRow;
    const code = error instanceof DeliveryError ? error.code : 'error';
    const message = describe(error);
    if (error instanceof DeliveryError && error.scope === 'destination') {
      await this.#pauseOn(rows, error, message);
      return;
    }
    if (error instanceof DeliveryError && !error.retryable) {
      // An answer about one record: the destination takes requests again.
      this.#resume(clock.now());
      const index = error.failedIndex;
      if (index !== undefined && Number.isInteger(index) && index >= 0 && index < rows.length) {
        await this.#acknowledge(rows.slice(0, index));
        await this.#deadLetter([rows[index] as OutboxRow], code, message);
      } else if (rows.length === 1) {
        await this.#deadLetter(rows, code, message);
      } else {
        this.#isolateThrough = (rows[rows.length - 1] as OutboxRow).seq;
        logger.warn(
          { code, batch: rows.length },
          'permanent failure for a batch without the failing index: re-delivering one record at a time to isolate it',
        );
      }
      return;
    }
    const attempts = head.attempts + 1;
    const retryAfterMs = error instanceof DeliveryError ? error.retryAfterMs : undefined;
    // A paused sink stays paused through a retryable failure (it proves nothing): its probes keep their pace.
    const delayMs =
      this.#pause !== undefined
        ? Math.max(this.#probeDelayMs(++this.#pause.probes), retryAfterMs ?? 0)
        : retryDelayMs(attempts, this.#backoff, this.#deps.random, retryAfterMs);
    const nextAttemptAt = clock.now() + delayMs;
    const ok = await this.#storeWrite('recording a failed attempt', () =>
      this.#deps.store.recordFailure(
        this.sink.name,
        rows.map((r) => r.seq),
        { attempts, nextAttemptAt, error: `${code}: ${message}` },
      ),
    );
    if (!ok) return;
    this.#retryDue = { seq: head.seq, nextAttemptAt, dueMonotonic: clock.monotonic() + delayMs };
    this.#failing = { attempts, sinceMs: this.#failing?.sinceMs ?? clock.now() };
    logger.warn(
      { code, attempts, delayMs, pendingInBatch: rows.length, err: message },
      'delivery failed; will retry',
    );
    this.#deps.report({ type: 'retry', sink: this.sink.name, attempts, delayMs, code, message });
  }

  /** Delay before probe number `probe` of a paused sink (1 = the first probe after the pause began). */
  #probeDelayMs(probe: number): number {
    return equalJitterBackoffMs(probe, this.#probeBackoff, this.#deps.random);
  }

  /**
   * The destination refuses everything: acknowledge what it confirmed before the refusal (failedIndex), keep
   * the rest pending (the head row carries the attempt: its count, the next probe time, the error) and pause (or stay paused): the next attempt, one record, is a probe on the probe backoff.
   * The cause and its fix are logged at error level once per distinct code until a delivery succeeds.
   */
  async #pauseOn(rows: OutboxRow[], error: DeliveryError, message: string): Promise<void> {
    const { clock, logger } = this.#deps;
    const index = error.failedIndex;
    let rest = rows;
    if (index !== undefined && Number.isInteger(index) && index > 0 && index < rows.length) {
      await this.#acknowledge(rows.slice(0, index));
      rest = rows.slice(index);
    }
    const now = clock.now();
    const pause = this.#pause ?? { code: error.code, message, since: now, probes: 0 };
    pause.code = error.code;
    pause.message = message;
    pause.probes += 1;
    this.#pause = pause;
    const head = rest[0] as OutboxRow;
    const delayMs = this.#probeDelayMs(pause.probes);
    const nextAttemptAt = now + delayMs;
    // On the head row only: the probe is that one record (the rows behind it were not refused themselves).
    const ok = await this.#storeWrite('recording a refused attempt', () =>
      this.#deps.store.recordFailure(this.sink.name, [head.seq], {
        attempts: head.attempts + 1,
        nextAttemptAt,
        error: `${error.code}: ${message}`,
      }),
    );
    if (!ok) return;
    this.#retryDue = { seq: head.seq, nextAttemptAt, dueMonotonic: clock.monotonic() + delayMs };
    this.#failing = { attempts: head.attempts + 1, sinceMs: this.#failing?.sinceMs ?? now };
    const fields = { code: error.code, probes: pause.probes, probeInMs: delayMs };
    if (!this.#loggedCauses.has(error.code)) {
      this.#loggedCauses.add(error.code);
      logger.error(
        fields,
        `sink paused: the destination refuses every record (${message}); its records stay pending and one record ` +
          `probes the destination (next in ${formatDurationMs(delayMs)}, backing off to ` +
          `${formatDurationMs(this.#probeBackoff.maxMs)}) until it accepts again; nothing is dead-lettered for this`,
      );
    } else {
      logger.debug(
        { ...fields, err: message },
        'sink still paused: the probe was refused for the same cause',
      );
    }
    this.#deps.report({
      type: 'paused',
      sink: this.sink.name,
      code: error.code,
      message,
      since: pause.since,
      probes: pause.probes,
      probeInMs: delayMs,
    });
  }

  async #deadLetter(rows: OutboxRow[], code: string, message: string): Promise<void> {
    const ok = await this.#storeWrite('moving a record to dead letters', () =>
      this.#deps.store.deadLetter(
        this.sink.name,
        rows.map((r) => r.seq),
        { reason: 'permanent', error: `${code}: ${message}` },
      ),
    );
    if (!ok) return;
    this.#deadLettersToCheck = true;
    this.#deps.logger.error(
      { code, recordIds: rows.map((r) => r.recordId), err: message },
      'permanent delivery failure: record moved to dead letters (see `deadletters list`)',
    );
    this.#deps.report({
      type: 'deadLettered',
      sink: this.sink.name,
      count: rows.length,
      reason: 'permanent',
      code,
    });
  }

  /** Retry a store write until it succeeds or the worker stops; false if it never succeeded. */
  async #storeWrite(what: string, write: () => void): Promise<boolean> {
    for (;;) {
      try {
        write();
        return true;
      } catch (error) {
        this.#storeError(error, what);
        if (this.#stopping || this.#abandoned) return false;
        await this.#sleep(this.#deps.storeRetryMs, false);
      }
    }
  }

  #storeError(error: unknown, what: string): void {
    const full = error instanceof StoreWriteError && error.full;
    this.#deps.logger.error({ err: describe(error), full }, `store error while ${what}; retrying`);
    this.#deps.report({ type: 'storeError', sink: this.sink.name, full, message: describe(error) });
  }

  /**
   * Sleep on the injected clock; woken early by stop() and, when `wakeOnNotify`, by notify(). An infinite `ms`
   * sets no timer at all (only a wake-up ends the sleep).
   */
  #sleep(ms: number, wakeOnNotify: boolean): Promise<void> {
    if (this.#stopping || (wakeOnNotify && this.#notified)) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: unknown;
      const done = (): void => {
        if (timer !== undefined) this.#deps.clock.clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      if (ms !== Number.POSITIVE_INFINITY)
        timer = this.#deps.clock.setTimeout(done, Math.max(0, Math.min(ms, MAX_TIMER_MS)));
      this.#wake = wakeOnNotify
        ? done
        : () => {
            if (this.#stopping) done();
          };
    });
  }
}

/** The error's message, redacted: it is logged, stored in the outbox and shown by the CLI and /readyz. */
function describe(error: unknown): string {
  return redactedMessage(error);
}

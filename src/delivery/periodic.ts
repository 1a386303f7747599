/**
 * Periodic, state-derived sends to a sink that are NOT outbox rows: the one mechanism for what the forwarder
 * re-derives from its current state and sends again and again (heartbeats, docs/record-format.md; the
 * Alertmanager re-sends of pending alerts). Each send builds its payload from the state at the moment it runs,
 * so the latest always wins:
 *
 * - at most one send per (kind, sink) is in flight; an interval tick that finds one in flight is skipped;
 * - a failed send is neither retried nor queued: the next tick builds again from the newer state;
 * - nothing is written to disk (no outbox row, no dead letter), so an idle forwarder still writes nothing;
 * - a failure logs a warning once per distinct code per (kind, sink), then at debug level; the first success
 *   after failures logs one info line; every outcome goes to the observer (metrics).
 *
 * Timers run on the injected Clock (tests drive it with test/support/fake-clock.ts). The pipeline builds ONE
 * PeriodicSender from every feature's sends, starts it after the delivery engine and stops it before the engine
 * closes the sinks, so that the sends made at a clean stop go out while the sinks are still open.
 */
import { type Clock, systemClock } from '../clock.ts';
import { childLogger, type Logger } from '../log.ts';
import { redactedMessage } from '../redact.ts';
import { DeliveryError } from '../sinks/types.ts';

/** Why a send runs: the start, its interval, or a clean stop. */
export type PeriodicTrigger = 'start' | 'interval' | 'stop';

/** One periodic send to one sink. */
export interface PeriodicSend {
  /** What is sent (logs, events): e.g. 'heartbeat'. */
  readonly kind: string;
  /** The sink's name. */
  readonly sink: string;
  /** Time between two sends (the first interval runs from start()). */
  readonly intervalMs: number;
  /** Also send once when started. Default false. */
  readonly atStart?: boolean;
  /** Also send once at a clean stop, within the stop deadline. Default false. */
  readonly atStop?: boolean;
  /**
   * Builds what the state says now and sends it straight to the sink; resolves when the sink accepted it,
   * rejects (DeliveryError, or any error) when it did not. Must honour the signal.
   */
  send(trigger: PeriodicTrigger, signal: AbortSignal): Promise<void>;
}

/** What the sender reports of each send. */
export type PeriodicSendEvent =
  | { type: 'periodicSent'; kind: string; sink: string; trigger: PeriodicTrigger }
  | {
      type: 'periodicFailed';
      kind: string;
      sink: string;
      trigger: PeriodicTrigger;
      /** DeliveryError.code, or 'error'. */
      code: string;
      message: string;
    };

export interface PeriodicSenderOptions {
  sends: readonly PeriodicSend[];
  logger: Logger;
  clock?: Clock;
  /** Receives every outcome, synchronously; a throw is ignored. */
  observer?: (event: PeriodicSendEvent) => void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs every configured periodic send; see the module comment. */
export class PeriodicSender {
  #slots: Slot[] = [];
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #observer: ((event: PeriodicSendEvent) => void) | undefined;
  #started = false;
  #stopped: Promise<void> | undefined;

  constructor(options: PeriodicSenderOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
    this.#observer = options.observer;
    this.add(options.sends);
  }

  /**
   * Adds sends (the sinks a reload leaves running): started at once when the sender runs (their atStart send
   * made with `trigger`, 'start' by default), else with start(). Ignored once stopping.
   */
  add(sends: readonly PeriodicSend[], options: { trigger?: PeriodicTrigger } = {}): void {
    if (this.#stopped !== undefined) return;
    const trigger = options.trigger ?? 'start';
    const slots = sends.map(
      (send) =>
        new Slot(send, {
          clock: this.#clock,
          logger: childLogger(this.#logger, { component: 'periodic', kind: send.kind, sink: send.sink }),
          report: (event) => {
            try {
              this.#observer?.(event);
            } catch {
              // a faulty observer must never break sending
            }
          },
        }),
    );
    this.#slots.push(...slots);
    if (this.#started) for (const slot of slots) slot.start(trigger);
  }

  /**
   * Removes every send to `sink` (a sink a reload removes or rebuilds: call it before the sink is closed): no
   * more sends, the one in flight is aborted; resolves once it has ended. No stop-send is made.
   */
  async remove(sink: string): Promise<void> {
    await this.#removeWhere((s) => s.send.sink === sink);
  }

  /** Removes every send (a reload before it changes the sinks), as remove() does. */
  async removeAll(): Promise<void> {
    await this.#removeWhere(() => true);
  }

  async #removeWhere(removing: (slot: Slot) => boolean): Promise<void> {
    const removed = this.#slots.filter(removing);
    this.#slots = this.#slots.filter((s) => !removing(s));
    for (const slot of removed) slot.halt();
    await Promise.all(removed.map((slot) => slot.idle));
  }

  /** The sends' kinds and sinks, for logs. */
  get sends(): Array<{ kind: string; sink: string; intervalMs: number }> {
    return this.#slots.map((s) => ({ kind: s.send.kind, sink: s.send.sink, intervalMs: s.send.intervalMs }));
  }

  /** Sends the atStart sends at once, then each every intervalMs. */
  start(): void {
    if (this.#started || this.#stopped !== undefined) return;
    this.#started = true;
    for (const slot of this.#slots) slot.start();
  }

  /** An extra send now of every send of `kind` (all when undefined); skipped where one is in flight. */
  sendNow(kind?: string): void {
    if (!this.#started || this.#stopped !== undefined) return;
    for (const slot of this.#slots) if (kind === undefined || slot.send.kind === kind) slot.run('interval');
  }

  /**
   * Stops: no more interval sends; in-flight ones are aborted; then the atStop sends run, together, each given
   * what is left of `deadlineMs` (aborted after it). Resolves when they have settled. A second call returns the
   * same promise.
   */
  stop(deadlineMs: number): Promise<void> {
    this.#stopped ??= this.#stop(deadlineMs);
    return this.#stopped;
  }

  async #stop(deadlineMs: number): Promise<void> {
    for (const slot of this.#slots) slot.halt();
    if (!this.#started) return;
    const deadline = new AbortController();
    const passed = new Promise<void>((resolve) => {
      deadline.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    const timer = this.#clock.setTimeout(
      () => deadline.abort(new Error(`the stop deadline (${deadlineMs} ms) passed`)),
      Math.min(Math.max(0, deadlineMs), MAX_TIMER_MS),
    );
    try {
      // The aborted interval sends end first (a sink honours its signal), so a stop-send never overlaps one.
      await Promise.race([Promise.all(this.#slots.map((slot) => slot.idle)), passed]);
      await Promise.race([
        Promise.all(this.#slots.filter((s) => s.send.atStop === true).map((s) => s.final(deadline.signal))),
        passed,
      ]);
    } finally {
      this.#clock.clearTimeout(timer);
    }
  }
}

interface SlotDeps {
  clock: Clock;
  logger: Logger;
  report(event: PeriodicSendEvent): void;
}

/** One (kind, sink): its timer, the send in flight, and what was logged of its failures. */
class Slot {
  readonly send: PeriodicSend;
  readonly #deps: SlotDeps;
  #timer: unknown;
  #inFlight: { promise: Promise<void>; abort: AbortController } | undefined;
  #halted = false;
  /** Codes of failures already logged at warn level since the last success. */
  #warned = new Set<string>();
  #failures = 0;

  constructor(send: PeriodicSend, deps: SlotDeps) {
    this.send = send;
    this.#deps = deps;
  }

  /** Settles when no send is in flight. */
  get idle(): Promise<void> {
    return this.#inFlight?.promise ?? Promise.resolve();
  }

  start(trigger: PeriodicTrigger = 'start'): void {
    if (this.send.atStart === true) this.run(trigger);
    this.#schedule();
  }

  /** Starts a send unless one is in flight (latest wins: the one in flight carries recent state). */
  run(trigger: PeriodicTrigger): void {
    if (this.#halted || this.#inFlight !== undefined) return;
    const abort = new AbortController();
    const promise = this.#attempt(trigger, abort.signal).finally(() => {
      this.#inFlight = undefined;
    });
    this.#inFlight = { promise, abort };
  }

  /** No more interval sends; the one in flight is aborted. */
  halt(): void {
    this.#halted = true;
    if (this.#timer !== undefined) this.#deps.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#inFlight?.abort.abort(new Error('the forwarder is stopping'));
  }

  /** The send at a clean stop (after halt()); none while an aborted send has not ended yet. */
  final(signal: AbortSignal): Promise<void> {
    if (this.#inFlight !== undefined) return Promise.resolve();
    return this.#attempt('stop', signal);
  }

  #schedule(): void {
    if (this.#halted) return;
    const ms = Math.min(Math.max(1, this.send.intervalMs), MAX_TIMER_MS);
    this.#timer = this.#deps.clock.setTimeout(() => {
      this.#timer = undefined;
      this.run('interval');
      this.#schedule();
    }, ms);
  }

  async #attempt(trigger: PeriodicTrigger, signal: AbortSignal): Promise<void> {
    const { kind, sink } = this.send;
    try {
      await this.send.send(trigger, signal);
    } catch (error) {
      if (this.#halted && trigger !== 'stop') return; // aborted by the stop: nothing to say
      this.#failed(trigger, error);
      return;
    }
    if (this.#failures > 0)
      this.#deps.logger.info(
        { failures: this.#failures },
        `${kind} reached sink ${sink} again after ${this.#failures} failed send${this.#failures === 1 ? '' : 's'}`,
      );
    this.#failures = 0;
    this.#warned.clear();
    this.#deps.report({ type: 'periodicSent', kind, sink, trigger });
  }

  #failed(trigger: PeriodicTrigger, error: unknown): void {
    const { kind, sink } = this.send;
    const code = error instanceof DeliveryError ? error.code : 'error';
    const message = redactedMessage(error);
    this.#failures++;
    const fields = { code, trigger, err: message };
    const text = `${kind} not delivered to sink ${sink}; the next one replaces it (not retried, never queued)`;
    if (this.#warned.has(code)) this.#deps.logger.debug(fields, text);
    else {
      this.#warned.add(code);
      this.#deps.logger.warn(fields, text);
    }
    this.#deps.report({ type: 'periodicFailed', kind, sink, trigger, code, message });
  }
}

/**
 * Visibility on the Node: a Kubernetes Event for each lifecycle transition of an event affecting this VM (the
 * `approved` record's Event says what really happened: src/kubernetes/node-actions.ts recordEvent), for each node
 * action (through `report`), and the node condition VMEventScheduled — True while such an event is Scheduled or
 * Started, False after — patched on nodes/status only when it changes, its lastTransitionTime only when its status
 * does. Writes are queued one at a time and never block the pipeline; a write that fails for want of an answer
 * (no answer, 429, 5xx) is tried again with backoff, at most WRITE_ATTEMPTS times, as the kubelet's event recorder
 * does; other failures are logged (an RBAC denial names the verb, resource and fix, once).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommitObserver, CommittedStep } from '../approval/index.ts';
import type { VmIdentity } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { affectsVm } from '../transform/index.ts';
import type { NodeApi } from './client.ts';
import { CONDITION_TYPE, type KubernetesConfig } from './config.ts';
import { conditionPatch, type EventFacts, nodeEvent, recordEvent } from './node-actions.ts';

/** Attempts of one write (the first and the retries). */
export const WRITE_ATTEMPTS = 5;
/** The wait before the first retry; it doubles for each further one, up to WRITE_RETRY_MAX_MS. */
export const WRITE_RETRY_FIRST_MS = 500;
export const WRITE_RETRY_MAX_MS = 8000;
/** Each write attempt gives up after this long (or `kubernetes.requestTimeoutMs`, if shorter). */
export const WRITE_TIMEOUT_MS = 10_000;
/** At stop, the queued writes get this long to finish; then they are abandoned. */
export const STOP_WAIT_MS = 5000;

export interface ReporterOptions {
  api: () => Promise<NodeApi>;
  nodeName: string;
  config: KubernetesConfig;
  logger: Logger;
  vmName: () => string | undefined;
  now?: () => number;
  /** Tests: the waits between retries (default WRITE_RETRY_FIRST_MS doubling up to WRITE_RETRY_MAX_MS). */
  retryDelayMs?: (retry: number) => number;
}

export class NodeReporter implements CommitObserver {
  readonly #o: ReporterOptions;
  readonly #now: () => number;
  readonly #stop = new AbortController();
  #queue: Promise<void> = Promise.resolve();
  #condition: string | undefined;
  #sequence = 0;
  readonly #loggedErrors = new Set<string>();

  constructor(options: ReporterOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** A node Event (the node hook's actions, approval notices). */
  report(reason: string, message: string, type: 'Normal' | 'Warning'): void {
    if (!this.#o.config.events) return;
    const suffix = `${this.#now().toString(36)}.${(++this.#sequence).toString(36)}.${reason}`;
    this.#enqueue(`create event ${reason}`, (api, signal) =>
      api.createEvent(this.#o.config.eventNamespace, this.#event(reason, message, type, suffix), signal),
    );
  }

  observe(step: CommittedStep): void {
    const vm = this.#o.vmName();
    if (this.#o.config.events) {
      for (const record of step.records) {
        if (!record.data.affectsThisVm) continue;
        const { reason, type, message } = recordEvent(record);
        // The record id is unique per transition: a repeated create (409) is the same Event.
        this.#enqueue(`create event ${reason}`, (api, signal) =>
          api.createEvent(
            this.#o.config.eventNamespace,
            this.#event(reason, message, type, record.id),
            signal,
          ),
        );
      }
    }
    if (this.#o.config.condition && vm !== undefined) {
      const pending: EventFacts[] = step.state.events
        .filter((e) => ['scheduled', 'started'].includes(e.last.EventStatus.toLowerCase()))
        .filter((e) => affectsVm(e.last.Resources, { name: vm } as VmIdentity))
        .map((e) => ({ eventId: e.eventId, eventType: e.last.EventType, notBefore: e.last.notBeforeUtc }));
      const key = JSON.stringify(pending);
      if (key !== this.#condition) {
        this.#condition = key;
        this.#enqueue(
          'patch nodes/status',
          async (api, signal) => {
            // The condition's status on the node now decides whether lastTransitionTime moves.
            const node = await api.readNode(this.#o.nodeName, signal);
            const current = node.conditions?.find((c) => c.type === CONDITION_TYPE)?.status;
            const nowIso = new Date(this.#now()).toISOString();
            await api.patchNodeStatus(this.#o.nodeName, conditionPatch(pending, nowIso, current), signal);
          },
          () => {
            this.#condition = undefined; // try again on the next commit
          },
        );
      }
    }
  }

  /** Waits for the queued writes (at most STOP_WAIT_MS; then what is left is abandoned). */
  async stop(): Promise<void> {
    const timer = setTimeout(() => this.#stop.abort(), STOP_WAIT_MS);
    try {
      await this.#queue;
    } finally {
      clearTimeout(timer);
      this.#stop.abort();
    }
  }

  #event(reason: string, message: string, type: 'Normal' | 'Warning', suffix: string) {
    return nodeEvent({
      node: this.#o.nodeName,
      namespace: this.#o.config.eventNamespace,
      reason,
      message,
      type,
      nowIso: new Date(this.#now()).toISOString(),
      suffix,
    });
  }

  #enqueue(
    what: string,
    write: (api: NodeApi, signal: AbortSignal) => Promise<unknown>,
    onError?: () => void,
  ): void {
    this.#queue = this.#queue.then(async () => {
      if (this.#stop.signal.aborted) return;
      for (let attempt = 1; ; attempt++) {
        const signal = AbortSignal.any([
          this.#stop.signal,
          AbortSignal.timeout(Math.min(WRITE_TIMEOUT_MS, this.#o.config.requestTimeoutMs)),
        ]);
        try {
          await write(await this.#o.api(), signal);
          return;
        } catch (error) {
          const status = (error as { status?: number }).status;
          if (status === 409) return; // the same Event again (an attempt that got through, a restart)
          const retry = (status === 0 || status === 429 || (status ?? 0) >= 500) && attempt < WRITE_ATTEMPTS;
          if (retry && !this.#stop.signal.aborted) {
            await sleep(this.#retryDelay(attempt), undefined, { signal: this.#stop.signal }).catch(() => {});
            if (!this.#stop.signal.aborted) continue;
          }
          onError?.();
          this.#logFailure(what, error, attempt);
          return;
        }
      }
    });
  }

  #retryDelay(retry: number): number {
    return (
      this.#o.retryDelayMs?.(retry) ?? Math.min(WRITE_RETRY_MAX_MS, WRITE_RETRY_FIRST_MS * 2 ** (retry - 1))
    );
  }

  #logFailure(what: string, error: unknown, attempts: number): void {
    const message = errorMessage(error);
    const status = (error as { status?: number }).status;
    if (this.#loggedErrors.has(message)) return;
    this.#loggedErrors.add(message);
    this.#o.logger[status === 403 ? 'error' : 'warn'](
      { err: message, what, attempts },
      attempts > 1 ? `Kubernetes write failed after ${attempts} attempts` : 'Kubernetes write failed',
    );
  }
}

/**
 * Visibility on the Node: a Kubernetes Event for each lifecycle transition of an event affecting this VM (and for
 * each node action, through `report`), and the node condition VMEventScheduled — True while such an event is
 * Scheduled or Started, False after — patched on nodes/status only when it changes. Writes are queued one at a
 * time and never block the pipeline; failures are logged (an RBAC denial names the verb, resource and fix once).
 */
import type { CommitObserver, CommittedStep } from '../approval/index.ts';
import type { VmIdentity } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import { affectsVm } from '../transform/index.ts';
import type { NodeApi } from './client.ts';
import type { KubernetesConfig } from './config.ts';
import {
  conditionPatch,
  type EventFacts,
  eventMessage,
  nodeEvent,
  TRANSITION_REASONS,
} from './node-actions.ts';

export interface ReporterOptions {
  api: () => Promise<NodeApi>;
  nodeName: string;
  config: KubernetesConfig;
  logger: Logger;
  vmName: () => string | undefined;
  now?: () => number;
}

export class NodeReporter implements CommitObserver {
  readonly #o: ReporterOptions;
  readonly #now: () => number;
  #queue: Promise<void> = Promise.resolve();
  #condition: string | undefined;
  #sequence = 0;
  readonly #loggedErrors = new Set<string>();

  constructor(options: ReporterOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** A node Event (action events of the node hook). */
  report(reason: string, message: string, type: 'Normal' | 'Warning'): void {
    if (!this.#o.config.events) return;
    const suffix = `${this.#now().toString(36)}.${(++this.#sequence).toString(36)}.${reason}`;
    this.#enqueue(`create event ${reason}`, (api) =>
      api.createEvent(this.#o.config.eventNamespace, this.#event(reason, message, type, suffix)),
    );
  }

  observe(step: CommittedStep): void {
    const vm = this.#o.vmName();
    if (this.#o.config.events) {
      for (const record of step.records) {
        if (!record.data.affectsThisVm) continue;
        const reason = TRANSITION_REASONS[record.transition] ?? 'VMEvent';
        const facts: EventFacts = {
          eventId: record.data.EventId,
          eventType: record.data.EventType,
          notBefore: record.data.notBeforeUtc,
        };
        const type =
          record.transition === 'scheduled' || record.transition === 'started' ? 'Warning' : 'Normal';
        const message = eventMessage(`Scheduled event ${record.transition}`, facts);
        // The record id is unique per transition: a repeated create (409) is the same Event.
        this.#enqueue(`create event ${reason}`, (api) =>
          api.createEvent(this.#o.config.eventNamespace, this.#event(reason, message, type, record.id)),
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
        const patch = conditionPatch(pending, new Date(this.#now()).toISOString());
        this.#enqueue(
          'patch nodes/status',
          (api) => api.patchNodeStatus(this.#o.nodeName, patch),
          () => {
            this.#condition = undefined; // try again on the next commit
          },
        );
      }
    }
  }

  /** Waits for the queued writes. */
  async stop(): Promise<void> {
    await this.#queue;
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

  #enqueue(what: string, write: (api: NodeApi) => Promise<void>, onError?: () => void): void {
    this.#queue = this.#queue.then(async () => {
      try {
        await write(await this.#o.api());
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 409) return; // the same Event again (after a restart)
        onError?.();
        const message = (error as Error).message;
        const level = status === 403 ? 'error' : 'warn';
        if (this.#loggedErrors.has(message)) return;
        this.#loggedErrors.add(message);
        this.#o.logger[level]({ err: message, what }, 'Kubernetes write failed');
      }
    });
  }
}

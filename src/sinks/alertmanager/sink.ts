/**
 * The `alertmanager` sink: each batch of records becomes one JSON array of alerts (mapping.ts), POSTed to
 * `/api/v2/alerts` of every configured Alertmanager at once, each through its own HttpTransport (proxy rule,
 * timeout, TLS, response classification). Alertmanagers of an HA cluster do not share alerts by gossip, so every
 * peer receives every batch, like Prometheus sends to all. `acknowledgeWhen` says how many must accept it.
 *
 * Alertmanager keeps alerts in memory only, so the sink sends the firing alert of every pending event again
 * every `resendIntervalSeconds` (refreshPending, driven by the pipeline from the committed state), with an
 * endsAt `endsAtIntervals` intervals ahead, as Prometheus does: a restarted Alertmanager has them back within
 * one interval, and alerts of a forwarder that stopped expire. Deliveries and re-sends take turns (one lane):
 * a re-send built while an event was pending never reaches an Alertmanager after the record that resolves it.
 *
 * An Alertmanager stores the valid alerts of a request and answers 400 for the rest without saying which one
 * failed: the sink leaves failedIndex unset and the engine isolates the record one at a time (re-sending an
 * alert Alertmanager already has only refreshes it: same labels, same alert).
 */
import { type Clock, systemClock } from '../../clock.ts';
import type { LifecycleRecord } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import { abortedError, closedError } from '../delivery-errors.ts';
import { type HttpSinkDeps, type HttpTransport, httpSinkTransport } from '../http/transport.ts';
import { DeliveryError, type RefreshPending, type Sink, type SinkContext } from '../types.ts';
import { type AlertMapping, toAlert } from './mapping.ts';
import { ALERTS_PATH, type AlertmanagerOptions } from './options.ts';

/** One configured Alertmanager: its transport (URL without credentials) and its Authorization header. */
interface Peer {
  transport: HttpTransport;
  authorization: string | undefined;
}

/**
 * The alerts URL of a base URL, and the basic-auth credentials it carried (undici does not send URL
 * credentials: they become an Authorization header).
 */
export function alertsEndpoint(base: URL): { url: URL; basicAuth: string | undefined } {
  const url = new URL(base.href);
  const basicAuth =
    url.username === '' && url.password === ''
      ? undefined
      : Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString(
          'base64',
        );
  url.username = '';
  url.password = '';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${ALERTS_PATH}`;
  return { url, basicAuth };
}

/** Alertmanager answers a 400 with its validation errors as a JSON string: the text without the quotes. */
export function alertmanagerErrorText(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Combines the outcome of every peer into the batch's outcome (null: delivered). `any`: delivered when one
 * peer accepted; failed permanently only when every peer failed permanently, and then for the destination when
 * one peer refused as a destination (credentials, a wrong URL, TLS: fixing that peer delivers the batch), else
 * for the record. `all`: delivered when every peer accepted; failed permanently when one failed permanently (that
 * peer will never accept the batch): for the record when one peer refused the record, else for the
 * destination. Otherwise retryable, with the server-requested delay: the shortest under `any`, the longest under
 * `all`.
 */
export function combinePeerOutcomes(
  failures: readonly (DeliveryError | undefined)[],
  acknowledgeWhen: 'any' | 'all',
  where: string,
): DeliveryError | null {
  const failed = failures.filter((f): f is DeliveryError => f !== undefined);
  if (failed.length === 0) return null;
  if (acknowledgeWhen === 'any' && failed.length < failures.length) return null;
  const detail = failed.map((f) => f.message).join('; ');
  const permanent =
    acknowledgeWhen === 'any' ? failed.every((f) => !f.retryable) : failed.some((f) => !f.retryable);
  const summary =
    acknowledgeWhen === 'any'
      ? `no Alertmanager accepted the alerts (${failed.length} of ${failures.length} failed)`
      : `${failed.length} of ${failures.length} Alertmanagers did not accept the alerts (acknowledgeWhen: all)`;
  if (permanent) {
    const refusals = failed.filter((f) => !f.retryable);
    const destination =
      acknowledgeWhen === 'any'
        ? refusals.some((f) => f.scope === 'destination')
        : refusals.every((f) => f.scope === 'destination');
    const decisive = refusals.find((f) => (f.scope === 'destination') === destination)!;
    return new DeliveryError(`${where}: ${summary}: ${detail}`, {
      retryable: false,
      code: decisive.code,
      scope: destination ? 'destination' : 'record',
    });
  }
  const retryable = failed.filter((f) => f.retryable);
  const delays = retryable.map((f) => f.retryAfterMs).filter((d): d is number => d !== undefined);
  const retryAfterMs =
    delays.length === 0 ? undefined : acknowledgeWhen === 'any' ? Math.min(...delays) : Math.max(...delays);
  return new DeliveryError(`${where}: ${summary}: ${detail}`, {
    retryable: true,
    code: retryable[0]!.code,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

export class AlertmanagerSink implements Sink {
  readonly name: string;
  readonly maxBatch: number;
  readonly refreshPending: RefreshPending;
  readonly #peers: readonly Peer[];
  readonly #clock: Clock;
  /** Deliveries and re-sends, one at a time, in order. */
  #lane: Promise<unknown> = Promise.resolve();
  readonly #mapping: AlertMapping;
  readonly #acknowledgeWhen: 'any' | 'all';
  readonly #logger: Logger;
  readonly #where: string;
  #closed = false;

  constructor(name: string, options: AlertmanagerOptions, context: SinkContext, deps: HttpSinkDeps) {
    this.name = name;
    this.maxBatch = options.maxBatch;
    this.#logger = context.logger;
    this.#acknowledgeWhen = options.acknowledgeWhen;
    this.#where = `sink ${name}`;
    this.#clock = deps.clock ?? systemClock;
    const intervalMs = options.resendIntervalSeconds * 1000;
    this.#mapping = {
      alertname: options.alertname,
      labels: options.labels,
      severityByEventType: options.severityByEventType,
      endsAtAfterMs: options.endsAtIntervals * intervalMs,
      generatorUrl: options.generatorUrl,
    };
    this.refreshPending = {
      intervalMs,
      send: (pending, signal) => this.#inTurn(() => this.#resend(pending, signal)),
    };
    const bearer = options.bearerToken === undefined ? undefined : `Bearer ${options.bearerToken.reveal()}`;
    this.#peers = options.urls.map((base, index) => {
      const { url, basicAuth } = alertsEndpoint(new URL(base.reveal()));
      return {
        // The configured URL is a Secret: its credentials and path are registered with the redactor already.
        transport: httpSinkTransport(
          `${name} urls[${index}]`,
          url,
          { timeoutMs: options.timeoutMs, minIntervalMs: 0, tls: options.tls },
          context.logger,
          deps,
        ),
        authorization: basicAuth === undefined ? bearer : `Basic ${basicAuth}`,
      };
    });
  }

  deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    return this.#inTurn(() => this.#post(batch, signal));
  }

  /** Runs `work` after every delivery and re-send started before it. */
  #inTurn(work: () => Promise<void>): Promise<void> {
    const turn = this.#lane.then(work);
    this.#lane = turn.catch(() => {});
    return turn;
  }

  /** The firing alerts of the events pending now (read in turn), in batches of maxBatch. */
  async #resend(pending: () => readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    const records = pending();
    for (let i = 0; i < records.length; i += this.maxBatch) {
      await this.#post(records.slice(i, i + this.maxBatch), signal);
    }
  }

  async #post(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    if (this.#closed) throw closedError(`${this.#where}: closed`);
    if (signal.aborted) throw abortedError(`${this.#where}: delivery aborted`);
    if (batch.length === 0) return;
    const now = this.#clock.now();
    const body = JSON.stringify(batch.map((record) => toAlert(record, this.#mapping, now)));
    const outcomes = await Promise.allSettled(
      this.#peers.map((peer) =>
        peer.transport.post(
          {
            body,
            headers: () => ({
              'content-type': 'application/json',
              ...(peer.authorization === undefined ? {} : { authorization: peer.authorization }),
            }),
            errorText: alertmanagerErrorText,
          },
          signal,
        ),
      ),
    );
    if (signal.aborted) throw abortedError(`${this.#where}: delivery aborted`);
    const failures = outcomes.map((outcome) => {
      if (outcome.status === 'fulfilled') return undefined;
      const reason: unknown = outcome.reason;
      return reason instanceof DeliveryError
        ? reason
        : new DeliveryError(`${this.#where}: ${errorMessage(reason)}`, { retryable: true, code: 'error' });
    });
    const failure = combinePeerOutcomes(failures, this.#acknowledgeWhen, this.#where);
    for (const f of failures) {
      if (f === undefined) continue;
      // Each failed peer is logged: at warn when the batch counts as delivered all the same (acknowledgeWhen:
      // any), where nothing else would show it; else at debug, as the engine logs the batch's failure (a paused
      // sink's cause once, not at every probe).
      this.#logger[failure === null ? 'warn' : 'debug'](
        { code: f.code, retryable: f.retryable, records: batch.length },
        `alertmanager peer failed: ${f.message}`,
      );
    }
    if (failure !== null) throw failure;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#peers.map((peer) => peer.transport.close()));
  }
}

export function createAlertmanagerSink(
  name: string,
  options: AlertmanagerOptions,
  context: SinkContext,
  deps: HttpSinkDeps = {},
): Sink {
  return new AlertmanagerSink(name, options, context, deps);
}

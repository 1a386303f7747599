/**
 * The `pagerduty` sink: one Events API v2 event per record (mapping.ts), POSTed through the shared HttpTransport
 * (proxy rule, timeout, TLS, rate limiter, Retry-After). The Events API has no batch request: a batch is sent
 * record by record and a permanent failure names the first failing record (failedIndex).
 *
 * Responses: 202 accepted; 400 permanent, with PagerDuty's `errors` in the message (redacted like any body): for
 * the record, except a refused routing key (for the destination: the sink pauses); 429 and 5xx retryable,
 * honouring Retry-After when PagerDuty sends one (src/sinks/http-status.ts).
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { abortedError, closedError, payloadTooLargeError, withFailedIndex } from '../delivery-errors.ts';
import { type HttpSinkDeps, type HttpTransport, httpSinkTransport } from '../http/transport.ts';
import type { Sink, SinkContext } from '../types.ts';
import {
  PAGERDUTY_LIMITS,
  pagerDutyErrorText,
  pagerDutyRefusal,
  type SeverityMap,
  toPagerDutyEvent,
} from './mapping.ts';
import type { PagerDutyOptions } from './options.ts';

export class PagerDutySink implements Sink {
  readonly name: string;
  readonly maxBatch = 1;
  readonly #transport: HttpTransport;
  readonly #routingKey: () => string;
  readonly #severities: SeverityMap;
  #closed = false;

  constructor(name: string, options: PagerDutyOptions, context: SinkContext, deps: HttpSinkDeps) {
    this.name = name;
    // The routing key is a Secret: the redactor removes it from every message, also when PagerDuty echoes it.
    this.#routingKey = () => options.routingKey.reveal();
    this.#severities = { byEventType: options.severityByEventType, fallback: options.defaultSeverity };
    this.#transport = httpSinkTransport(name, new URL(options.url), options, context.logger, deps);
  }

  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    if (this.#closed) throw closedError(`sink ${this.name}: closed`);
    if (signal.aborted) throw abortedError(`${this.#transport.where}: delivery aborted`);
    for (let i = 0; i < batch.length; i++) {
      try {
        await this.#send(batch[i]!, signal);
      } catch (error) {
        throw withFailedIndex(error, i, batch.length);
      }
    }
  }

  async #send(record: LifecycleRecord, signal: AbortSignal): Promise<void> {
    const body = JSON.stringify(toPagerDutyEvent(record, this.#routingKey(), this.#severities));
    const bytes = Buffer.byteLength(body, 'utf8');
    if (bytes > PAGERDUTY_LIMITS.eventBytes) {
      throw payloadTooLargeError(
        `${this.#transport.where}: the PagerDuty event for record ${record.id} is ${bytes} bytes, over the ` +
          `Events API's ${PAGERDUTY_LIMITS.eventBytes}-byte limit`,
      );
    }
    await this.#transport.post(
      {
        body,
        headers: () => ({ 'content-type': 'application/json' }),
        errorText: pagerDutyErrorText,
        refusesDestination: pagerDutyRefusal,
      },
      signal,
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#transport.close();
  }
}

export function createPagerDutySink(
  name: string,
  options: PagerDutyOptions,
  context: SinkContext,
  deps: HttpSinkDeps = {},
): Sink {
  return new PagerDutySink(name, options, context, deps);
}

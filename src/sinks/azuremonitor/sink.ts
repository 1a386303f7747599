/**
 * Azure Monitor sink: one Log Analytics row per lifecycle record (./columns.ts), uploaded with the Logs
 * Ingestion API through @azure/monitor-ingestion to a data collection rule's stream. See
 * docs/sinks-azure-monitor.md.
 *
 * A batch goes out in the SDK's chunks of under 1,000,000 bytes of JSON, one request at a time, stopping at the
 * first failed request (the SDK reports it through `onError` with the rows it carried), so that the rows before
 * it are confirmed and none after it were sent: a permanent failure names the first row of that request
 * (failedIndex). A 413 (or 400) for a request of several rows splits it in halves and sends them in order, down
 * to the one row the service refuses. A row of 1,000,000 bytes or more is never sent: it is dead-lettered as
 * payload-too-large after the rows before it.
 *
 * The SDKs (./client.ts) load at the first delivery, not when the sink is created.
 */
import type { LogsIngestionClient, LogsUploadFailure } from '@azure/monitor-ingestion';
import type { LifecycleRecord } from '../../domain/index.ts';
import type { Logger } from '../../log.ts';
import { abortedError, closedError, payloadTooLargeError, timeoutError } from '../delivery-errors.ts';
import { DeliveryError, type Sink } from '../types.ts';
import type { IngestionClient } from './client.ts';
import { toLogRow } from './columns.ts';
import { statusOf, type UploadTarget, uploadError } from './errors.ts';
import type { AzureMonitorSinkOptions } from './options.ts';

/** The SDK's chunk limit (JSON bytes per request); a row this large or larger can never be sent. */
export const MAX_REQUEST_BYTES = 1_000_000;
/** Records per deliver() call (`delivery.maxBatch` can lower it). */
export const AZURE_MONITOR_MAX_BATCH = 500;

type Row = Record<string, unknown>;

/** The first failed request of an upload: where its rows start (in the rows given) and how many it carried. */
interface FailedRequest {
  offset: number;
  count: number;
  cause: unknown;
}

/** The Azure Monitor sink. Construct through `azureMonitorSinkFactory.create` (or directly in tests). */
export class AzureMonitorSink implements Sink {
  readonly name: string;
  readonly maxBatch = AZURE_MONITOR_MAX_BATCH;
  readonly #options: AzureMonitorSinkOptions;
  readonly #logger: Logger;
  readonly #newClient: () => Promise<IngestionClient>;
  readonly #target: UploadTarget;
  #client: IngestionClient | undefined;
  #closed = false;

  constructor(
    name: string,
    options: AzureMonitorSinkOptions,
    logger: Logger,
    proxy: string | undefined,
    newClient: () => Promise<IngestionClient> = async () =>
      (await import('./client.ts')).createIngestionClient(options, proxy),
  ) {
    this.name = name;
    this.#options = options;
    this.#logger = logger;
    this.#newClient = newClient;
    this.#target = { sink: name, ruleId: options.ruleId, streamName: options.streamName };
  }

  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    if (this.#closed) throw closedError(`Azure Monitor sink ${this.name} is closed`);
    if (batch.length === 0) return;
    if (signal.aborted) throw abortedError(`Azure Monitor sink ${this.name}: delivery aborted`);
    const rows = batch.map(toLogRow);
    const sizes = rows.map((row) => Buffer.byteLength(JSON.stringify(row)));
    const oversized = sizes.findIndex((size) => size >= MAX_REQUEST_BYTES);
    const timeout = AbortSignal.timeout(this.#options.timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    try {
      const { client } = await this.#getClient();
      await this.#send(client, rows, 0, oversized === -1 ? rows.length : oversized, combined);
    } catch (error) {
      if (signal.aborted)
        throw abortedError(`Azure Monitor sink ${this.name}: delivery aborted`, { cause: error });
      if (timeout.aborted) {
        throw timeoutError(
          `Azure Monitor sink ${this.name}: no answer within timeoutMs ${this.#options.timeoutMs}`,
          { cause: error },
        );
      }
      throw error;
    }
    if (oversized !== -1) {
      throw payloadTooLargeError(
        `Azure Monitor sink ${this.name}: record ${batch[oversized]!.id} is ${sizes[oversized]} bytes as a log row; the Logs Ingestion API takes less than ${MAX_REQUEST_BYTES} bytes per call, so it can never be sent (dead-lettered)`,
        { failedIndex: oversized },
      );
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    client?.close();
  }

  async #getClient(): Promise<IngestionClient> {
    if (this.#client !== undefined) return this.#client;
    const client = await this.#newClient();
    if (this.#closed) {
      client.close();
      throw closedError(`Azure Monitor sink ${this.name} is closed`);
    }
    this.#client ??= client;
    return this.#client;
  }

  /** Sends rows[start, end) in order; throws the DeliveryError of the first request that cannot succeed. */
  async #send(client: LogsIngestionClient, rows: Row[], start: number, end: number, signal: AbortSignal) {
    let from = start;
    while (from < end) {
      const failed = await this.#upload(client, rows.slice(from, end), signal);
      if (failed === undefined) return;
      const at = from + failed.offset;
      const status = statusOf(failed.cause);
      if ((status === 413 || status === 400) && failed.count > 1 && !signal.aborted) {
        // The request as a whole was refused: split it, so that the rows the service takes are delivered
        // and the one it refuses is found.
        const half = Math.ceil(failed.count / 2);
        this.#logger.debug(
          { status, rows: failed.count },
          'Azure Monitor: request refused as a whole; sending it in halves',
        );
        await this.#send(client, rows, at, at + half, signal);
        await this.#send(client, rows, at + half, at + failed.count, signal);
        from = at + failed.count;
        continue;
      }
      const error = uploadError(failed.cause, this.#target, {
        index: at,
        recordId: String(rows[at]?.RecordId),
      });
      if (signal.aborted) throw error; // deliver() reports the abort or the timeout
      this.#logFailure(error);
      // A permanent failure that is not about one row (TLS) still names the first unsent row, truthfully.
      if (!error.retryable && error.failedIndex === undefined) {
        throw new DeliveryError(error.message, {
          retryable: false,
          code: error.code,
          ...(error.scope === undefined ? {} : { scope: error.scope }),
          failedIndex: at,
          cause: failed.cause,
        });
      }
      throw error;
    }
  }

  /** One SDK upload, one request at a time, stopped after the first failed request; undefined when all went. */
  async #upload(
    client: LogsIngestionClient,
    rows: Row[],
    signal: AbortSignal,
  ): Promise<FailedRequest | undefined> {
    const stop = new AbortController();
    let first: LogsUploadFailure | undefined;
    try {
      await client.upload(this.#options.ruleId, this.#options.streamName, rows, {
        maxConcurrency: 1,
        abortSignal: AbortSignal.any([signal, stop.signal]),
        onError: (failure) => {
          first ??= failure;
          stop.abort();
        },
      });
      return undefined;
    } catch (error) {
      if (first === undefined) return { offset: 0, count: rows.length, cause: error };
      const offset = rows.indexOf(first.failedLogs[0] as Row);
      return { offset: Math.max(offset, 0), count: first.failedLogs.length, cause: first.cause };
    }
  }

  /** A refusal of the destination at debug: the engine pauses the sink and logs its cause and fix once. */
  #logFailure(error: DeliveryError): void {
    const fields = { code: error.code, retryable: error.retryable };
    if (error.scope === 'destination') this.#logger.debug(fields, error.message);
    else this.#logger.warn(fields, error.message);
  }
}

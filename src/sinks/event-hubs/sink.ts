/**
 * Event Hubs sink: one Event Hubs event per lifecycle record, sent with one lazily connected, reused
 * EventHubProducerClient. Auth: managed identity (default), DefaultAzureCredential or workload identity with
 * fullyQualifiedNamespace + eventHubName, or a connection string secret. See docs/sinks-event-hubs.md.
 *
 * The Azure SDKs (./client.ts: @azure/event-hubs, @azure/identity, ~10 MiB of heap) load at the first delivery,
 * not when the sink is created: a forwarder whose hub has nothing to send yet does not carry them.
 */
import type { EventDataBatch, EventHubProducerClient } from '@azure/event-hubs';
import type { ForwarderEvent, HeartbeatRecord, LifecycleRecord } from '../../domain/index.ts';
import type { Logger } from '../../log.ts';
import { abortedError, closedError, payloadTooLargeError } from '../delivery-errors.ts';
import { DeliveryError, type Sink } from '../types.ts';
import { classifyEventHubsError, describeError } from './errors.ts';
import { type PartitionKeyMode, partitionKeyFor, toEventData } from './event.ts';
import { ImdsTokenSource } from './imds-token.ts';
import type { EventHubsSinkOptions } from './options.ts';
import {
  buildSasToken,
  buildSendEventRequest,
  parseRestConnection,
  SAS_LIFETIME_SECONDS,
  sendEventUrl,
} from './rest.ts';
import { sendRestEvent } from './rest-send.ts';

/** Consecutive failed deliveries after which the client is discarded and rebuilt on the next call. */
const REBUILD_AFTER_FAILURES = 3;
/** How long close() waits for the SDK to close its links and connection. */
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * How heartbeats go out (docs/sinks-event-hubs.md, "Heartbeat transport"): over the REST API with a SAS token
 * built from the connection string's key (no SDK loaded), or with the SDK's producer client like the records.
 */
export type HeartbeatTransport = 'rest' | 'sdk';

/** The Event Hubs sink. Construct through `eventHubsSinkFactory.create` (or directly in tests). */
export class EventHubsSink implements Sink {
  readonly name: string;
  readonly maxBatch: number;
  readonly #options: EventHubsSinkOptions;
  readonly #logger: Logger;
  readonly #newClient: () => EventHubProducerClient | Promise<EventHubProducerClient>;
  #client: EventHubProducerClient | undefined;
  #consecutiveFailures = 0;
  #closed = false;
  /** The REST target when heartbeats go over REST (a key connection string, a managed identity), else undefined. */
  readonly #rest: RestTarget | undefined;

  constructor(
    name: string,
    options: EventHubsSinkOptions,
    logger: Logger,
    newClient: () => EventHubProducerClient | Promise<EventHubProducerClient> = async () =>
      (await import('./client.ts')).createProducerClient(options),
    rest: {
      imdsEndpoint?: string | undefined;
      now?: () => number;
      env?: Record<string, string | undefined>;
    } = {},
  ) {
    this.name = name;
    this.maxBatch = options.maxBatch;
    this.#options = options;
    this.#logger = logger;
    this.#newClient = newClient;
    this.#rest = restTarget(options, {
      imdsEndpoint: rest.imdsEndpoint,
      now: rest.now ?? Date.now,
      env: rest.env ?? process.env,
    });
  }

  /** How this sink sends heartbeats. */
  get heartbeatTransport(): HeartbeatTransport {
    return this.#rest === undefined ? 'sdk' : 'rest';
  }

  /** The partition-key mode in use. */
  get partitionKeyMode(): PartitionKeyMode {
    return this.#options.partitionKey;
  }

  deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    return this.#deliverEvents(batch, signal);
  }

  /** A heartbeat is one more event on the hub, keyed like the VM's records (docs/sinks-event-hubs.md). */
  sendHeartbeat(heartbeat: HeartbeatRecord, signal: AbortSignal): Promise<void> {
    if (this.#rest === undefined) return this.#deliverEvents([heartbeat], signal);
    return this.#sendHeartbeatOverRest(heartbeat, signal);
  }

  async #sendHeartbeatOverRest(heartbeat: HeartbeatRecord, signal: AbortSignal): Promise<void> {
    if (this.#closed) throw closedError(`Event Hubs sink ${this.name} is closed`);
    const { url } = this.#rest!;
    const timeoutMs = this.#options.retry.timeoutMs;
    const request = buildSendEventRequest(heartbeat, {
      url,
      authorization: await this.#rest!.authorization(signal, timeoutMs),
      partitionKey: this.#options.partitionKey,
    });
    await sendRestEvent(request, {
      signal,
      timeoutMs,
      where: `Event Hubs ${this.#hubLabel()} (REST ${url.protocol}//${url.host})`,
    });
    this.#logger.debug({ transport: 'rest', bytes: request.body.length }, 'Event Hubs heartbeat sent');
  }

  async #deliverEvents(batch: readonly ForwarderEvent[], signal: AbortSignal): Promise<void> {
    if (this.#closed) throw closedError(`Event Hubs sink ${this.name} is closed`);
    if (batch.length === 0) return;
    if (signal.aborted) throw abortedError('delivery aborted');
    const client = await this.#getClient();
    try {
      await this.#send(client, batch, signal);
      this.#consecutiveFailures = 0;
    } catch (error) {
      if (error instanceof DeliveryError && error.retryable) this.#noteFailure(client);
      throw error;
    }
  }

  /**
   * Closes the client. Bounded: when the service is already gone the SDK can wait a long time for link
   * detaches, which must not hold up the forwarder's shutdown.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), CLOSE_TIMEOUT_MS);
      timer.unref();
    });
    const outcome = await Promise.race([client.close().catch(() => 'error' as const), timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      this.#logger.warn(`Event Hubs: client did not close within ${CLOSE_TIMEOUT_MS} ms; abandoning it`);
    }
  }

  async #getClient(): Promise<EventHubProducerClient> {
    if (this.#client !== undefined) return this.#client;
    const client = await this.#newClient();
    if (this.#closed) {
      client.close().catch(() => {});
      throw closedError(`Event Hubs sink ${this.name} is closed`);
    }
    this.#client ??= client;
    return this.#client;
  }

  /** After repeated failures, drop the client so the next call reconnects from scratch. */
  #noteFailure(client: EventHubProducerClient): void {
    this.#consecutiveFailures += 1;
    if (this.#consecutiveFailures < REBUILD_AFTER_FAILURES || this.#client !== client) return;
    this.#logger.warn(
      { failures: this.#consecutiveFailures },
      'Event Hubs: rebuilding the producer client after repeated failures',
    );
    this.#client = undefined;
    this.#consecutiveFailures = 0;
    client.close().catch(() => {});
  }

  /** Splits the records into runs with the same partition key, each sent as few size-limited batches as fit. */
  async #send(
    client: EventHubProducerClient,
    batch: readonly ForwarderEvent[],
    signal: AbortSignal,
  ): Promise<void> {
    const mode = this.#options.partitionKey;
    let current: EventDataBatch | undefined;
    let currentKey: string | undefined;
    let start = 0; // index of the first record in `current`

    const flush = async (): Promise<void> => {
      if (current === undefined || current.count === 0) return;
      const sending = current;
      current = undefined;
      try {
        await client.sendBatch(sending, { abortSignal: signal });
      } catch (error) {
        throw this.#toDeliveryError(error, start, sending.count);
      }
      this.#logger.debug(
        { events: sending.count, bytes: sending.sizeInBytes, partitionKey: currentKey },
        'Event Hubs batch sent',
      );
      start += sending.count;
    };
    const open = async (key: string | undefined, index: number): Promise<EventDataBatch> => {
      try {
        const created = await client.createBatch({
          abortSignal: signal,
          ...(key === undefined ? {} : { partitionKey: key }),
        });
        start = index;
        currentKey = key;
        return created;
      } catch (error) {
        throw this.#toDeliveryError(error, index, 1);
      }
    };

    for (let i = 0; i < batch.length; i++) {
      const record = batch[i]!;
      const key = partitionKeyFor(record, mode);
      const event = toEventData(record);
      if (current !== undefined && currentKey !== key) await flush();
      current ??= await open(key, i);
      if (current.tryAdd(event)) continue;
      if (current.count > 0) {
        await flush();
        current = await open(key, i);
        if (current.tryAdd(event)) continue;
      }
      const size = Buffer.byteLength(JSON.stringify(record));
      throw payloadTooLargeError(
        `Event Hubs ${this.#hubLabel()}: record ${record.id} (${size} bytes as JSON) does not fit in one event (max ${current.maxSizeInBytes} bytes per batch)`,
        { failedIndex: i },
      );
    }
    await flush();
  }

  #toDeliveryError(error: unknown, firstIndex: number, count: number): DeliveryError {
    if (error instanceof DeliveryError) return error;
    const { retryable, scope, refusal, code } = classifyEventHubsError(error);
    const described = `Event Hubs ${this.#hubLabel()}: ${describeError(error)}`;
    const message =
      refusal === undefined ? described : `${described} (permanent for the destination: ${refusal})`;
    if (scope === 'destination') {
      // The engine pauses the sink and logs this cause and its fix once, at error level.
      this.#logger.debug({ code }, message);
    } else if (code === 'CredentialUnavailable' || code === 'AuthenticationFailed') {
      this.#logger.error({ code }, `${message} (check the identity's Azure Event Hubs Data Sender role)`);
    } else {
      this.#logger.warn({ code, retryable }, message);
    }
    if (retryable) return new DeliveryError(message, { retryable, code, cause: error });
    // Per-record errors in a multi-event batch do not say which event; let the engine isolate it.
    const failedIndex = code === 'payload-too-large' && count > 1 ? undefined : firstIndex;
    return new DeliveryError(message, {
      retryable,
      code,
      ...(scope === undefined ? {} : { scope }),
      cause: error,
      ...(failedIndex === undefined ? {} : { failedIndex }),
    });
  }

  #hubLabel(): string {
    return this.#client?.eventHubName ?? this.#options.eventHubName ?? this.name;
  }
}

/** Where and how a sink sends heartbeats over REST. */
interface RestTarget {
  url: URL;
  /** The Authorization header value for one request. */
  authorization(signal: AbortSignal, timeoutMs: number): Promise<string>;
}

/**
 * Environment variables that point @azure/identity's ManagedIdentityCredential somewhere other than IMDS (App
 * Service, Azure Arc, Service Fabric, Cloud Shell): there the SDK knows the protocol, so heartbeats use it.
 */
const OTHER_IDENTITY_ENDPOINTS = ['IDENTITY_ENDPOINT', 'MSI_ENDPOINT'];

/**
 * The REST target of a sink (docs/sinks-event-hubs.md, "Heartbeat transport"), or undefined when heartbeats go
 * through the SDK:
 * - a connection string with a key (not the emulator form, not a ready SharedAccessSignature): a SAS token per
 *   heartbeat;
 * - fullyQualifiedNamespace with a managed identity (the default credential) on a VM with IMDS: a token from the
 *   IMDS endpoint the forwarder polls (AZURE_POD_IDENTITY_AUTHORITY_HOST instead when set, as for the SDK).
 */
function restTarget(
  options: EventHubsSinkOptions,
  context: { imdsEndpoint?: string | undefined; now: () => number; env: Record<string, string | undefined> },
): RestTarget | undefined {
  if (options.connectionString === undefined) {
    const { credential, fullyQualifiedNamespace, eventHubName } = options;
    const imds = context.env.AZURE_POD_IDENTITY_AUTHORITY_HOST || context.imdsEndpoint;
    if (credential.kind !== 'managed-identity' || imds === undefined) return undefined;
    if (fullyQualifiedNamespace === undefined || eventHubName === undefined) return undefined;
    if (OTHER_IDENTITY_ENDPOINTS.some((name) => context.env[name])) return undefined;
    let tokens: ImdsTokenSource;
    try {
      tokens = new ImdsTokenSource(
        imds,
        { clientId: credential.clientId, resourceId: credential.resourceId },
        context.now,
      );
    } catch {
      return undefined; // not a URL: the SDK reports it
    }
    return {
      url: sendEventUrl(fullyQualifiedNamespace, eventHubName, options.customEndpointAddress),
      authorization: async (signal, timeoutMs) => `Bearer ${await tokens.token(signal, timeoutMs)}`,
    };
  }
  let parsed: ReturnType<typeof parseRestConnection>;
  try {
    parsed = parseRestConnection(options.connectionString.reveal(), options.eventHubName);
  } catch {
    // The schema accepted it by the SDK's rules: the SDK sends, and reports what is wrong at the first send.
    return undefined;
  }
  if (typeof parsed === 'string') return undefined;
  const { keyName, key } = parsed;
  // The token names the hub of the namespace (not a customEndpointAddress gateway).
  const resource = `https://${parsed.host}/${parsed.eventHubName}`;
  return {
    url: sendEventUrl(parsed.host, parsed.eventHubName, options.customEndpointAddress),
    authorization: async () =>
      buildSasToken(resource, keyName, key, Math.floor(context.now() / 1000) + SAS_LIFETIME_SECONDS),
  };
}

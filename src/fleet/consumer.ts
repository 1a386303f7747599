/**
 * The fleet consumer: an EventHubConsumerClient in the configured consumer group with the Blob checkpoint store,
 * so that several instances share the partitions through the SDK's own load balancing (ownership blobs), and a
 * standby takes over the partitions of an instance that died once its ownership expires.
 *
 * Per batch: ingest into the history (SQLite or PostgreSQL) in one transaction (de-duplicated by CloudEvent (source, id)), THEN checkpoint
 * the batch's last event. A crash between the two re-delivers the batch, which the primary key absorbs:
 * at-least-once delivery + idempotent ingest = each record counted exactly once. If the commit fails, the
 * partition's processing is held and the commit retried (the checkpoint never moves past uncommitted records).
 */
import {
  type CheckpointStore,
  EventHubConsumerClient,
  type EventHubConsumerClientOptions,
  earliestEventPosition,
  latestEventPosition,
  type PartitionContext,
  type ReceivedEventData,
  RetryMode,
  type Subscription,
} from '@azure/event-hubs';
import type { BlobCheckpointStore } from '@azure/eventhubs-checkpointstore-blob';
import { createCredential } from '../azure/credentials.ts';
import { type BackoffOptions, exponentialBackoffMs } from '../backoff.ts';
import { sleep, systemClock } from '../clock.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { FleetConfig } from './config.ts';
import type { FleetHistory, IngestResult, RawFleetEvent } from './history/index.ts';
import { loadStoragePackages } from './storage-packages.ts';

/** How long start() waits for the hub's partition ids (the metrics' per-partition series) before going on. */
const PARTITION_IDS_TIMEOUT_MS = 10_000;

/** Where one partition is, for the metrics (src/fleet/metrics.ts). */
export interface PartitionProgress {
  partitionId: string;
  /** This instance processes the partition now. */
  owned: boolean;
  /** Seconds from the enqueue time to the ingest time of the last event this instance ingested; 0 before one. */
  lagSeconds: number;
  /** The partition's last enqueued sequence number minus the last one ingested here; 0 when unknown. */
  eventsBehind: number;
}

interface PartitionState {
  context: PartitionContext | undefined;
  /** The last ingested sequence number (before any: one before the first event received). */
  lastIngested: number | undefined;
  lagSeconds: number;
  /** When this instance last stored that the partition was read through (ms; 0: never). */
  readThroughSavedAt: number;
}

/**
 * How often a caught-up partition's read-through mark is stored (history.recordReadThrough): the coverage views
 * measure a VM's silence up to it (src/fleet/history/coverage.ts), so it lags the truth by at most this much.
 */
const READ_THROUGH_INTERVAL_MS = 15_000;

/** Retrying a failed commit of a batch (store unavailable, disk full): 200 ms doubling to 10 s. */
const FLEET_COMMIT_BACKOFF: BackoffOptions = { initialMs: 200, maxMs: 10_000 };

/** Live counters of this consumer instance. */
export interface FleetConsumerStats {
  batches: number;
  events: number;
  accepted: number;
  /** Heartbeats (kept as each VM's latest, not as records). */
  heartbeats: number;
  duplicates: number;
  rejected: number;
  checkpoints: number;
  commitRetries: number;
  errors: number;
  /** Partitions this instance currently processes. */
  partitions: string[];
}

export interface FleetConsumerOptions {
  config: FleetConfig;
  history: FleetHistory;
  logger: Logger;
  /** Overrides the Blob checkpoint store (tests). */
  checkpointStore?: CheckpointStore;
  /** Called after each committed and checkpointed batch (tests, telemetry). */
  onBatch?: (info: { partitionId: string; result: IngestResult; lastSequenceNumber: number }) => void;
}

/** The Blob checkpoint store for the config; creates the container if missing. */
export async function createBlobCheckpointStore(config: FleetConfig): Promise<BlobCheckpointStore> {
  const { BlobCheckpointStore, ContainerClient } = await loadStoragePackages();
  const c = config.checkpoints;
  const container =
    c.connectionString !== undefined
      ? new ContainerClient(c.connectionString.reveal(), c.containerName)
      : new ContainerClient(
          `${c.accountUrl!.replace(/\/+$/, '')}/${c.containerName}`,
          createCredential(c.credential),
        );
  await container.createIfNotExists();
  return new BlobCheckpointStore(container);
}

/** SDK client options: bounded retries and the configured load-balancing timings. */
function consumerClientOptions(config: FleetConfig): EventHubConsumerClientOptions {
  const eh = config.eventHubs;
  const options: EventHubConsumerClientOptions = {
    retryOptions: {
      mode: RetryMode.Exponential,
      maxRetries: 3,
      retryDelayInMs: 500,
      maxRetryDelayInMs: 5_000,
      timeoutInMs: 30_000,
    },
    userAgent: 'scheduled-events-forwarder-fleet',
    loadBalancingOptions: {
      strategy: eh.loadBalancing.strategy,
      updateIntervalInMs: eh.loadBalancing.updateIntervalMs,
      partitionOwnershipExpirationIntervalInMs: eh.loadBalancing.ownershipExpirationMs,
    },
    ...(eh.customEndpointAddress === undefined ? {} : { customEndpointAddress: eh.customEndpointAddress }),
  };
  return options;
}

/** The running consumer; see the module comment. */
export class FleetConsumer {
  readonly stats: FleetConsumerStats = {
    batches: 0,
    events: 0,
    accepted: 0,
    heartbeats: 0,
    duplicates: 0,
    rejected: 0,
    checkpoints: 0,
    commitRetries: 0,
    errors: 0,
    partitions: [],
  };
  readonly #options: FleetConsumerOptions;
  #client: EventHubConsumerClient | undefined;
  #subscription: Subscription | undefined;
  #closing = false;
  readonly #owned = new Set<string>();
  readonly #partitions = new Map<string, PartitionState>();
  /** The hub's partition ids, asked for at start (empty if the hub did not answer in time). */
  partitionIds: string[] = [];
  /** Enqueue time (ms) of the newest record ingested by this instance. */
  lastRecordEnqueuedAt: number | undefined;

  constructor(options: FleetConsumerOptions) {
    this.#options = options;
  }

  /** Connects and subscribes to every partition (load-balanced with other instances). */
  async start(): Promise<void> {
    const { config, logger } = this.#options;
    const eh = config.eventHubs;
    const checkpointStore = this.#options.checkpointStore ?? (await createBlobCheckpointStore(config));
    const clientOptions = consumerClientOptions(config);
    if (eh.connectionString !== undefined) {
      const cs = eh.connectionString.reveal();
      this.#client =
        eh.eventHubName === undefined
          ? new EventHubConsumerClient(eh.consumerGroup, cs, checkpointStore, clientOptions)
          : new EventHubConsumerClient(eh.consumerGroup, cs, eh.eventHubName, checkpointStore, clientOptions);
    } else {
      this.#client = new EventHubConsumerClient(
        eh.consumerGroup,
        eh.fullyQualifiedNamespace!,
        eh.eventHubName!,
        createCredential(eh.credential),
        checkpointStore,
        clientOptions,
      );
    }
    try {
      this.partitionIds = await this.#client.getPartitionIds({
        abortSignal: AbortSignal.timeout(PARTITION_IDS_TIMEOUT_MS),
      });
    } catch (error) {
      logger.warn(
        { err: errorMessage(error) },
        'cannot read the partition ids of the hub yet; per-partition metrics appear as partitions are claimed',
      );
    }
    this.#subscription = this.#client.subscribe(
      {
        processInitialize: async (context) => {
          this.#state(context.partitionId).context = context;
          this.#owned.add(context.partitionId);
          this.stats.partitions = [...this.#owned].sort();
          logger.info({ partition: context.partitionId }, 'partition claimed');
        },
        processClose: async (reason, context) => {
          // Reclaimed later, it resumes from whatever checkpoint another instance left: start afresh.
          this.#partitions.delete(context.partitionId);
          this.#owned.delete(context.partitionId);
          this.stats.partitions = [...this.#owned].sort();
          logger.info({ partition: context.partitionId, reason }, 'partition released');
        },
        processEvents: (events, context) => this.#processEvents(events, context),
        processError: async (error, context) => {
          if (this.#closing) return;
          this.stats.errors++;
          logger.warn({ err: error.message, partition: context.partitionId }, 'event hubs consumer error');
        },
      },
      {
        startPosition: eh.startPosition === 'earliest' ? earliestEventPosition : latestEventPosition,
        maxBatchSize: eh.maxBatchSize,
        maxWaitTimeInSeconds: eh.maxWaitTimeMs / 1000,
        // context.lastEnqueuedEventProperties: how far behind the hub each partition is (the metrics).
        trackLastEnqueuedEventProperties: true,
      },
    );
    logger.info(
      { consumerGroup: eh.consumerGroup, database: this.#options.history.description },
      'fleet consumer subscribed',
    );
  }

  #state(partitionId: string): PartitionState {
    let state = this.#partitions.get(partitionId);
    if (state === undefined) {
      state = { context: undefined, lastIngested: undefined, lagSeconds: 0, readThroughSavedAt: 0 };
      this.#partitions.set(partitionId, state);
    }
    return state;
  }

  /** True once subscribed, until closed. */
  get subscribed(): boolean {
    return !this.#closing && this.#subscription?.isRunning === true;
  }

  /** Every partition of the hub (and any claimed since), with its lag and how far behind it is. */
  partitionProgress(): PartitionProgress[] {
    const ids = new Set([...this.partitionIds, ...this.#partitions.keys()]);
    return [...ids].sort().map((partitionId) => {
      const owned = this.#owned.has(partitionId);
      const state = this.#partitions.get(partitionId);
      if (!owned || state === undefined) return { partitionId, owned, lagSeconds: 0, eventsBehind: 0 };
      const last = state.context?.lastEnqueuedEventProperties?.sequenceNumber;
      const eventsBehind =
        last === undefined || state.lastIngested === undefined ? 0 : Math.max(0, last - state.lastIngested);
      return { partitionId, owned, lagSeconds: state.lagSeconds, eventsBehind };
    });
  }

  async #processEvents(events: ReceivedEventData[], context: PartitionContext): Promise<void> {
    if (events.length === 0) {
      // No event within maxWaitTime: the partition may be caught up (its read-through mark moves to now).
      await this.#saveReadThrough(this.#state(context.partitionId), context);
      return;
    }
    const state = this.#state(context.partitionId);
    state.context = context;
    state.lastIngested ??= events[0]!.sequenceNumber - 1;
    const batch: RawFleetEvent[] = events.map((e) => ({
      body: e.body,
      partitionId: context.partitionId,
      sequenceNumber: e.sequenceNumber,
      enqueuedAt: e.enqueuedTimeUtc,
    }));
    const result = await this.#commitWithRetry(batch, context.partitionId);
    if (result === undefined) return; // closing: not committed, so not checkpointed either
    const last = events[events.length - 1]!;
    const enqueuedAt = last.enqueuedTimeUtc.getTime();
    state.lastIngested = last.sequenceNumber;
    state.lagSeconds = Math.max(0, (Date.now() - enqueuedAt) / 1000);
    if (this.lastRecordEnqueuedAt === undefined || enqueuedAt > this.lastRecordEnqueuedAt)
      this.lastRecordEnqueuedAt = enqueuedAt;
    this.stats.batches++;
    this.stats.events += events.length;
    this.stats.accepted += result.accepted;
    this.stats.heartbeats += result.heartbeats;
    this.stats.duplicates += result.duplicates;
    this.stats.rejected += result.rejected;
    if (result.rejected > 0) {
      this.#options.logger.warn(
        {
          partition: context.partitionId,
          rejected: result.rejected,
          reasons: result.rejections.slice(0, 5).map((r) => r.reason),
        },
        'records that failed validation were kept in the rejected table; the rest of the batch was stored',
      );
    }
    await context.updateCheckpoint(last);
    this.stats.checkpoints++;
    await this.#saveReadThrough(state, context);
    this.#options.onBatch?.({
      partitionId: context.partitionId,
      result,
      lastSequenceNumber: last.sequenceNumber,
    });
  }

  /**
   * When the partition is caught up (its last enqueued event is ingested, or it has none), stores that it was
   * read through the time that was checked, at most every READ_THROUGH_INTERVAL_MS. Best effort: a failure only
   * leaves the mark older (the coverage views then count silence up to the older mark).
   */
  async #saveReadThrough(state: PartitionState, context: PartitionContext): Promise<void> {
    const properties = context.lastEnqueuedEventProperties;
    const lastEnqueued = properties?.sequenceNumber;
    const caughtUp =
      lastEnqueued !== undefined &&
      (lastEnqueued < 0 || (state.lastIngested !== undefined && lastEnqueued <= state.lastIngested));
    const now = Date.now();
    if (!caughtUp || this.#closing || now - state.readThroughSavedAt < READ_THROUGH_INTERVAL_MS) return;
    state.readThroughSavedAt = now;
    const at = Math.min(now, properties?.retrievedOn?.getTime() ?? now);
    try {
      await this.#options.history.recordReadThrough(context.partitionId, at);
    } catch (error) {
      this.#options.logger.debug(
        { err: errorMessage(error), partition: context.partitionId },
        'cannot store how far the partition was read; coverage measures silence up to the older mark',
      );
    }
  }

  /**
   * Commits the batch, retrying with backoff while the store fails (SQLite busy or disk full, PostgreSQL
   * unreachable); undefined when closing. Invalid records never throw here: ingest rejects them one by one.
   */
  async #commitWithRetry(batch: RawFleetEvent[], partitionId: string): Promise<IngestResult | undefined> {
    for (let attempt = 1; ; attempt++) {
      if (this.#closing) return undefined;
      try {
        return await this.#options.history.ingest(batch);
      } catch (error) {
        this.stats.commitRetries++;
        const delay = exponentialBackoffMs(attempt, FLEET_COMMIT_BACKOFF);
        this.#options.logger.error(
          { err: errorMessage(error), partition: partitionId, retryInMs: delay },
          'cannot commit the batch to the fleet database; holding the partition and retrying (no checkpoint)',
        );
        await sleep(systemClock, delay);
      }
    }
  }

  /** Stops receiving (in-flight batches finish or are abandoned uncheckpointed) and closes the client. */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#subscription?.close().catch(() => undefined);
    await this.#client?.close().catch(() => undefined);
  }
}

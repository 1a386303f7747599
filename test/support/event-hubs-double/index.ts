/**
 * An in-process AMQP 1.0 server (rhea) that the real @azure/event-hubs v6 SDK accepts as an Event Hubs
 * namespace, for tests and benchmarks. It implements the surface documented in
 * /work/shared/reference/event-hubs-amqp-test-double.md: plain TCP (`UseDevelopmentEmulator=true`) or TLS,
 * SASL ANONYMOUS / none, `$cbs` put-token with SAS signature and JWT audience checks, `$management` READ,
 * publishing with batched message format 0x80013700 and partition routing, consumer links with selector filters
 * and epochs (so EventHubConsumerClient can read events back), error conditions the SDK maps, fault injection,
 * connection drops and a clean shutdown. In TLS mode the same port also serves the REST "send event" API over
 * HTTPS (./rest.ts), storing into the same partitions.
 *
 * Everything stays on 127.0.0.1. Usage:
 *
 *   const double = await startEventHubsDouble({ hubs: { 'lifecycle': 4 } });
 *   const client = new EventHubProducerClient(double.connectionString('lifecycle'));
 *   ...
 *   double.received('lifecycle'); // every event that arrived (duplicates included), in arrival order
 *   await double.close();
 */
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { Connection, Delivery, EventContext, Message, Receiver, Sender } from 'rhea';
import rhea from 'rhea';
import { partitionForKey } from './partition.ts';
import { type RestRequestRecord, restFrontHandler } from './rest.ts';
import {
  decodeJwtClaims,
  EVENT_HUBS_JWT_AUDIENCES,
  JWT_TOKEN_TYPE,
  SAS_TOKEN_TYPE,
  type TokenVerdict,
  verifyJwt,
  verifySasToken,
} from './tokens.ts';

const { types, message: messageCodec } = rhea;

export { generateTestCertificate, type TestCertificate } from './cert.ts';
export { enableClientNoDelay } from './nodelay.ts';
export type { RestRequestRecord } from './rest.ts';
export { createSasToken, decodeJwtClaims } from './tokens.ts';

/** The AMQP message format of an Event Hubs batch (one data section per event). */
export const BATCH_MESSAGE_FORMAT = 0x80013700;
const ONE_MIB = 1024 * 1024;
const SELECTOR_FILTER = 'apache.org:selector-filter:string';

/** Faults the double can inject. */
export type EventHubsFaultKind =
  | 'server-busy' // com.microsoft:server-busy → ServerBusyError (retryable)
  | 'timeout' // com.microsoft:timeout → ServiceUnavailableError (retryable)
  | 'internal-error' // amqp:internal-error → InternalServerError (retryable)
  | 'unauthorized' // amqp:unauthorized-access → UnauthorizedError
  | 'not-found' // amqp:not-found → MessagingEntityNotFoundError (permanent)
  | 'quota-exceeded' // amqp:resource-limit-exceeded → QuotaExceededError
  | 'message-too-large' // amqp:link:message-size-exceeded → MessageTooLargeError (permanent)
  | 'released' // released disposition → SendOperationFailedError
  | 'never-settle' // the transfer is never settled → OperationTimeoutError after the SDK's timeout
  | 'drop-connection'; // AMQP close (amqp:connection:forced) + socket destroyed while the transfer is unsettled

export interface EventHubsFault {
  kind: EventHubsFaultKind;
  /**
   * Where the fault applies: 'send' (publishing transfers, the default), 'cbs' (put-token replies) or
   * 'management' ($management requests). never-settle, released and drop-connection apply to 'send' only.
   */
  stage?: 'send' | 'cbs' | 'management';
  /** How many matching operations fail; default: every one until clearFaults(). */
  times?: number;
  /** Let this many matching operations through before the fault starts (e.g. 1 = fail the second transfer). */
  skip?: number;
  /** Only operations on this hub. */
  hub?: string;
}

export interface EventHubsDoubleOptions {
  /** Hub name → partition count. Default `{ eh1: 4 }`. */
  hubs?: Record<string, number>;
  /** Consumer groups every hub has. Default `['$Default']`. */
  consumerGroups?: string[];
  /** SAS key name → key used to verify SAS tokens. Default: one random key named RootManageSharedAccessKey. */
  sasKeys?: Record<string, string>;
  /** Audiences accepted in JWTs (`aud` claim). Default: https://eventhubs.azure.net[/]. */
  jwtAudiences?: readonly string[];
  /** Override the JWT check; return undefined to accept, or the reason to refuse. */
  verifyJwt?: (token: string, audience: string) => TokenVerdict;
  /** Listen with TLS (required by the SDK's credential constructors); also serves the HTTPS REST front. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** The sender-link max-message-size advertised to producers (what createBatch uses). Default 1 MiB. */
  maxMessageSize?: number;
  /** Port to listen on (default 0 = any free port; pass the old port to restart "the same" namespace). */
  port?: number;
  /** Clock for token expiry checks and enqueued times; default Date.now. */
  now?: () => number;
  /**
   * Behave like a careless server: quote the rejected token in the `$cbs` 401 status description (tests that
   * credentials echoed by a receiver never reach logs or stored errors). Default false.
   */
  echoRejectedTokens?: boolean;
}

/** One event as stored by the double (and as later delivered to consumers). */
export interface ReceivedEvent {
  hub: string;
  partitionId: string;
  partitionKey: string | undefined;
  messageId: string | undefined;
  contentType: string | undefined;
  /** Body parsed as JSON when it is JSON, otherwise the raw Buffer. */
  body: unknown;
  /** The raw body bytes. */
  bodyBytes: Buffer;
  /** How it arrived: an AMQP transfer or a REST send-event request. */
  transport: 'amqp' | 'rest';
  applicationProperties: Record<string, unknown>;
  sequenceNumber: number;
  offset: string;
  enqueuedTimeUtc: Date;
}

/** One put-token request as seen by `$cbs`. */
export interface PutTokenRecord {
  audience: string;
  tokenType: string;
  accepted: boolean;
  reason: string | undefined;
  /** For JWTs: the decoded claims (test tokens only; lets tests check which identity authenticated). */
  jwtClaims?: Record<string, unknown> | undefined;
}

export interface EventHubsDoubleStats {
  connectionsOpened: number;
  transfers: number;
  faultsInjected: number;
  managementRequests: number;
  /** REST send-event requests (TLS mode), accepted or not. */
  restRequests: number;
}

export interface EventHubsDouble {
  port: number;
  /** `127.0.0.1:<port>` — the fullyQualifiedNamespace to pass to the credential constructors (TLS mode). */
  namespaceHost: string;
  /** `sb://127.0.0.1:<port>/` */
  endpoint: string;
  /** The SAS key name/value the double verifies. */
  sasKeyName: string;
  sasKey: string;
  /** A connection string for `hub` (plain TCP with UseDevelopmentEmulator=true, or TLS when tls was given). */
  connectionString(hub: string): string;
  /** Every event received on `hub` (or all hubs), in arrival order, duplicates included. */
  received(hub?: string): ReceivedEvent[];
  /** Every put-token request so far. */
  tokens(): PutTokenRecord[];
  /** Every REST send-event request so far (TLS mode). */
  restRequests(): RestRequestRecord[];
  stats(): EventHubsDoubleStats;
  setFault(fault: EventHubsFault): void;
  clearFaults(): void;
  /** Closes every client connection with amqp:connection:forced (the SDK reconnects). Returns how many. */
  dropConnections(): number;
  /** Number of currently open client connections. */
  openConnections(): number;
  close(): Promise<void>;
}

interface PartitionState {
  id: string;
  events: StoredEvent[];
  consumers: Set<ConsumerLink>;
}

interface StoredEvent {
  received: ReceivedEvent;
  raw: Buffer;
}

interface HubState {
  name: string;
  createdAt: Date;
  partitions: PartitionState[];
}

interface ConsumerLink {
  sender: Sender;
  partition: PartitionState;
  next: number;
  epoch: number | undefined;
  runtimeMetric: boolean;
}

interface ActiveFault extends EventHubsFault {
  remaining: number;
  toSkip: number;
}

const CONDITIONS: Record<
  Exclude<EventHubsFaultKind, 'released' | 'never-settle' | 'drop-connection'>,
  { condition: string; status: number }
> = {
  'server-busy': { condition: 'com.microsoft:server-busy', status: 503 },
  timeout: { condition: 'com.microsoft:timeout', status: 408 },
  'internal-error': { condition: 'amqp:internal-error', status: 500 },
  unauthorized: { condition: 'amqp:unauthorized-access', status: 401 },
  'not-found': { condition: 'amqp:not-found', status: 404 },
  'quota-exceeded': { condition: 'amqp:resource-limit-exceeded', status: 403 },
  'message-too-large': { condition: 'amqp:link:message-size-exceeded', status: 413 },
};

function faultDescription(kind: EventHubsFaultKind, hub: string): string {
  if (kind === 'not-found') return `The messaging entity '${hub}' could not be found. (injected fault)`;
  return `injected fault: ${kind}`;
}

/** Starts the double on 127.0.0.1 and resolves once it listens. */
export async function startEventHubsDouble(options: EventHubsDoubleOptions = {}): Promise<EventHubsDouble> {
  const now = options.now ?? Date.now;
  const hubs = new Map<string, HubState>();
  for (const [name, count] of Object.entries(options.hubs ?? { eh1: 4 })) {
    if (!Number.isInteger(count) || count < 1) throw new Error(`hub ${name}: partition count must be ≥ 1`);
    hubs.set(name, {
      name,
      createdAt: new Date(now()),
      partitions: Array.from({ length: count }, (_, i) => ({
        id: String(i),
        events: [],
        consumers: new Set(),
      })),
    });
  }
  const consumerGroups = new Set(options.consumerGroups ?? ['$Default']);
  const sasKeys = options.sasKeys ?? { RootManageSharedAccessKey: randomBytes(32).toString('base64') };
  const [sasKeyName, sasKey] = Object.entries(sasKeys)[0] ?? ['', ''];
  const jwtAudiences = options.jwtAudiences ?? EVENT_HUBS_JWT_AUDIENCES;
  const checkJwt = options.verifyJwt ?? ((token: string) => verifyJwt(token, jwtAudiences, now()));
  const maxMessageSize = options.maxMessageSize ?? ONE_MIB;
  const tlsMode = options.tls !== undefined;

  const faults: ActiveFault[] = [];
  const tokenLog: PutTokenRecord[] = [];
  const stats: EventHubsDoubleStats = {
    connectionsOpened: 0,
    transfers: 0,
    faultsInjected: 0,
    managementRequests: 0,
    restRequests: 0,
  };
  const restLog: RestRequestRecord[] = [];
  const connections = new Set<Connection>();
  const sockets = new Set<Socket>();
  let roundRobin = 0;
  let closing = false;

  function takeFault(stage: 'send' | 'cbs' | 'management', hub: string): ActiveFault | undefined {
    for (const fault of faults) {
      if ((fault.stage ?? 'send') !== stage || fault.remaining <= 0) continue;
      if (fault.hub !== undefined && fault.hub !== hub) continue;
      if (fault.toSkip > 0) {
        fault.toSkip -= 1;
        continue;
      }
      fault.remaining -= 1;
      stats.faultsInjected += 1;
      return fault;
    }
    return undefined;
  }

  /** Hub named in an address such as `eh1`, `eh1/Partitions/0` or `eh1/ConsumerGroups/$Default/Partitions/0`. */
  function parseAddress(address: string): {
    hub: string;
    consumerGroup: string | undefined;
    partitionId: string | undefined;
  } {
    const parts = address.replace(/^amqps?:\/\/[^/]+\//, '').split('/');
    const hub = parts[0] ?? '';
    let consumerGroup: string | undefined;
    let partitionId: string | undefined;
    for (let i = 1; i + 1 < parts.length; i += 2) {
      const key = parts[i]?.toLowerCase();
      if (key === 'consumergroups') consumerGroup = parts[i + 1];
      if (key === 'partitions') partitionId = parts[i + 1];
    }
    return { hub, consumerGroup, partitionId };
  }

  /** Hub name from a CBS audience `sb://host[:port]/<hub>[/...]`. */
  function hubOfAudience(audience: string): string {
    return audience.replace(/^[a-z]+:\/\/[^/]+\//i, '').split('/')[0] ?? '';
  }

  // ---- replies on $cbs / $management -------------------------------------------------------------------------
  function reply(
    connection: Connection,
    request: Message,
    status: number,
    description: string,
    condition?: string,
    body?: unknown,
  ): void {
    const replyTo = request.reply_to;
    const sender = connection.find_sender((s: Sender) => s.name === replyTo);
    if (!sender) return; // the client went away
    const properties: Record<string, unknown> = {
      'status-code': status,
      'status-description': description,
    };
    if (condition !== undefined) properties['error-condition'] = condition;
    sender.send({
      correlation_id: request.message_id,
      application_properties: properties,
      body: body ?? null,
    } as Message);
  }

  function onPutToken(connection: Connection, request: Message): void {
    const props = (request.application_properties ?? {}) as Record<string, unknown>;
    const audience = String(props.name ?? '');
    const tokenType = String(props.type ?? '');
    const token = typeof request.body === 'string' ? request.body : '';
    const fault = takeFault('cbs', hubOfAudience(audience));
    if (fault !== undefined && fault.kind in CONDITIONS) {
      const c = CONDITIONS[fault.kind as keyof typeof CONDITIONS];
      tokenLog.push({ audience, tokenType, accepted: false, reason: `injected ${fault.kind}` });
      reply(
        connection,
        request,
        c.status,
        faultDescription(fault.kind, hubOfAudience(audience)),
        c.condition,
      );
      return;
    }
    let reason: TokenVerdict;
    if (props.operation !== 'put-token') reason = `unsupported $cbs operation ${String(props.operation)}`;
    else if (tokenType === SAS_TOKEN_TYPE) reason = verifySasToken(token, audience, sasKeys, now());
    else if (tokenType === JWT_TOKEN_TYPE) reason = checkJwt(token, audience);
    else reason = `unsupported token type ${tokenType}`;
    tokenLog.push({
      audience,
      tokenType,
      accepted: reason === undefined,
      reason,
      ...(tokenType === JWT_TOKEN_TYPE ? { jwtClaims: decodeJwtClaims(token) } : {}),
    });
    if (reason === undefined) reply(connection, request, 202, 'Accepted');
    else {
      const echo = options.echoRejectedTokens === true ? ` (received token: ${token})` : '';
      reply(connection, request, 401, `Unauthorized: ${reason}${echo}`, 'amqp:unauthorized-access');
    }
  }

  function onManagement(connection: Connection, request: Message): void {
    stats.managementRequests += 1;
    const props = (request.application_properties ?? {}) as Record<string, unknown>;
    const hubName = String(props.name ?? '');
    const fault = takeFault('management', hubName);
    if (fault !== undefined && fault.kind in CONDITIONS) {
      const c = CONDITIONS[fault.kind as keyof typeof CONDITIONS];
      reply(connection, request, c.status, faultDescription(fault.kind, hubName), c.condition);
      return;
    }
    if (props.operation !== 'READ') {
      reply(
        connection,
        request,
        400,
        `unsupported operation ${String(props.operation)}`,
        'amqp:not-implemented',
      );
      return;
    }
    if (typeof props.security_token !== 'string' || props.security_token === '') {
      reply(connection, request, 401, 'missing security_token', 'amqp:unauthorized-access');
      return;
    }
    const hub = hubs.get(hubName);
    if (!hub) {
      reply(
        connection,
        request,
        404,
        `The messaging entity '${hubName}' could not be found.`,
        'amqp:not-found',
      );
      return;
    }
    if (props.type === 'com.microsoft:eventhub') {
      reply(connection, request, 200, 'OK', undefined, {
        name: hub.name,
        created_at: types.wrap_timestamp(hub.createdAt.getTime()),
        partition_ids: hub.partitions.map((p) => p.id),
        georeplication_factor: types.wrap_int(1),
      });
      return;
    }
    if (props.type === 'com.microsoft:partition') {
      const partition = hub.partitions.find((p) => p.id === String(props.partition));
      if (!partition) {
        reply(
          connection,
          request,
          400,
          `partition ${String(props.partition)} is out of range`,
          'com.microsoft:argument-out-of-range',
        );
        return;
      }
      const last = partition.events.at(-1)?.received;
      reply(connection, request, 200, 'OK', undefined, {
        name: hub.name,
        partition: partition.id,
        begin_sequence_number: types.wrap_long(partition.events.length > 0 ? 0 : -1),
        last_enqueued_sequence_number: types.wrap_long(last ? last.sequenceNumber : -1),
        last_enqueued_offset: last ? last.offset : '-1',
        last_enqueued_time_utc: types.wrap_timestamp(last ? last.enqueuedTimeUtc.getTime() : 0),
        is_partition_empty: partition.events.length === 0,
      });
      return;
    }
    reply(connection, request, 400, `unsupported type ${String(props.type)}`, 'com.microsoft:argument-error');
  }

  // ---- publishing ----------------------------------------------------------------------------------------
  function choosePartition(
    hub: HubState,
    explicit: string | undefined,
    key: string | undefined,
  ): PartitionState {
    if (explicit !== undefined) {
      const p = hub.partitions.find((x) => x.id === explicit);
      if (p) return p;
    }
    if (key !== undefined) return hub.partitions[partitionForKey(key, hub.partitions.length)]!;
    roundRobin = (roundRobin + 1) % hub.partitions.length;
    return hub.partitions[roundRobin]!;
  }

  function bodyBuffers(envelope: Message): Buffer[] {
    const body = envelope.body as { content?: unknown; multiple?: boolean } | Buffer | undefined;
    if (Buffer.isBuffer(body)) return [body];
    if (body && typeof body === 'object') {
      if (Array.isArray(body.content)) return body.content as Buffer[];
      if (Buffer.isBuffer(body.content)) return [body.content];
    }
    return [];
  }

  function storeEvent(
    hub: HubState,
    partition: PartitionState,
    raw: Buffer,
    fallbackKey: string | undefined,
    transport: ReceivedEvent['transport'] = 'amqp',
  ): void {
    const event = messageCodec.decode(raw) as unknown as Message;
    const annotations = (event.message_annotations ?? {}) as Record<string, unknown>;
    const key = (annotations['x-opt-partition-key'] as string | undefined) ?? fallbackKey;
    const bodyBytes = bodyBuffers(event)[0] ?? Buffer.alloc(0);
    let body: unknown = bodyBytes;
    try {
      body = JSON.parse(bodyBytes.toString('utf8'));
    } catch {
      // not JSON: keep the bytes
    }
    const sequenceNumber = partition.events.length;
    const received: ReceivedEvent = {
      hub: hub.name,
      partitionId: partition.id,
      partitionKey: key,
      messageId: event.message_id === undefined ? undefined : String(event.message_id),
      contentType: event.content_type,
      body,
      bodyBytes,
      transport,
      applicationProperties: { ...((event.application_properties ?? {}) as Record<string, unknown>) },
      sequenceNumber,
      offset: String(sequenceNumber),
      enqueuedTimeUtc: new Date(now()),
    };
    partition.events.push({ received, raw });
    for (const consumer of partition.consumers) pump(consumer);
  }

  function onTransfer(context: EventContext, hubName: string, partitionId: string | undefined): void {
    stats.transfers += 1;
    const delivery = context.delivery as Delivery;
    const hub = hubs.get(hubName);
    if (!hub) {
      delivery.reject({
        condition: 'amqp:not-found',
        description: `The messaging entity '${hubName}' could not be found.`,
      });
      return;
    }
    const fault = takeFault('send', hubName);
    if (fault !== undefined) {
      if (fault.kind === 'never-settle') return;
      if (fault.kind === 'released') {
        delivery.release({ delivery_failed: false });
        return;
      }
      if (fault.kind === 'drop-connection') {
        dropConnection(context.connection);
        return;
      }
      const c = CONDITIONS[fault.kind];
      delivery.reject({ condition: c.condition, description: faultDescription(fault.kind, hubName) });
      return;
    }
    const payload = context.message as unknown;
    let envelope: Message;
    let size: number;
    if (Buffer.isBuffer(payload)) {
      size = payload.length;
      envelope = messageCodec.decode(payload) as unknown as Message;
    } else {
      envelope = payload as Message;
      size = messageCodec.encode(envelope).length;
    }
    if (size > maxMessageSize) {
      delivery.reject({
        condition: 'amqp:link:message-size-exceeded',
        description: `The received message (${size} bytes) exceeds the limit (${maxMessageSize} bytes).`,
      });
      return;
    }
    const envelopeAnnotations = (envelope.message_annotations ?? {}) as Record<string, unknown>;
    const envelopeKey = envelopeAnnotations['x-opt-partition-key'] as string | undefined;
    const partition = choosePartition(hub, partitionId, envelopeKey);
    const events = Buffer.isBuffer(payload) ? bodyBuffers(envelope) : [messageCodec.encode(envelope)];
    for (const raw of events) storeEvent(hub, partition, raw, envelopeKey);
    delivery.accept();
  }

  // ---- consuming -----------------------------------------------------------------------------------------
  function startIndex(partition: PartitionState, filter: string | undefined): number {
    if (filter === undefined) return partition.events.length; // default position: latest
    const m = /amqp\.annotation\.x-opt-(offset|sequence-number|enqueued-time)\s*(>=|>)\s*'([^']*)'/.exec(
      filter,
    );
    if (!m) return partition.events.length;
    const [, field, op, value] = m;
    const inclusive = op === '>=';
    if (field === 'offset' && value === '@latest') return partition.events.length;
    if (field === 'offset' && value === '-1') return 0;
    if (field === 'enqueued-time') {
      const t = Number(value);
      const i = partition.events.findIndex((e) =>
        inclusive ? e.received.enqueuedTimeUtc.getTime() >= t : e.received.enqueuedTimeUtc.getTime() > t,
      );
      return i === -1 ? partition.events.length : i;
    }
    const n = Number(value); // offsets are the sequence numbers as strings
    return Math.max(0, inclusive ? n : n + 1);
  }

  function pump(consumer: ConsumerLink): void {
    const { sender, partition } = consumer;
    while (consumer.next < partition.events.length && sender.is_open() && sender.sendable()) {
      const stored = partition.events[consumer.next]!;
      consumer.next += 1;
      const msg = messageCodec.decode(stored.raw) as unknown as Message;
      const r = stored.received;
      msg.message_annotations = {
        ...((msg.message_annotations ?? {}) as Record<string, unknown>),
        'x-opt-sequence-number': types.wrap_long(r.sequenceNumber),
        'x-opt-offset': r.offset,
        'x-opt-enqueued-time': types.wrap_timestamp(r.enqueuedTimeUtc.getTime()),
        ...(r.partitionKey === undefined ? {} : { 'x-opt-partition-key': r.partitionKey }),
      };
      if (consumer.runtimeMetric) {
        const last = partition.events.at(-1)!.received;
        msg.delivery_annotations = {
          last_enqueued_sequence_number: types.wrap_long(last.sequenceNumber),
          last_enqueued_offset: last.offset,
          last_enqueued_time_utc: types.wrap_timestamp(last.enqueuedTimeUtc.getTime()),
          runtime_info_retrieval_time_utc: types.wrap_timestamp(now()),
        };
      }
      sender.send(msg);
    }
  }

  function onConsumerOpen(context: EventContext): void {
    const sender = context.sender as Sender;
    const source = sender.source as { address?: string; filter?: Record<string, { value?: unknown }> };
    const { hub: hubName, consumerGroup, partitionId } = parseAddress(source.address ?? '');
    const hub = hubs.get(hubName);
    if (!hub) {
      sender.close({
        condition: 'amqp:not-found',
        description: `The messaging entity '${hubName}' could not be found.`,
      });
      return;
    }
    if (consumerGroup === undefined || !consumerGroups.has(consumerGroup)) {
      sender.close({
        condition: 'amqp:not-found',
        description: `The messaging entity '${hubName}/ConsumerGroups/${consumerGroup}' could not be found.`,
      });
      return;
    }
    const partition = hub.partitions.find((p) => p.id === partitionId);
    if (!partition) {
      sender.close({
        condition: 'com.microsoft:argument-out-of-range',
        description: `partition ${partitionId} is out of range`,
      });
      return;
    }
    const linkProps = (sender.properties ?? {}) as Record<string, unknown>;
    const rawEpoch = linkProps['com.microsoft:epoch'];
    const epoch = rawEpoch === undefined || rawEpoch === null ? undefined : Number(rawEpoch);
    const existing = [...partition.consumers];
    const maxEpoch = Math.max(-1, ...existing.map((c) => c.epoch ?? -1));
    const hasEpochLink = existing.some((c) => c.epoch !== undefined);
    if ((epoch === undefined && hasEpochLink) || (epoch !== undefined && epoch < maxEpoch)) {
      sender.close({
        condition: 'amqp:link:stolen',
        description: 'A receiver with a higher epoch already exists on this partition.',
      });
      return;
    }
    if (epoch !== undefined) {
      for (const other of existing) {
        partition.consumers.delete(other);
        other.sender.close({
          condition: 'amqp:link:stolen',
          description: `New receiver with epoch ${epoch} was opened; this receiver is disconnected.`,
        });
      }
    }
    sender.set_source(source as never);
    const capabilities = ([] as unknown[]).concat(sender.desired_capabilities ?? []).map(String);
    const filterValue = source.filter?.[SELECTOR_FILTER]?.value;
    const consumer: ConsumerLink = {
      sender,
      partition,
      next: startIndex(partition, typeof filterValue === 'string' ? filterValue : undefined),
      epoch,
      runtimeMetric: capabilities.includes('com.microsoft:enable-receiver-runtime-metric'),
    };
    partition.consumers.add(consumer);
    (sender as unknown as { __consumer?: ConsumerLink }).__consumer = consumer;
  }

  function consumerOf(sender: Sender | undefined): ConsumerLink | undefined {
    return (sender as unknown as { __consumer?: ConsumerLink } | undefined)?.__consumer;
  }

  function forgetConsumer(sender: Sender | undefined): void {
    const consumer = consumerOf(sender);
    consumer?.partition.consumers.delete(consumer);
  }

  // ---- connections ---------------------------------------------------------------------------------------
  function dropConnection(connection: Connection): void {
    connections.delete(connection);
    try {
      connection.close({
        condition: 'amqp:connection:forced',
        description: 'The connection was closed by the test double.',
      });
    } catch {
      // already closed
    }
    const socket = (connection as unknown as { socket?: Socket }).socket;
    // Destroy after the close frame is flushed; destroying with an error makes rhea release its timers.
    setImmediate(() => socket?.destroy(new Error('connection dropped by the Event Hubs test double')));
  }

  const container = rhea.create_container({ id: `event-hubs-double-${randomBytes(4).toString('hex')}` });

  container.on('connection_open', (context: EventContext) => {
    stats.connectionsOpened += 1;
    connections.add(context.connection);
  });
  const forget = (context: EventContext) => connections.delete(context.connection);
  container.on('connection_close', forget);
  container.on('disconnected', forget);
  container.on('connection_error', forget);
  // rhea throws on unhandled error events; the double reports link errors through the SDK instead.
  container.on('error', () => {});
  container.on('protocol_error', () => {});

  container.on('receiver_open', (context: EventContext) => {
    const receiver = context.receiver as Receiver;
    const target = (receiver.target as { address?: string } | undefined)?.address ?? '';
    receiver.set_target(receiver.target as never);
    receiver.set_source(receiver.source as never);
    if (target === '$cbs' || target === '$management') return;
    const { hub, partitionId } = parseAddress(target);
    const hubState = hubs.get(hub);
    if (!hubState) {
      receiver.close({
        condition: 'amqp:not-found',
        description: `The messaging entity '${hub}' could not be found.`,
      });
      return;
    }
    if (partitionId !== undefined && !hubState.partitions.some((p) => p.id === partitionId)) {
      receiver.close({
        condition: 'com.microsoft:argument-out-of-range',
        description: `partition ${partitionId} is out of range`,
      });
    }
  });

  container.on('sender_open', (context: EventContext) => {
    const sender = context.sender as Sender;
    const address = (sender.source as { address?: string } | undefined)?.address ?? '';
    if (address === '$cbs' || address === '$management' || sender.name.startsWith('cbs-')) {
      sender.set_source(sender.source as never);
      sender.set_target(sender.target as never);
      return;
    }
    if (!address.includes('/')) {
      // A management/CBS reply link: its name equals its target address (a UUID).
      sender.set_source(sender.source as never);
      sender.set_target(sender.target as never);
      return;
    }
    onConsumerOpen(context);
  });

  container.on('sendable', (context: EventContext) => {
    const consumer = consumerOf(context.sender);
    if (consumer) pump(consumer);
  });
  container.on('sender_close', (context: EventContext) => forgetConsumer(context.sender));

  container.on('message', (context: EventContext) => {
    const receiver = context.receiver as Receiver;
    const target = (receiver.target as { address?: string } | undefined)?.address ?? '';
    if (target === '$cbs') {
      (context.delivery as Delivery).accept();
      onPutToken(context.connection, context.message as Message);
      return;
    }
    if (target === '$management') {
      (context.delivery as Delivery).accept();
      onManagement(context.connection, context.message as Message);
      return;
    }
    const { hub, partitionId } = parseAddress(target);
    onTransfer(context, hub, partitionId);
  });

  const listenOptions = {
    host: '127.0.0.1',
    port: options.port ?? 0,
    tcp_no_delay: true,
    receiver_options: { max_message_size: maxMessageSize, autoaccept: false, credit_window: 100 },
    sender_options: { autosettle: true },
  };
  let namespaceHost = '';
  const restFront = createHttpServer(
    restFrontHandler({
      get namespaceHost() {
        return namespaceHost;
      },
      hubExists: (hub) => hubs.has(hub),
      maxMessageSize,
      verifySas: (token, audiences) => {
        let verdict: TokenVerdict = 'no audience';
        for (const audience of audiences) {
          verdict = verifySasToken(token, audience, sasKeys, now());
          if (verdict === undefined) return undefined;
        }
        return verdict;
      },
      verifyJwt: (token, audience) => checkJwt(token, audience),
      fault(hub) {
        stats.restRequests += 1;
        const fault = takeFault('send', hub);
        if (fault === undefined) return undefined;
        if (fault.kind === 'never-settle') return 'hang';
        if (fault.kind === 'drop-connection') return 'drop';
        if (fault.kind === 'released') return { status: 503, text: 'injected fault: released' };
        return { status: CONDITIONS[fault.kind].status, text: faultDescription(fault.kind, hub) };
      },
      store(hubName, partitionId, key, raw) {
        const hub = hubs.get(hubName)!;
        storeEvent(hub, choosePartition(hub, partitionId, key), raw, key, 'rest');
      },
      echoRejectedTokens: options.echoRejectedTokens ?? false,
      log: restLog,
    }),
  );
  /** TLS mode: the first bytes say AMQP ("AMQP" protocol header) or HTTP (a request line). */
  function routeTlsSocket(socket: TLSSocket): void {
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first.subarray(0, 4).toString('latin1') === 'AMQP') {
        container.create_connection(listenOptions as never).accept(socket as never);
      } else {
        restFront.emit('connection', socket);
      }
      socket.resume();
    });
  }
  const server: Server = tlsMode
    ? createTlsServer({ key: options.tls!.key, cert: options.tls!.cert }, routeTlsSocket)
    : (container.listen(listenOptions as never) as unknown as Server);
  server.on(tlsMode ? 'secureConnection' : 'connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  if (tlsMode) server.listen(listenOptions.port, listenOptions.host);
  await new Promise<void>((resolve, reject) => {
    if (server.listening) resolve();
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  namespaceHost = `127.0.0.1:${port}`;
  const endpoint = `sb://${namespaceHost}/`;

  return {
    port,
    namespaceHost,
    endpoint,
    sasKeyName,
    sasKey,
    connectionString(hub: string): string {
      const emulator = tlsMode ? '' : ';UseDevelopmentEmulator=true';
      return `Endpoint=${endpoint};SharedAccessKeyName=${sasKeyName};SharedAccessKey=${sasKey};EntityPath=${hub}${emulator}`;
    },
    received(hub?: string): ReceivedEvent[] {
      const all: ReceivedEvent[] = [];
      for (const h of hubs.values()) {
        if (hub !== undefined && h.name !== hub) continue;
        for (const p of h.partitions) for (const e of p.events) all.push(e.received);
      }
      // arrival order across partitions (enqueued time, then partition/sequence for ties)
      return all.sort(
        (a, b) =>
          a.enqueuedTimeUtc.getTime() - b.enqueuedTimeUtc.getTime() ||
          Number(a.partitionId) - Number(b.partitionId) ||
          a.sequenceNumber - b.sequenceNumber,
      );
    },
    tokens: () => [...tokenLog],
    restRequests: () => [...restLog],
    stats: () => ({ ...stats }),
    setFault(fault: EventHubsFault): void {
      const stage = fault.stage ?? 'send';
      if (
        stage !== 'send' &&
        (fault.kind === 'never-settle' || fault.kind === 'released' || fault.kind === 'drop-connection')
      ) {
        throw new Error(`fault ${fault.kind} applies to stage 'send' only`);
      }
      faults.push({ ...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY, toSkip: fault.skip ?? 0 });
    },
    clearFaults(): void {
      faults.length = 0;
    },
    dropConnections(): number {
      const all = [...connections];
      for (const c of all) dropConnection(c);
      return all.length;
    },
    openConnections: () => connections.size,
    async close(): Promise<void> {
      if (closing) return;
      closing = true;
      for (const c of [...connections]) dropConnection(c);
      await new Promise<void>((resolve) => setImmediate(resolve));
      for (const socket of sockets) socket.destroy(new Error('Event Hubs test double closed'));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

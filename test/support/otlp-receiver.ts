/**
 * Real OTLP receivers for tests, bound to 127.0.0.1 only:
 * - startOtlpHttpReceiver(): OTLP/HTTP on /v1/logs, decoding application/x-protobuf (protobufjs with the
 *   small .proto subset below) and application/json (gzip accepted) into one normalized shape.
 * - startOtlpGrpcReceiver(): the gRPC LogsService/Export method (@grpc/grpc-js, same proto subset).
 * Both are scriptable: queue replies (HTTP status + headers / gRPC status) or hang (never answer).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { type ServerTls, serverTlsOptions } from './tls-certs.ts';

/** OTLP logs subset (field numbers from opentelemetry-proto); enough to decode what the exporters send. */
export const OTLP_LOGS_PROTO = `
syntax = "proto3";
package opentelemetry.proto;
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope {
  string name = 1;
  string version = 2;
  repeated KeyValue attributes = 3;
  uint32 dropped_attributes_count = 4;
}
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message LogRecord {
  fixed64 time_unix_nano = 1;
  fixed64 observed_time_unix_nano = 11;
  int32 severity_number = 2;
  string severity_text = 3;
  AnyValue body = 5;
  repeated KeyValue attributes = 6;
  uint32 dropped_attributes_count = 7;
  fixed32 flags = 8;
  bytes trace_id = 9;
  bytes span_id = 10;
  string event_name = 12;
}
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
message ExportLogsServiceResponse {}
`;

const root = protobuf.parse(OTLP_LOGS_PROTO, { keepCase: true }).root;
const RequestType = root.lookupType('opentelemetry.proto.ExportLogsServiceRequest');

/** A log record as received, identical for protobuf, JSON and gRPC. */
export interface ReceivedLogRecord {
  /** Nanoseconds since the epoch, as a decimal string. */
  timeUnixNano: string;
  observedTimeUnixNano: string;
  severityNumber: number;
  severityText: string;
  eventName: string;
  body: unknown;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  scope: { name: string; version: string };
}

export interface ReceivedRequest {
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  records: ReceivedLogRecord[];
}

// ---- normalization (works on protobufjs toObject output with keepCase and on OTLP/JSON) ----

type Obj = Record<string, unknown>;
const pick = (o: Obj, snake: string, camel: string): unknown => o[snake] ?? o[camel];

function anyValue(v: unknown): unknown {
  if (v === null || v === undefined) return undefined;
  const o = v as Obj;
  const s = pick(o, 'string_value', 'stringValue');
  if (s !== undefined) return s;
  const b = pick(o, 'bool_value', 'boolValue');
  if (b !== undefined) return b;
  const i = pick(o, 'int_value', 'intValue');
  if (i !== undefined) return Number(i);
  const d = pick(o, 'double_value', 'doubleValue');
  if (d !== undefined) return Number(d);
  const a = pick(o, 'array_value', 'arrayValue') as Obj | undefined;
  if (a !== undefined) return ((a.values as unknown[]) ?? []).map(anyValue);
  const kv = pick(o, 'kvlist_value', 'kvlistValue') as Obj | undefined;
  if (kv !== undefined) return keyValues(kv.values as unknown[]);
  const bytes = pick(o, 'bytes_value', 'bytesValue');
  if (bytes !== undefined) return bytes;
  return undefined;
}

function keyValues(list: unknown[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) {
    const { key, value } = kv as { key: string; value: unknown };
    out[key] = anyValue(value);
  }
  return out;
}

/** Flatten an ExportLogsServiceRequest (protobuf object or OTLP/JSON) into records with their resource. */
export function normalizeExportRequest(request: Obj): ReceivedLogRecord[] {
  const out: ReceivedLogRecord[] = [];
  for (const rl of (pick(request, 'resource_logs', 'resourceLogs') as Obj[] | undefined) ?? []) {
    const resource = keyValues(((rl.resource as Obj | undefined)?.attributes as unknown[]) ?? []);
    for (const sl of (pick(rl, 'scope_logs', 'scopeLogs') as Obj[] | undefined) ?? []) {
      const scopeObj = (sl.scope as Obj | undefined) ?? {};
      const scope = { name: String(scopeObj.name ?? ''), version: String(scopeObj.version ?? '') };
      for (const lr of (pick(sl, 'log_records', 'logRecords') as Obj[] | undefined) ?? []) {
        out.push({
          timeUnixNano: String(pick(lr, 'time_unix_nano', 'timeUnixNano') ?? '0'),
          observedTimeUnixNano: String(pick(lr, 'observed_time_unix_nano', 'observedTimeUnixNano') ?? '0'),
          severityNumber: Number(pick(lr, 'severity_number', 'severityNumber') ?? 0),
          severityText: String(pick(lr, 'severity_text', 'severityText') ?? ''),
          eventName: String(pick(lr, 'event_name', 'eventName') ?? ''),
          body: anyValue(lr.body),
          attributes: keyValues(lr.attributes as unknown[]),
          resource,
          scope,
        });
      }
    }
  }
  return out;
}

/** Decode a binary ExportLogsServiceRequest. */
export function decodeProtobufRequest(bytes: Uint8Array): ReceivedLogRecord[] {
  const message = RequestType.decode(bytes);
  const object = RequestType.toObject(message, { longs: String, defaults: false, arrays: true });
  return normalizeExportRequest(object);
}

// ---- HTTP receiver ----

/** One scripted HTTP reply; `hang: true` never answers (the client must time out). */
export type HttpReply = { status: number; headers?: Record<string, string>; body?: string } | { hang: true };

export interface OtlpHttpReceiver {
  /** Base URL, e.g. http://127.0.0.1:12345 */
  url: string;
  /** Full logs URL: url + /v1/logs */
  logsUrl: string;
  /** Successfully accepted requests (answered 2xx). */
  readonly accepted: ReceivedRequest[];
  /** Every request that reached the receiver, including rejected ones. */
  readonly attempts: ReceivedRequest[];
  /** Records of all accepted requests, in arrival order. */
  acceptedRecords(): ReceivedLogRecord[];
  /** Queue replies for the next requests; afterwards the default reply (200) applies again. */
  enqueue(...replies: HttpReply[]): void;
  /** Reply used when the queue is empty (default 200). */
  setDefault(reply: HttpReply): void;
  /** Answers by content: consulted first for each decoded request; undefined lets the queue/default answer. */
  setResponder(responder: ((records: ReceivedLogRecord[]) => HttpReply | undefined) | undefined): void;
  close(): Promise<void>;
}

/** With `options.tls`: OTLP over HTTPS (test/support/tls-certs.ts), mutual TLS when `tls.clientCa` is set. */
export async function startOtlpHttpReceiver(options: { tls?: ServerTls } = {}): Promise<OtlpHttpReceiver> {
  const queue: HttpReply[] = [];
  let fallback: HttpReply = { status: 200 };
  let responder: ((records: ReceivedLogRecord[]) => HttpReply | undefined) | undefined;
  const accepted: ReceivedRequest[] = [];
  const attempts: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    const contentType = String(req.headers['content-type'] ?? '');
    if (req.method !== 'POST' || req.url !== '/v1/logs') {
      res.writeHead(404).end();
      return;
    }
    let records: ReceivedLogRecord[];
    try {
      records = contentType.includes('json')
        ? normalizeExportRequest(JSON.parse(body.toString('utf8')) as Obj)
        : decodeProtobufRequest(body);
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`cannot decode: ${String(error)}`);
      return;
    }
    const received: ReceivedRequest = { contentType, headers: req.headers, records };
    attempts.push(received);
    const reply = responder?.(records) ?? queue.shift() ?? fallback;
    if ('hang' in reply) {
      hanging.add(res);
      return;
    }
    if (reply.status >= 200 && reply.status < 300) accepted.push(received);
    const json = contentType.includes('json');
    res
      .writeHead(reply.status, {
        'content-type': json ? 'application/json' : 'application/x-protobuf',
        ...reply.headers,
      })
      .end(reply.body ?? (json ? '{}' : ''));
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  };
  const server: Server =
    options.tls === undefined
      ? createServer(listener)
      : createHttpsServer(serverTlsOptions(options.tls), listener);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`;
  return {
    url,
    logsUrl: `${url}/v1/logs`,
    accepted,
    attempts,
    acceptedRecords: () => accepted.flatMap((r) => r.records),
    enqueue: (...replies) => queue.push(...replies),
    setDefault: (reply) => {
      fallback = reply;
    },
    setResponder: (fn) => {
      responder = fn;
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

// ---- gRPC receiver ----

/** One scripted gRPC reply: OK, an error status, or no answer at all. */
export type GrpcReply = { code: 'ok' } | { code: grpc.status; details?: string } | { hang: true };

export interface OtlpGrpcReceiver {
  /** http://127.0.0.1:port (insecure), https:// with TLS */
  url: string;
  readonly accepted: { metadata: Record<string, unknown>; records: ReceivedLogRecord[] }[];
  readonly attempts: number;
  acceptedRecords(): ReceivedLogRecord[];
  enqueue(...replies: GrpcReply[]): void;
  close(): Promise<void>;
}

/** With `options.tls`: gRPC over TLS (test/support/tls-certs.ts), mutual TLS when `tls.clientCa` is set. */
export async function startOtlpGrpcReceiver(options: { tls?: ServerTls } = {}): Promise<OtlpGrpcReceiver> {
  const queue: GrpcReply[] = [];
  const accepted: { metadata: Record<string, unknown>; records: ReceivedLogRecord[] }[] = [];
  let attempts = 0;
  const server = new grpc.Server();
  const service: grpc.ServiceDefinition = {
    Export: {
      path: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: Buffer) => value,
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: (bytes: Buffer) => bytes,
    },
  };
  server.addService(service, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      attempts++;
      const reply = queue.shift() ?? { code: 'ok' };
      if ('hang' in reply) return;
      if (reply.code !== 'ok') {
        callback({ code: reply.code, details: reply.details ?? 'scripted failure' });
        return;
      }
      accepted.push({ metadata: call.metadata.getMap(), records: decodeProtobufRequest(call.request) });
      callback(null, Buffer.alloc(0));
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    const tls = options.tls;
    const credentials =
      tls === undefined
        ? grpc.ServerCredentials.createInsecure()
        : grpc.ServerCredentials.createSsl(
            tls.clientCa === undefined ? null : Buffer.from(tls.clientCa),
            [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
            tls.clientCa !== undefined,
          );
    server.bindAsync('127.0.0.1:0', credentials, (error, p) => (error ? reject(error) : resolve(p)));
  });
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    accepted,
    get attempts() {
      return attempts;
    },
    acceptedRecords: () => accepted.flatMap((r) => r.records),
    enqueue: (...replies) => queue.push(...replies),
    close: async () => {
      server.forceShutdown();
    },
  };
}

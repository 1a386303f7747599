/**
 * The Event Hubs test double's HTTPS front (TLS mode only, on the same port as AMQP: the first bytes of a
 * connection say which protocol it speaks): the REST "send event" API — POST /{hub}/messages and
 * /{hub}/partitions/{id}/messages?api-version=2014-01 — with SAS or Entra (JWT) auth, BrokerProperties
 * (MessageId, PartitionKey), the Content-Type and custom-property headers. An accepted event is turned into the
 * AMQP message the real service would store (data-section body, message id, content type, application properties,
 * partition key annotation) and stored like a published one, so AMQP consumers read it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Message } from 'rhea';
import rhea from 'rhea';

const { message: messageCodec } = rhea;

/** Headers that are part of the protocol, not custom (application) properties. */
const PROTOCOL_HEADERS = new Set([
  'authorization',
  'brokerproperties',
  'connection',
  'content-length',
  'content-type',
  'expect',
  'host',
  'transfer-encoding',
  'user-agent',
  'accept',
  'accept-encoding',
]);

/** One REST request as the double saw it. */
export interface RestRequestRecord {
  hub: string;
  status: number;
  /** 'sas', 'jwt' or 'none'. */
  auth: 'sas' | 'jwt' | 'none';
  /** Why it was refused, when it was. */
  reason: string | undefined;
}

/** What the REST front needs from the double. */
export interface RestFrontDeps {
  /** The namespace host as clients name it (127.0.0.1:<port>). */
  namespaceHost: string;
  hubExists(hub: string): boolean;
  maxMessageSize: number;
  /** Undefined when accepted, else the reason. `audiences`: the resource forms a token may name. */
  verifySas(token: string, audiences: readonly string[]): string | undefined;
  verifyJwt(token: string, audience: string): string | undefined;
  /** An injected fault for a send to `hub`: an HTTP status and text, 'hang' or 'drop'; undefined for none. */
  fault(hub: string): { status: number; text: string } | 'hang' | 'drop' | undefined;
  /** Stores the encoded AMQP message (partition chosen like an AMQP send) and returns the partition id. */
  store(hub: string, partitionId: string | undefined, key: string | undefined, raw: Buffer): void;
  echoRejectedTokens: boolean;
  log: RestRequestRecord[];
}

/** `"x"` → x (the REST API's quoted string values); anything else as sent. */
function propertyValue(text: string): unknown {
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/** Parses /{hub}/messages or /{hub}/partitions/{id}/messages. */
function parsePath(pathname: string): { hub: string; partitionId: string | undefined } | undefined {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  if (parts.length === 2 && parts[1]!.toLowerCase() === 'messages')
    return { hub: parts[0]!, partitionId: undefined };
  if (
    parts.length === 4 &&
    parts[1]!.toLowerCase() === 'partitions' &&
    parts[3]!.toLowerCase() === 'messages'
  ) {
    return { hub: parts[0]!, partitionId: parts[2]! };
  }
  return undefined;
}

/** The request handler of the HTTPS front. */
export function restFrontHandler(deps: RestFrontDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', `https://${deps.namespaceHost}`);
    const target = parsePath(url.pathname);
    const respond = (status: number, text: string, record: Omit<RestRequestRecord, 'status'>): void => {
      deps.log.push({ ...record, status });
      res.writeHead(status, { 'content-type': 'application/xml; charset=utf-8' });
      res.end(status === 201 ? '' : `<Error><Code>${status}</Code><Detail>${text}</Detail></Error>`);
    };
    if (target === undefined) {
      respond(404, `no such resource ${url.pathname}`, { hub: '', auth: 'none', reason: 'path' });
      req.resume();
      return;
    }
    const { hub, partitionId } = target;
    if (req.method !== 'POST') {
      respond(405, 'only POST sends events', { hub, auth: 'none', reason: 'method' });
      req.resume();
      return;
    }
    const authorization = req.headers.authorization ?? '';
    let auth: RestRequestRecord['auth'] = 'none';
    let refused: string | undefined = 'no Authorization header';
    const resource = `${deps.namespaceHost}/${hub}`;
    if (authorization.startsWith('SharedAccessSignature ')) {
      auth = 'sas';
      refused = deps.verifySas(authorization, [`https://${resource}`, `sb://${resource}`, resource]);
    } else if (/^Bearer\s+/i.test(authorization)) {
      auth = 'jwt';
      refused = deps.verifyJwt(authorization.replace(/^Bearer\s+/i, ''), `https://${resource}`);
    }
    if (refused !== undefined) {
      const echo = deps.echoRejectedTokens ? ` (token: ${authorization})` : '';
      respond(401, `InvalidSignature: ${refused}${echo}`, { hub, auth, reason: refused });
      req.resume();
      return;
    }
    if (!deps.hubExists(hub)) {
      respond(404, `The messaging entity '${hub}' could not be found.`, { hub, auth, reason: 'not-found' });
      req.resume();
      return;
    }
    const fault = deps.fault(hub);
    if (fault === 'hang') return;
    if (fault === 'drop') {
      req.socket.destroy();
      return;
    }
    if (fault !== undefined) {
      respond(fault.status, fault.text, { hub, auth, reason: 'fault' });
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= deps.maxMessageSize) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > deps.maxMessageSize) {
        respond(
          413,
          `The received message (${size} bytes) exceeds the limit (${deps.maxMessageSize} bytes).`,
          {
            hub,
            auth,
            reason: 'too-large',
          },
        );
        return;
      }
      let broker: Record<string, unknown> = {};
      try {
        const header = req.headers.brokerproperties;
        if (typeof header === 'string' && header !== '')
          broker = JSON.parse(header) as Record<string, unknown>;
      } catch {
        respond(400, 'BrokerProperties is not JSON', { hub, auth, reason: 'broker-properties' });
        return;
      }
      const applicationProperties: Record<string, unknown> = {};
      for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!;
        const lower = name.toLowerCase();
        if (PROTOCOL_HEADERS.has(lower) || lower.startsWith('x-ms-')) continue;
        applicationProperties[name] = propertyValue(req.rawHeaders[i + 1]!);
      }
      const key = typeof broker.PartitionKey === 'string' ? broker.PartitionKey : undefined;
      const message: Message = {
        body: messageCodec.data_section(Buffer.concat(chunks)),
        ...(typeof broker.MessageId === 'string' ? { message_id: broker.MessageId } : {}),
        ...(req.headers['content-type'] === undefined ? {} : { content_type: req.headers['content-type'] }),
        application_properties: applicationProperties,
        ...(key === undefined ? {} : { message_annotations: { 'x-opt-partition-key': key } }),
      } as Message;
      deps.store(hub, partitionId, key, messageCodec.encode(message));
      respond(201, '', { hub, auth, reason: undefined });
    });
  };
}

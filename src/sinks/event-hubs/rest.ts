/**
 * Heartbeats over the Event Hubs REST "send event" API (docs/sinks-event-hubs.md, "Heartbeat transport"): pure
 * parts only — the connection string's parts, the SAS token, the request for one event. The I/O lives in
 * ./rest-send.ts. Light on purpose (node:crypto and the event mapping only): a heartbeat sent this way does not
 * load @azure/event-hubs (about 12 MiB of heap and 12 MiB of code an idle forwarder would otherwise carry).
 *
 * The contract (Microsoft's "Send event" and "Common parameters and headers" pages of the Event Hubs REST API):
 * POST https://{namespace}/{eventHubPath}/messages?timeout=60&api-version=2014-01, Authorization `SharedAccessSignature
 * sr=&sig=&se=&skn=` or `Bearer <Entra token>` (audience https://eventhubs.azure.net/), the broker properties
 * (MessageId, PartitionKey) as JSON in the BrokerProperties header, Content-Type as the event's content type,
 * application properties as headers; 201 when accepted.
 */
import type { ForwarderEvent } from '../../domain/index.ts';
import {
  CLOUDEVENTS_CONTENT_TYPE,
  cloudEventsProperties,
  type PartitionKeyMode,
  partitionKeyFor,
} from './event.ts';

const { createHmac } = process.getBuiltinModule('node:crypto');

/** The REST API version the send-event calls use. */
export const REST_API_VERSION = '2014-01';
/** Lifetime of a SAS token built for one heartbeat (a heartbeat is one request; the token is not reused). */
export const SAS_LIFETIME_SECONDS = 300;

/** What a heartbeat over REST needs from a connection string (SAS key auth). */
export interface RestConnection {
  /** host[:port] of the namespace, from Endpoint (sb://host[:port]/). */
  host: string;
  /** The hub: EntityPath or the sink's eventHubName. */
  eventHubName: string;
  keyName: string;
  key: string;
}

/**
 * Why a connection string cannot send heartbeats over REST (so the sink sends them with the SDK), or undefined
 * when it can. Never quotes the string (a secret).
 */
export type RestUnsupported = 'emulator' | 'shared-access-signature';

/**
 * Parses a connection string for the REST heartbeat path. Returns the reason when the string is valid but not
 * for REST (the emulator form; a connection string carrying a ready SharedAccessSignature, whose lifetime we do
 * not control). Throws an Error naming the problem and the fix, never quoting the input.
 */
export function parseRestConnection(
  connectionString: string,
  eventHubName: string | undefined,
): RestConnection | RestUnsupported {
  const parts = new Map<string, string>();
  for (const raw of connectionString.split(';')) {
    const part = raw.trim();
    if (part === '') continue;
    const split = part.indexOf('=');
    if (split <= 0) {
      throw new Error(
        'Event Hubs connection string is malformed (a part is not Key=Value); fix: copy it again from the portal (Shared access policies)',
      );
    }
    parts.set(part.slice(0, split).trim().toLowerCase(), part.slice(split + 1).trim());
  }
  if (/^true$/i.test(parts.get('usedevelopmentemulator') ?? '')) return 'emulator';
  if (parts.has('sharedaccesssignature')) return 'shared-access-signature';
  const endpoint = parts.get('endpoint');
  const keyName = parts.get('sharedaccesskeyname');
  const key = parts.get('sharedaccesskey');
  if (!endpoint || !keyName || !key) {
    throw new Error(
      'Event Hubs connection string lacks Endpoint, SharedAccessKeyName or SharedAccessKey; fix: copy the whole string of a shared access policy with the Send claim',
    );
  }
  let host: string;
  try {
    host = new URL(endpoint).host;
  } catch {
    throw new Error(
      'Event Hubs connection string has an Endpoint that is not a URL (expected sb://<namespace>.servicebus.windows.net/); fix: copy it again from the portal',
    );
  }
  const hub = parts.get('entitypath') || eventHubName;
  if (!host || !hub) {
    throw new Error(
      'Event Hubs connection string names no event hub (no EntityPath) and the sink has no eventHubName; fix: set eventHubName',
    );
  }
  return { host, eventHubName: hub, keyName, key };
}

/**
 * A SAS token for `resource` (the documented algorithm: HMAC-SHA256 with the key over `urlencode(resource)`, a
 * newline and the expiry in epoch seconds; the signature base64, then URL-encoded).
 */
export function buildSasToken(resource: string, keyName: string, key: string, expirySeconds: number): string {
  const sr = encodeURIComponent(resource);
  const se = String(expirySeconds);
  const sig = createHmac('sha256', key).update(`${sr}\n${se}`).digest('base64');
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=${se}&skn=${encodeURIComponent(keyName)}`;
}

/** One send-event request, ready for ./rest-send.ts. */
export interface RestRequest {
  url: URL;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * The URL of the send-event call for `hub` at `host` (host[:port]); `customEndpointAddress` (the sink option:
 * private endpoints, gateways, tests) replaces the host and port as it does for AMQP.
 */
export function sendEventUrl(host: string, hub: string, customEndpointAddress?: string): URL {
  const url = new URL(`https://${host}/`);
  if (customEndpointAddress !== undefined) {
    const custom = new URL(customEndpointAddress);
    url.hostname = custom.hostname;
    url.port = custom.port;
  }
  url.pathname = `/${encodeURIComponent(hub)}/messages`;
  url.search = `?timeout=60&api-version=${REST_API_VERSION}`;
  return url;
}

/**
 * The application properties of ./event.ts as HTTP headers. HTTP header names cannot contain ':', so they take the
 * CloudEvents AMQP binding's alternative prefix `cloudEvents_` (docs/record-format.md); values are JSON strings,
 * as the REST API reads custom properties (a quoted string stays a string).
 */
export function propertyHeaders(event: ForwarderEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(cloudEventsProperties(event))) {
    const text = value instanceof Date ? value.toISOString() : value;
    headers[name.replace(/^cloudEvents:/, 'cloudEvents_')] = JSON.stringify(text);
  }
  return headers;
}

/** The send-event request for one event: the same body, message id, partition key and properties as over AMQP. */
export function buildSendEventRequest(
  event: ForwarderEvent,
  options: { url: URL; authorization: string; partitionKey: PartitionKeyMode },
): RestRequest {
  const key = partitionKeyFor(event, options.partitionKey);
  const brokerProperties = { MessageId: event.id, ...(key === undefined ? {} : { PartitionKey: key }) };
  const body = Buffer.from(JSON.stringify(event), 'utf8');
  return {
    url: options.url,
    headers: {
      authorization: options.authorization,
      'content-type': CLOUDEVENTS_CONTENT_TYPE,
      'content-length': String(body.length),
      brokerproperties: JSON.stringify(brokerProperties),
      ...propertyHeaders(event),
    },
    body,
  };
}

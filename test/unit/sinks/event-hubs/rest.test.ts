/**
 * The pure parts of heartbeats over the Event Hubs REST API (src/sinks/event-hubs/rest.ts, rest-send.ts): the
 * connection string's parts, the SAS token (checked by the test double's independent verifier), the request, and
 * the redaction of what a server may echo.
 */
import { describe, expect, it } from 'vitest';
import { cloudEventsProperties } from '../../../../src/sinks/event-hubs/event.ts';
import {
  buildSasToken,
  buildSendEventRequest,
  parseRestConnection,
  propertyHeaders,
  sendEventUrl,
} from '../../../../src/sinks/event-hubs/rest.ts';
import { authorizationSecrets, scrubResponseBody } from '../../../../src/sinks/event-hubs/rest-send.ts';
import { verifySasToken } from '../../../support/event-hubs-double/tokens.ts';
import { heartbeatOf } from '../../../support/fleet-records.ts';

const KEY = 'c2VjcmV0LWtleS1vZi10aGUtdGVzdHMtMTIzNDU2Nzg5MA==';
const CONN = `Endpoint=sb://myns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=${KEY};EntityPath=lifecycle`;

describe('parseRestConnection', () => {
  it('takes host, hub, key name and key from a policy connection string', () => {
    expect(parseRestConnection(CONN, undefined)).toEqual({
      host: 'myns.servicebus.windows.net',
      eventHubName: 'lifecycle',
      keyName: 'send',
      key: KEY,
    });
    // Without EntityPath the sink's eventHubName names the hub; a port (private gateways, the test double) stays.
    const noPath = `Endpoint=sb://127.0.0.1:5671/;SharedAccessKeyName=send;SharedAccessKey=${KEY}`;
    expect(parseRestConnection(noPath, 'hub2')).toMatchObject({
      host: '127.0.0.1:5671',
      eventHubName: 'hub2',
    });
  });

  it('leaves the emulator form and ready SharedAccessSignature strings to the SDK', () => {
    expect(parseRestConnection(`${CONN};UseDevelopmentEmulator=true`, undefined)).toBe('emulator');
    expect(
      parseRestConnection(
        'Endpoint=sb://myns.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=a&sig=b&se=1&skn=c;EntityPath=x',
        undefined,
      ),
    ).toBe('shared-access-signature');
  });

  it('refuses bad strings with the problem and the fix, never quoting the string', () => {
    const cases: Array<[string, RegExp]> = [
      [`Endpoint=sb://myns/;SharedAccessKey;${KEY}`, /malformed.*fix: copy it again/],
      [`Endpoint=sb://myns/;SharedAccessKeyName=send;EntityPath=x`, /lacks .*SharedAccessKey.*fix:/],
      [`Endpoint=not a url;SharedAccessKeyName=send;SharedAccessKey=${KEY};EntityPath=x`, /not a URL.*fix:/],
      [
        `Endpoint=sb://myns/;SharedAccessKeyName=send;SharedAccessKey=${KEY}`,
        /no event hub.*fix: set eventHubName/,
      ],
    ];
    for (const [text, message] of cases) {
      let error: Error | undefined;
      try {
        parseRestConnection(text, undefined);
      } catch (e) {
        error = e as Error;
      }
      expect(error?.message, text).toMatch(message);
      expect(error?.message).not.toContain(KEY);
    }
  });
});

describe('buildSasToken', () => {
  it('builds the documented token, which an independent verifier accepts for the hub and refuses once expired', () => {
    const resource = 'https://myns.servicebus.windows.net/lifecycle';
    const token = buildSasToken(resource, 'send', KEY, 2_000_000_000);
    expect(token).toMatch(
      /^SharedAccessSignature sr=https%3A%2F%2Fmyns\.servicebus\.windows\.net%2Flifecycle&sig=[^&]+&se=2000000000&skn=send$/,
    );
    const keys = { send: KEY };
    expect(verifySasToken(token, `${resource}/messages`, keys, 1_900_000_000_000)).toBeUndefined();
    expect(verifySasToken(token, `${resource}/messages`, keys, 2_000_000_001_000)).toBe('SAS token expired');
    expect(verifySasToken(token, `${resource}/messages`, { send: 'b3RoZXI=' }, 0)).toMatch(/does not match/);
    expect(verifySasToken(token, 'https://myns.servicebus.windows.net/other', keys, 0)).toMatch(
      /does not cover/,
    );
  });
});

describe('the send-event request', () => {
  const heartbeat = heartbeatOf({ vm: 'web_7', at: 60 });

  it('posts to /{hub}/messages of the namespace, or of customEndpointAddress', () => {
    expect(sendEventUrl('myns.servicebus.windows.net', 'lifecycle').href).toBe(
      'https://myns.servicebus.windows.net/lifecycle/messages?timeout=60&api-version=2014-01',
    );
    expect(sendEventUrl('myns.servicebus.windows.net', 'lifecycle', 'https://gw.internal:8443').href).toBe(
      'https://gw.internal:8443/lifecycle/messages?timeout=60&api-version=2014-01',
    );
  });

  it('carries the body, message id, partition key, content type and properties of the AMQP event', () => {
    const url = sendEventUrl('myns.servicebus.windows.net', 'lifecycle');
    const request = buildSendEventRequest(heartbeat, {
      url,
      authorization: 'Bearer t',
      partitionKey: 'vmId',
    });
    expect(JSON.parse(request.body.toString('utf8'))).toEqual(heartbeat);
    expect(JSON.parse(request.headers.brokerproperties!)).toEqual({
      MessageId: heartbeat.id,
      PartitionKey: heartbeat.vmid,
    });
    expect(request.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(request.headers['content-length']).toBe(String(request.body.length));
    const none = buildSendEventRequest(heartbeat, { url, authorization: 'Bearer t', partitionKey: 'none' });
    expect(JSON.parse(none.headers.brokerproperties!)).toEqual({ MessageId: heartbeat.id });
    // Every cloudEvents:* property as cloudEvents_* (':' is not allowed in a header name), JSON-quoted.
    const amqp = cloudEventsProperties(heartbeat);
    const headers = propertyHeaders(heartbeat);
    expect(Object.keys(headers).sort()).toEqual(
      Object.keys(amqp)
        .map((k) => k.replace(':', '_'))
        .sort(),
    );
    expect(headers.cloudEvents_id).toBe(JSON.stringify(heartbeat.id));
    expect(headers.cloudEvents_time).toBe(JSON.stringify(new Date(heartbeat.time).toISOString()));
    for (const name of Object.keys(request.headers)) expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});

describe('redaction of what a server echoes', () => {
  it('removes the token, the signature (both encodings) and known secrets from a response body', () => {
    const token = buildSasToken('https://myns.servicebus.windows.net/lifecycle', 'send', KEY, 2_000_000_000);
    const sig = decodeURIComponent(/sig=([^&]+)/.exec(token)![1]!);
    const echoed = `401 InvalidSignature: token ${token} sig ${sig} encoded ${encodeURIComponent(sig)}`;
    const scrubbed = scrubResponseBody(echoed, authorizationSecrets(token));
    expect(scrubbed).toMatch(/^401 InvalidSignature/);
    expect(scrubbed).not.toContain(sig);
    expect(scrubbed).not.toContain(encodeURIComponent(sig));
    expect(scrubbed).not.toContain('sig=');
    const bearer = 'Bearer eyJhbGciOiJub25lIn0.eyJhdWQiOiJ4In0.c2lnbmF0dXJl';
    expect(scrubResponseBody(`bad ${bearer.slice(7)}`, authorizationSecrets(bearer))).not.toContain('eyJ');
  });
});

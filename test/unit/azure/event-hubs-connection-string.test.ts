/**
 * The light connection-string check (no @azure/event-hubs at start-up) must accept and reject exactly what the
 * SDK's parseEventHubConnectionString does, and find the same EntityPath.
 */
import { parseEventHubConnectionString } from '@azure/event-hubs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEventHubsConnectionString } from '../../../src/azure/event-hubs-connection-string.ts';

type Outcome = { ok: true; eventHubName: string | undefined } | { ok: false };

function sdk(text: string): Outcome {
  try {
    return { ok: true, eventHubName: parseEventHubConnectionString(text).eventHubName };
  } catch {
    return { ok: false };
  }
}

function light(text: string): Outcome {
  try {
    return { ok: true, eventHubName: parseEventHubsConnectionString(text).eventHubName };
  } catch {
    return { ok: false };
  }
}

const EXAMPLES = [
  'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=abc=;EntityPath=hub',
  'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=abc',
  'Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;',
  'Endpoint=sb://ns/;SharedAccessSignature=SharedAccessSignature sr=x&sig=y;EntityPath=h',
  ' ; Endpoint = sb://ns/ ; EntityPath = hub ; ',
  'Endpoint=sb://ns/;EntityPath=',
  'Endpoint=sb://ns/;SharedAccessKey=abc',
  'Endpoint=sb://ns/;SharedAccessKeyName=send',
  'Endpoint=sb://ns/;SharedAccessSignature=s;SharedAccessKey=k;SharedAccessKeyName=n',
  'SharedAccessKeyName=send;SharedAccessKey=abc',
  'Endpoint=',
  'Endpoint',
  '=sb://ns/',
  'not a connection string',
  '',
];

describe('parseEventHubsConnectionString', () => {
  it.each(EXAMPLES)('agrees with the SDK on %j', (text) => {
    expect(light(text)).toEqual(sdk(text));
  });

  it('agrees with the SDK on generated key=value strings', () => {
    const key = fc.constantFrom(
      'Endpoint',
      'EntityPath',
      'SharedAccessKey',
      'SharedAccessKeyName',
      'SharedAccessSignature',
      ' Endpoint ',
      '',
      'Other',
    );
    const value = fc.constantFrom('', ' ', 'sb://ns.servicebus.windows.net/', 'hub', 'a=b', 'x ');
    const part = fc.oneof(
      fc.tuple(key, value).map(([k, v]) => `${k}=${v}`),
      key,
      fc.string({ maxLength: 6 }),
    );
    const text = fc.array(part, { maxLength: 6 }).map((parts) => parts.join(';'));
    fc.assert(
      fc.property(text, (t) => {
        expect(light(t)).toEqual(sdk(t));
      }),
      { numRuns: 2000 },
    );
  });

  it('never quotes the secret in its error', () => {
    expect(() => parseEventHubsConnectionString('Endpoint=sb://ns/;SharedAccessKey=TOPSECRET')).toThrow(
      /^(?!.*TOPSECRET)/,
    );
  });
});

/** Pure parts of the Event Hubs sink and its test double: error classification, event mapping, token checks. */
import { MessagingError } from '@azure/event-hubs';
import { describe, expect, it } from 'vitest';
import {
  classifyEventHubsError,
  describeError,
  toEventData,
} from '../../../../src/sinks/event-hubs/index.ts';
import { createSasToken, decodeJwtClaims } from '../../../support/event-hubs-double/index.ts';
import { verifyJwt, verifySasToken } from '../../../support/event-hubs-double/tokens.ts';
import { vmRecord } from '../../../support/records.ts';

function sdkError(code: string, retryable: boolean): MessagingError {
  const e = new MessagingError(`${code} happened`);
  e.code = code;
  e.retryable = retryable;
  return e;
}

describe('classifyEventHubsError', () => {
  it.each([
    ['ServerBusyError', true, true, undefined, 'ServerBusy'],
    ['ServiceUnavailableError', true, true, undefined, 'ServiceUnavailable'],
    ['OperationTimeoutError', true, true, undefined, 'OperationTimeout'],
    ['ConnectionForcedError', true, true, undefined, 'ConnectionForced'],
    ['ECONNREFUSED', true, true, undefined, 'network'],
    ['ENOTFOUND', true, false, 'destination', 'name-not-resolved'],
    ['UnauthorizedError', true, false, 'destination', 'Unauthorized'],
    ['QuotaExceededError', false, true, undefined, 'QuotaExceeded'],
    ['SendOperationFailedError', false, true, undefined, 'SendOperationFailed'],
    ['MessagingEntityNotFoundError', false, false, 'destination', 'MessagingEntityNotFound'],
    ['MessagingEntityDisabledError', false, false, 'destination', 'MessagingEntityDisabled'],
    ['MessageTooLargeError', false, false, 'record', 'payload-too-large'],
    ['ArgumentOutOfRangeError', false, false, 'record', 'ArgumentOutOfRange'],
  ])(
    '%s (SDK retryable %s) → retryable %s, permanent for %s',
    (code, sdkRetryable, retryable, scope, short) => {
      const classified = classifyEventHubsError(sdkError(code, sdkRetryable));
      expect(classified).toMatchObject({ retryable, code: short });
      expect(classified.scope).toBe(scope);
      if (scope === 'destination') expect(classified.refusal).toMatch(/; fix: /);
    },
  );

  it('a token endpoint that refuses the credential (4xx) refuses the destination; one that fails (5xx) is retried', () => {
    const refused = Object.assign(new Error('AADSTS7000215: Invalid client secret provided'), {
      name: 'AuthenticationError',
      statusCode: 401,
    });
    const failing = Object.assign(new Error('server error'), {
      name: 'AuthenticationError',
      statusCode: 503,
    });
    expect(classifyEventHubsError(refused)).toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'AuthenticationFailed',
    });
    expect(classifyEventHubsError(failing)).toMatchObject({ retryable: true, code: 'AuthenticationFailed' });
  });

  it('decides an AggregateError by its last attempt', () => {
    const agg = new AggregateError([
      sdkError('ServerBusyError', true),
      sdkError('MessagingEntityNotFoundError', false),
    ]);
    expect(classifyEventHubsError(agg)).toMatchObject({ retryable: false, code: 'MessagingEntityNotFound' });
    expect(describeError(agg)).toMatch(/^2 attempts failed; last: MessagingEntityNotFoundError/);
  });

  it('treats identity failures, aborts and unknown errors as retryable', () => {
    const unavailable = Object.assign(new Error('no MI endpoint'), { name: 'CredentialUnavailableError' });
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(classifyEventHubsError(unavailable)).toMatchObject({
      retryable: true,
      code: 'CredentialUnavailable',
    });
    expect(classifyEventHubsError(abort)).toMatchObject({ retryable: true, code: 'aborted' });
    expect(classifyEventHubsError(new Error('?'))).toMatchObject({ retryable: true, code: 'unknown' });
    expect(classifyEventHubsError('weird')).toMatchObject({ retryable: true, code: 'unknown' });
  });
});

describe('toEventData', () => {
  it('maps a record to a structured-mode CloudEvent with cloudEvents:* properties', () => {
    const record = vmRecord(1);
    const event = toEventData(record);
    expect(event.body).toBe(record);
    expect(event.messageId).toBe(record.id);
    expect(event.contentType).toBe('application/cloudevents+json; charset=utf-8');
    expect(event.properties).toEqual({
      'cloudEvents:specversion': '1.0',
      'cloudEvents:id': record.id,
      'cloudEvents:source': record.source,
      'cloudEvents:type': record.type,
      'cloudEvents:subject': record.subject,
      'cloudEvents:time': new Date(record.time),
      'cloudEvents:transition': 'scheduled',
      'cloudEvents:maintenancetype': 'Reboot',
      'cloudEvents:vmid': record.vmid,
    });
  });

  it('keeps an unparsable time as text instead of an invalid timestamp', () => {
    const record = { ...vmRecord(2), time: 'not a time' };
    expect(toEventData(record).properties?.['cloudEvents:time']).toBe('not a time');
  });
});

describe('double token checks', () => {
  const now = Date.UTC(2026, 0, 1);
  const audience = 'sb://127.0.0.1:5672/lifecycle';

  it('accepts a correctly signed SAS token and names what is wrong with a bad one', () => {
    const keys = { Root: 'a2V5' };
    const good = createSasToken(audience, 'Root', 'a2V5', now / 1000 + 3600);
    expect(verifySasToken(good, audience, keys, now)).toBeUndefined();
    expect(
      verifySasToken(createSasToken(audience, 'Root', 'other', now / 1000 + 3600), audience, keys, now),
    ).toMatch(/signature/);
    expect(
      verifySasToken(createSasToken(audience, 'Root', 'a2V5', now / 1000 - 1), audience, keys, now),
    ).toMatch(/expired/);
    expect(verifySasToken(good, 'sb://127.0.0.1:5672/otherhub', keys, now)).toMatch(/does not cover/);
    expect(
      verifySasToken(createSasToken(audience, 'Nope', 'a2V5', now / 1000 + 60), audience, keys, now),
    ).toMatch(/unknown SAS key name/);
  });

  it('checks JWT audience and expiry', () => {
    const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
    const audiences = ['https://eventhubs.azure.net/'];
    expect(
      verifyJwt(jwt({ aud: 'https://eventhubs.azure.net/', exp: now / 1000 + 60 }), audiences, now),
    ).toBeUndefined();
    expect(verifyJwt(jwt({ aud: 'https://management.azure.com/' }), audiences, now)).toMatch(/audience/);
    expect(
      verifyJwt(jwt({ aud: 'https://eventhubs.azure.net/', exp: now / 1000 - 1 }), audiences, now),
    ).toMatch(/expired/);
    expect(verifyJwt('opaque', audiences, now)).toMatch(/not a JWT/);
    expect(decodeJwtClaims(jwt({ aud: 'x' }))).toEqual({ aud: 'x' });
  });
});

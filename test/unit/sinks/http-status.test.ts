import { describe, expect, it } from 'vitest';
import { classifyNetworkError, classifyResponse } from '../../../src/sinks/http/classify.ts';
import { httpFailureScope, isRetryableHttpStatus } from '../../../src/sinks/http-status.ts';
import { exportFailureToDeliveryError } from '../../../src/sinks/otel/errors.ts';
import { pagerDutyRefusal } from '../../../src/sinks/pagerduty/mapping.ts';

const STATUSES = [400, 401, 403, 404, 405, 407, 408, 409, 410, 413, 422, 425, 429, 500, 502, 503, 504];

describe('one retryable-HTTP-status policy', () => {
  it('retries 408, 425, 429 and 5xx; every other 4xx is permanent', () => {
    const retryable = STATUSES.filter(isRetryableHttpStatus);
    expect(retryable).toEqual([408, 425, 429, 500, 502, 503, 504]);
  });

  it.each(STATUSES)('webhook and OTel classify HTTP %i the same way', (status) => {
    const webhook = classifyResponse({ status, body: '', retryAfterMs: undefined }, 'webhook sink');
    const otel = exportFailureToDeliveryError(
      Object.assign(new Error('failed'), { code: status }),
      'http/protobuf',
      'x',
      1,
    );
    expect(webhook?.retryable).toBe(isRetryableHttpStatus(status));
    expect(otel.retryable).toBe(isRetryableHttpStatus(status));
    expect(webhook?.scope).toBe(otel.scope);
  });

  it('sorts the permanent statuses into the two classes: 401, 403, 404, 405, 407, 410 and redirects refuse the destination, every other 4xx the record', () => {
    const permanent = STATUSES.filter((s) => !isRetryableHttpStatus(s));
    expect(permanent.filter((s) => httpFailureScope(s) === 'destination')).toEqual([
      401, 403, 404, 405, 407, 410,
    ]);
    expect(permanent.filter((s) => httpFailureScope(s) === 'record')).toEqual([400, 409, 413, 422]);
    const redirect = classifyResponse({ status: 301, body: '', retryAfterMs: undefined }, 'sink w');
    expect(redirect).toMatchObject({ retryable: false, scope: 'destination', code: 'http-301' });
    expect(redirect?.message).toContain('fix: the URL must be final');
    const forbidden = classifyResponse({ status: 403, body: '', retryAfterMs: undefined }, 'sink w');
    expect(forbidden?.message).toBe(
      'sink w: HTTP 403 (permanent for the destination: the destination refuses this client; fix: give the credentials the sink sends permission to post there)',
    );
  });

  it("keys Slack's error strings on the body: the webhook or channel gone refuses the destination, a bad message the record", () => {
    const scope = (status: number, body: string) =>
      classifyResponse({ status, body, retryAfterMs: undefined }, 'sink s')?.scope;
    expect(scope(404, 'channel_not_found')).toBe('destination');
    expect(scope(410, 'channel_is_archived')).toBe('destination');
    expect(scope(403, 'invalid_token')).toBe('destination');
    expect(scope(500, 'no_service')).toBe('destination'); // the body wins over a retryable status
    expect(scope(400, 'invalid_blocks')).toBe('record');
    expect(scope(400, 'no_text')).toBe('record');
    expect(scope(404, 'invalid_payload')).toBe('record');
  });

  it('a host name that does not resolve refuses the destination; a DNS server that does not answer is retried', () => {
    const enotfound = Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.invalid'), {
      code: 'ENOTFOUND',
      hostname: 'hooks.example.invalid',
    });
    const wrapped = Object.assign(new TypeError('fetch failed'), { cause: enotfound });
    expect(classifyNetworkError(wrapped, 'sink w', false)).toMatchObject({
      code: 'name-not-resolved',
      retryable: false,
      scope: 'destination',
      message: expect.stringContaining('hooks.example.invalid does not resolve'),
    });
    const eaiAgain = Object.assign(new Error('getaddrinfo EAI_AGAIN hooks.example'), { code: 'EAI_AGAIN' });
    expect(classifyNetworkError(eaiAgain, 'sink w', false)).toMatchObject({
      code: 'network',
      retryable: true,
    });
    const grpc = Object.assign(
      new Error('14 UNAVAILABLE: Name resolution failed for target dns:otel.invalid:4317'),
      {
        code: 14,
      },
    );
    expect(exportFailureToDeliveryError(grpc, 'grpc', 'x', 1)).toMatchObject({
      code: 'name-not-resolved',
      scope: 'destination',
    });
  });

  it('OTLP over gRPC: credentials, authorization, a missing service refuse the destination; a bad request the records', () => {
    const grpc = (code: number) =>
      exportFailureToDeliveryError(Object.assign(new Error('refused'), { code }), 'grpc', 'x', 1);
    expect([16, 7, 5, 12].map((c) => grpc(c).scope)).toEqual([
      'destination',
      'destination',
      'destination',
      'destination',
    ]);
    expect([3, 6, 9].map((c) => grpc(c).scope)).toEqual(['record', 'record', 'record']);
    expect(grpc(14)).toMatchObject({ retryable: true, scope: undefined });
  });

  it("PagerDuty: a 400 about the routing key refuses the destination (PagerDuty's wording), any other 400 the record", () => {
    expect(pagerDutyRefusal(400, 'invalid event: Event object is invalid: Invalid routing key')).toMatch(
      /fix: set routingKey/,
    );
    expect(
      pagerDutyRefusal(400, "Length of 'routing_key' is incorrect (should be 32 characters)"),
    ).toBeDefined();
    expect(pagerDutyRefusal(400, "'payload.summary' is missing or blank")).toBeUndefined();
    expect(pagerDutyRefusal(429, 'Invalid routing key')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { classifyResponse } from '../../../src/sinks/http/classify.ts';
import { isRetryableHttpStatus } from '../../../src/sinks/http-status.ts';
import { exportFailureToDeliveryError } from '../../../src/sinks/otel/errors.ts';

const STATUSES = [400, 401, 403, 404, 408, 409, 410, 413, 422, 425, 429, 500, 502, 503, 504];

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
  });
});

import { describe, expect, it } from 'vitest';
import { parseRetryAfter, retryDelayAtLeastMs } from '../../../../src/backoff.ts';
import { buildInstanceMetadataUrl, buildScheduledEventsUrl } from '../../../../src/sources/imds/client.ts';
import { DEFAULT_API_VERSION, DEFAULT_IMDS_ENDPOINT } from '../../../../src/sources/imds/defaults.ts';

describe('buildScheduledEventsUrl', () => {
  it('builds the documented default URL (URL building only; nothing is requested)', () => {
    expect(buildScheduledEventsUrl(DEFAULT_IMDS_ENDPOINT, DEFAULT_API_VERSION)).toBe(
      'http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01',
    );
  });

  it('keeps a path prefix in the endpoint and tolerates a trailing slash', () => {
    expect(buildScheduledEventsUrl('http://127.0.0.1:8080/vms/vm-3', '2019-08-01')).toBe(
      'http://127.0.0.1:8080/vms/vm-3/metadata/scheduledevents?api-version=2019-08-01',
    );
    expect(buildScheduledEventsUrl('http://127.0.0.1:8080/vms/vm-3/', '2019-08-01')).toBe(
      'http://127.0.0.1:8080/vms/vm-3/metadata/scheduledevents?api-version=2019-08-01',
    );
    expect(buildInstanceMetadataUrl('http://127.0.0.1:9000', '2021-02-01')).toBe(
      'http://127.0.0.1:9000/metadata/instance?api-version=2021-02-01',
    );
  });

  it('rejects unusable endpoints with a clear message', () => {
    expect(() => buildScheduledEventsUrl('169.254.169.254', '2020-07-01')).toThrow(/invalid IMDS endpoint/);
    expect(() => buildScheduledEventsUrl('https://127.0.0.1', '2020-07-01')).toThrow(/plain http/);
    expect(() => buildScheduledEventsUrl('http://127.0.0.1', ' ')).toThrow(/api-version/);
  });
});

describe('retryDelayAtLeastMs (exponential backoff with full jitter)', () => {
  const options = { initialMs: 1000, maxMs: 10_000, maxRetryAfterMs: 60_000 };

  it('grows exponentially up to the cap, scaled by the random draw', () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelayAtLeastMs(a, options, top))).toEqual([
      999, 1999, 3999, 7999, 9999, 9999,
    ]);
    expect(retryDelayAtLeastMs(3, options, () => 0.5)).toBe(2000);
    expect(retryDelayAtLeastMs(3, options, () => 0)).toBe(0);
  });

  it('never waits less than Retry-After, capped', () => {
    expect(retryDelayAtLeastMs(1, options, () => 0, 5000)).toBe(5000);
    expect(retryDelayAtLeastMs(1, options, () => 0, 3_600_000)).toBe(60_000);
  });
});

describe('parseRetryAfter', () => {
  it('accepts delta-seconds and HTTP dates', () => {
    const now = Date.parse('2022-04-11T22:26:58Z');
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter('Mon, 11 Apr 2022 22:27:08 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Mon, 11 Apr 2022 22:20:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

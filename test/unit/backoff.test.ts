import { describe, expect, it } from 'vitest';
import { exponentialBackoffMs, fullJitterBackoffMs } from '../../src/backoff.ts';

describe('exponentialBackoffMs (the one exponential schedule)', () => {
  it('doubles from initialMs per attempt up to maxMs; attempt 0 or below counts as the first', () => {
    const options = { initialMs: 200, maxMs: 10_000 };
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map((a) => exponentialBackoffMs(a, options))).toEqual([
      200, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000,
    ]);
  });

  it('is the ceiling of the full-jitter delay', () => {
    const options = { initialMs: 1000, maxMs: 300_000 };
    for (const attempt of [1, 3, 9, 40]) {
      const ceiling = exponentialBackoffMs(attempt, options);
      expect(fullJitterBackoffMs(attempt, options, () => 1)).toBe(ceiling);
      expect(fullJitterBackoffMs(attempt, options, () => 0.5)).toBe(Math.floor(ceiling / 2));
    }
  });
});

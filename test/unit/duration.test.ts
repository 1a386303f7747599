/** The duration formatters of src/duration.ts keep the exact forms their readers know. */
import { describe, expect, it } from 'vitest';
import { formatDurationCompact, formatDurationMs, formatDurationSeconds } from '../../src/duration.ts';

describe('duration formatters', () => {
  it('formatDurationSeconds: the two largest units, for messages', () => {
    expect([0, 45, 840, 3600, 5400, 86_400, 90_000].map(formatDurationSeconds)).toEqual([
      '0 s',
      '45 s',
      '14 min',
      '1 h',
      '1 h 30 min',
      '1 d',
      '1 d 1 h',
    ]);
  });

  it('formatDurationMs: precise below a minute, for logs', () => {
    expect([850, 7000, 12_345, 245_000, 7_380_000].map(formatDurationMs)).toEqual([
      '850 ms',
      '7 s',
      '12.3 s',
      '4 min 5 s',
      '2 h 3 min',
    ]);
  });

  it('formatDurationCompact: whole seconds, never negative, for one-line CLI summaries', () => {
    expect([-5000, 45_000, 187_000, 11_520_000, 187_200_000].map(formatDurationCompact)).toEqual([
      '0s',
      '45s',
      '3m 7s',
      '3h 12m',
      '2d 4h',
    ]);
  });
});

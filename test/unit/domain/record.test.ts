import { describe, expect, it } from 'vitest';
import { TRANSITION_RANK, TRANSITIONS, transitionRank } from '../../../src/domain/index.ts';

describe('transition rank', () => {
  it('ranks every transition, in the natural order of one poll', () => {
    expect(Object.keys(TRANSITION_RANK).sort()).toEqual([...TRANSITIONS].sort());
    const ordered = ['scheduled', 'updated', 'approved', 'started', 'completed'].map(transitionRank);
    expect(ordered).toEqual([...ordered].sort((a, b) => a - b));
    expect(transitionRank('canceled')).toBe(transitionRank('completed'));
  });

  it('sorts an unknown transition after every known one', () => {
    const last = Math.max(...Object.values(TRANSITION_RANK));
    expect(transitionRank('retired')).toBeGreaterThan(last);
  });
});

/**
 * The per-outcome step (src/pipeline/step.ts) on its own, against a real SQLite store: a changed document is
 * committed with its routed records and wakes delivery; an unchanged one moves only the in-memory state (no
 * write); a failure commits nothing; approvals flow through the ApprovalParticipant interface.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type PollOutcome, type ScheduledEvent, TRANSITIONS } from '../../../src/domain/index.ts';
import { silentLogger } from '../../../src/log.ts';
import type { ApprovalParticipant, CommittedStep } from '../../../src/pipeline/participants.ts';
import { type ForwarderStats, PipelineStep } from '../../../src/pipeline/step.ts';
import { StallDetector } from '../../../src/sources/stall-detector.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { initialState } from '../../../src/transform/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { event, T0, VM } from '../transform/helpers.ts';

const tmp = makeTempDir('sef-step-');
let store: Store | undefined;
afterAll(() => tmp.cleanup());
afterEach(() => {
  store?.close();
  store = undefined;
});

const doc = (events: ScheduledEvent[], wallMs: number, changed: boolean, incarnation = 1): PollOutcome => ({
  kind: 'document',
  document: { DocumentIncarnation: incarnation, Events: events },
  observed: { wallMs, monotonicMs: wallMs - T0 },
  changed,
});

function setup(approval?: ApprovalParticipant) {
  store = openStore({
    stateDir: `${tmp.dir}/${Math.random().toString(36).slice(2)}`,
    logger: silentLogger(),
  });
  const stats: ForwarderStats = {
    outcomes: 0,
    failures: 0,
    commits: 0,
    commitFailures: 0,
    records: 0,
    unchangedPolls: 0,
  };
  let notified = 0;
  const step = new PipelineStep({
    store,
    logger: silentLogger(),
    stats,
    state: initialState(),
    routed: [{ name: 'out', filter: { transitions: [...TRANSITIONS], eventTypes: [], scope: 'all' } }],
    identity: { current: () => VM, refresh: async () => VM },
    bootTimeMs: T0 - 3_600_000,
    maxGapMs: 7_000,
    stall: new StallDetector(),
    approval,
    notify: () => notified++,
  });
  return { step, stats, store, notified: () => notified };
}

describe('PipelineStep', () => {
  it('commits a changed document with its records and wakes delivery; an unchanged one writes nothing', async () => {
    const { step, stats, store, notified } = setup();
    const e1 = event({ EventId: 'E1' });
    await step.onOutcome(doc([e1], T0, true));
    expect(stats).toMatchObject({ outcomes: 1, commits: 1, records: 1, unchangedPolls: 0 });
    expect(notified()).toBe(1);
    expect(step.aheadOfStore).toBe(false);
    expect(store.stats().find((q) => q.sink === 'out')?.pending).toBe(1);

    await step.onOutcome(doc([e1], T0 + 1000, false));
    expect(stats).toMatchObject({ outcomes: 2, commits: 1, unchangedPolls: 1 });
    expect(step.aheadOfStore).toBe(true); // the observation time moved in memory only
    expect(step.commit({ final: true })).toBe(true);
    expect(step.aheadOfStore).toBe(false);
    expect(stats.commits).toBe(2);
  });

  it('a failed poll changes nothing and commits nothing', async () => {
    const { step, stats } = setup();
    await step.onOutcome({
      kind: 'failure',
      reason: 'timeout',
      message: 'timed out',
      observed: { wallMs: T0, monotonicMs: 0 },
      consecutiveFailures: 1,
    });
    expect(stats).toMatchObject({ outcomes: 1, failures: 1, commits: 0 });
    expect(step.aheadOfStore).toBe(false);
  });

  it('asks the approval participant for pending approvals and tells it after every commit', async () => {
    const committed: CommittedStep[] = [];
    const approval: ApprovalParticipant = {
      start: () => {},
      pendingApprovals: () => [],
      afterCommit: (step) => committed.push(step),
      reconfigure: () => {},
      stop: async () => {},
    };
    const { step } = setup(approval);
    await step.onOutcome(doc([event({ EventId: 'E1' })], T0, true));
    expect(committed).toHaveLength(1);
    expect(committed[0]?.records.map((r) => r.transition)).toEqual(['scheduled']);
    expect(committed[0]?.state).toBe(step.state);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LifecycleRecord, PollOutcome, ScheduledEvent } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import {
  type ApprovalInput,
  type ForwarderState,
  initialState,
  restoreState,
  transform,
} from '../../../src/transform/index.ts';
import { event, T0, VM } from './helpers.ts';

const IDS = ['E1', 'E2', 'E3'] as const;
const NOT_BEFORE_CHOICES = [null, -600_000, 600_000, 7_200_000, 30 * 86_400_000] as const;

const eventArb: fc.Arbitrary<ScheduledEvent> = fc
  .record({
    id: fc.constantFrom(...IDS),
    started: fc.boolean(),
    notBefore: fc.constantFrom(...NOT_BEFORE_CHOICES),
    resources: fc.constantFrom(['WestNO_0'], ['WestNO_0', 'WestNO_1'], ['other_9']),
    duration: fc.constantFrom(-1, 5, 9),
    type: fc.constantFrom('Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'),
  })
  .map(({ id, started, notBefore, resources, duration, type }) =>
    event({
      EventId: id,
      EventStatus: started ? 'Started' : 'Scheduled',
      notBeforeMs: started || notBefore === null ? null : T0 + notBefore,
      Resources: [...resources],
      DurationInSeconds: duration,
      EventType: type,
    }),
  );

type Action =
  | { kind: 'document'; events: ScheduledEvent[]; incarnation: number }
  | { kind: 'failure' }
  | { kind: 'restart' };

interface Step {
  action: Action;
  /** Seconds since the previous step. */
  dt: number;
  reboot: boolean;
  stallMs: number | undefined;
  approvals: Array<{ id: string; leader: boolean; dryRun: boolean }>;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  action: fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('document' as const),
        events: fc.array(eventArb, { maxLength: 4 }),
        incarnation: fc.integer({ min: 0, max: 6 }),
      }),
    },
    { weight: 2, arbitrary: fc.constant({ kind: 'failure' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  ),
  dt: fc.constantFrom(1, 1, 1, 2, 5, 60, 3600),
  reboot: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  stallMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
  approvals: fc.array(
    fc.record({ id: fc.constantFrom(...IDS), leader: fc.boolean(), dryRun: fc.boolean() }),
    { maxLength: 1 },
  ),
});

const sequenceArb = fc.array(stepArb, { minLength: 1, maxLength: 40 });

interface Run {
  records: LifecycleRecord[];
  /** Events of the last successful document, by EventId. */
  lastDocumentIds: Set<string>;
  finalState: ForwarderState;
}

/** Runs a sequence; `withRestarts` false treats restart steps as no-ops (the state object is reused). */
function run(steps: readonly Step[], withRestarts: boolean): Run {
  let state = initialState();
  let nowMs = T0;
  let bootMs = T0 - 86_400_000;
  const records: LifecycleRecord[] = [];
  let lastDocumentIds = new Set<string>();
  for (const step of steps) {
    const previousMs = nowMs;
    nowMs += step.dt * 1000;
    if (step.reboot && step.dt > 3) bootMs = previousMs + (nowMs - previousMs) / 2;
    if (step.action.kind === 'restart') {
      if (withRestarts) state = restoreState(JSON.parse(JSON.stringify(state)));
      continue;
    }
    const observed = { wallMs: nowMs, monotonicMs: nowMs - T0 };
    const outcome: PollOutcome =
      step.action.kind === 'failure'
        ? { kind: 'failure', reason: 'network', message: 'ECONNRESET', observed, consecutiveFailures: 1 }
        : {
            kind: 'document',
            document: { DocumentIncarnation: step.action.incarnation, Events: step.action.events },
            observed,
            changed: true,
          };
    const approvals: ApprovalInput[] = step.approvals.map((a) => ({
      eventId: a.id,
      approvedAtMs: nowMs - 500,
      rule: 'property',
      leader: a.leader,
      dryRun: a.dryRun,
      hooks: [],
    }));
    const before = JSON.stringify(state);
    const result = transform(state, {
      outcome,
      vm: VM,
      hostBootTimeMs: bootMs,
      ...(step.stallMs === undefined ? {} : { maxStallMs: step.stallMs }),
      approvals,
    });
    expect(JSON.stringify(state)).toBe(before);
    if (outcome.kind === 'failure') {
      // The poll itself yields nothing; only approvals committed alongside are recorded.
      expect(result.records.every((record) => record.transition === 'approved')).toBe(true);
      if (approvals.length === 0) expect(result.state).toBe(state);
      else expect(result.state.events.map((e) => e.last)).toEqual(state.events.map((e) => e.last));
    } else {
      lastDocumentIds = new Set(outcome.document.Events.map((e) => e.EventId));
    }
    state = result.state;
    records.push(...result.records);
  }
  return { records, lastDocumentIds, finalState: state };
}

const TERMINAL = new Set(['completed', 'canceled']);

describe('transform properties (fast-check)', () => {
  it('records are valid, ids unique and deterministic, restarts transparent', () => {
    fc.assert(
      fc.property(sequenceArb, (steps) => {
        const withRestarts = run(steps, true);
        const again = run(steps, true);
        const noRestarts = run(steps, false);
        expect(again.records).toEqual(withRestarts.records);
        expect(noRestarts.records).toEqual(withRestarts.records);
        for (const record of withRestarts.records) expect(validateRecord(record)).toEqual([]);
        const ids = withRestarts.records.filter((r) => r.data.eventKnown !== false).map((r) => r.id);
        expect(new Set(ids).size).toBe(ids.length);
      }),
      { numRuns: 300 },
    );
  });

  it('each (EventId, occurrence, transition) at most once; every event that goes away ends exactly once', () => {
    fc.assert(
      fc.property(sequenceArb, (steps) => {
        const { records, lastDocumentIds, finalState } = run(steps, true);
        const byOccurrence = new Map<string, LifecycleRecord[]>();
        for (const record of records) {
          if (record.data.eventKnown === false) continue;
          const key = `${record.subject}#${String(record.data.occurrence)}`;
          byOccurrence.set(key, [...(byOccurrence.get(key) ?? []), record]);
        }
        for (const [key, list] of byOccurrence) {
          const transitions = list.map((r) => r.transition);
          for (const t of ['scheduled', 'started', 'completed', 'canceled'] as const) {
            expect(transitions.filter((x) => x === t).length, `${key} ${t}`).toBeLessThanOrEqual(1);
          }
          // It begins with exactly one of scheduled or started (first seen already Started).
          const lifecycle = transitions.filter((t) => t !== 'approved' && t !== 'updated');
          expect(['scheduled', 'started']).toContain(lifecycle[0]);
          if (lifecycle[0] === 'started') expect(list[0]?.data.firstSeenStatus).toBe('Started');
          const terminals = list.filter((r) => TERMINAL.has(r.transition));
          expect(terminals.length).toBeLessThanOrEqual(1);
          const terminal = terminals[0];
          const [eventId] = key.split('#');
          const stillTracked = finalState.events.some(
            (e) => e.eventId === eventId && `${e.eventId}#${e.occurrence}` === key,
          );
          if (terminal === undefined) {
            // Not ended: it must still be present (in the last document and the state).
            expect(stillTracked).toBe(true);
            expect(lastDocumentIds.has(eventId!)).toBe(true);
            continue;
          }
          expect(stillTracked).toBe(false);
          // The terminal is the last lifecycle record of the occurrence.
          expect(lifecycle[lifecycle.length - 1]).toBe(terminal.transition);
          const started = transitions.includes('started');
          if (terminal.transition === 'canceled') expect(started).toBe(false);
          if (terminal.transition === 'completed' && terminal.data.inferred === false)
            expect(started).toBe(true);
          if (terminal.transition === 'completed' && !started) expect(terminal.data.inferred).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a failed poll never changes the state, whatever came before', () => {
    fc.assert(
      fc.property(sequenceArb, fc.integer({ min: 0, max: 100_000 }), (steps, stall) => {
        const { finalState } = run(steps, true);
        const result = transform(finalState, {
          outcome: {
            kind: 'failure',
            reason: 'invalid-response',
            message: 'not JSON',
            observed: { wallMs: T0 + 10 ** 9, monotonicMs: 10 ** 9 },
            consecutiveFailures: 3,
          },
          vm: VM,
          hostBootTimeMs: T0 + 10 ** 9 - 1,
          maxStallMs: stall,
        });
        expect(result.records).toEqual([]);
        expect(result.state).toBe(finalState);
      }),
      { numRuns: 100 },
    );
  });
});

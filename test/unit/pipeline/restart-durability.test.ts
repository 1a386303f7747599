/**
 * The in-memory state running ahead of the committed one (src/pipeline/durability.ts), pure and table-driven:
 * a model of the pipeline — a changed document is transformed and committed, an unchanged one goes through
 * observeUnchanged() in memory and is committed only by the observation checkpoint — with graceful restarts
 * (the state is committed at shutdown), crashes (memory is lost: the next run starts from the committed
 * state) and reboots (a crash plus a boot time after the last observation).
 *
 * What must hold: the restart's gap is measured from the COMMITTED observation time (never later than the last
 * real observation), so a restart whose unwatched time cannot be shown to be within maxGapMs never yields
 * `canceled`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LifecycleRecord, ScheduledEvent, ScheduledEventsDocument } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { OBSERVATION_CHECKPOINT_MS, observationCheckpointDue } from '../../../src/pipeline/durability.ts';
import { documentFingerprint } from '../../../src/sources/capture/document.ts';
import {
  type ForwarderState,
  initialState,
  observeUnchanged,
  restoreState,
  transform,
} from '../../../src/transform/index.ts';
import { event, summary, T0, VM } from '../transform/helpers.ts';

const MAX_GAP_MS = 3_000;
const MIN = 60;
/** NotBefore far ahead (a cancellation can be shown whenever the event was watched continuously). */
const NB = T0 + 60 * MIN * 1000;
/** Boot time of every run unless a step says otherwise: a day before T0. */
const DEFAULT_BOOT = -86_400;

type PipelineStep =
  /** A successful poll at `at` seconds showing `events` (the same events as the previous poll = unchanged). */
  | { at: number; events: ScheduledEvent[]; stallMs?: number }
  /** A failed poll. */
  | { at: number; fail: true }
  /** The process stops: `graceful` commits memory first; `crash` (SIGKILL, power loss) does not. */
  | { at: number; stop: 'graceful' | 'crash' }
  /** The process starts again; `bootAt` (seconds) when the host rebooted meanwhile. */
  | { at: number; start: true; bootAt?: number };

interface PipelineRun {
  records: LifecycleRecord[];
  /** Number of commits (one per changed document, checkpoint or graceful stop). */
  commits: number;
  /** Polls handled by observeUnchanged (no diff). */
  unchanged: number;
  /** lastObservedAtMs of the committed state as each run started (after the first run). */
  durableObservedAtStart: Array<number | null>;
  /** True last observation (wall ms) before each restart. */
  trueLastObservedBeforeStart: Array<number | null>;
  memory: ForwarderState;
  durable: ForwarderState;
}

/** Runs steps through the pipeline model described in the module comment. */
function runPipeline(steps: readonly PipelineStep[], checkpointMs = OBSERVATION_CHECKPOINT_MS): PipelineRun {
  let durable = initialState();
  let memory = durable;
  let previousDocument: string | undefined; // fingerprint of the last document of THIS run
  let running = true;
  let bootMs = T0 + DEFAULT_BOOT * 1000;
  let incarnation = 0;
  let trueLastObservedMs: number | null = null;
  const out: PipelineRun = {
    records: [],
    commits: 0,
    unchanged: 0,
    durableObservedAtStart: [],
    trueLastObservedBeforeStart: [],
    memory,
    durable,
  };
  const commit = (): void => {
    durable = restoreState(JSON.parse(JSON.stringify(memory)));
    out.commits++;
  };
  for (const step of steps) {
    const wallMs = T0 + step.at * 1000;
    if ('stop' in step) {
      if (step.stop === 'graceful' && memory !== durable) commit();
      running = false;
      continue;
    }
    if ('start' in step) {
      expect(running, 'start only after a stop').toBe(false);
      if (step.bootAt !== undefined) bootMs = T0 + step.bootAt * 1000;
      memory = restoreState(JSON.parse(JSON.stringify(durable)));
      durable = memory;
      previousDocument = undefined; // the poller of a new process has no previous answer
      out.durableObservedAtStart.push(durable.lastObservedAtMs);
      out.trueLastObservedBeforeStart.push(trueLastObservedMs);
      running = true;
      continue;
    }
    expect(running, `poll at ${step.at} s while stopped`).toBe(true);
    if ('fail' in step) continue; // a failed poll changes nothing (transform returns the same state)
    const doc: ScheduledEventsDocument = { DocumentIncarnation: incarnation, Events: step.events };
    const fingerprint = documentFingerprint(doc);
    if (fingerprint === previousDocument) {
      out.unchanged++;
      memory = observeUnchanged(memory, {
        observedAtMs: wallMs,
        hostBootTimeMs: bootMs,
        ...(step.stallMs === undefined ? {} : { maxStallMs: step.stallMs }),
      });
      if (observationCheckpointDue(memory, durable.lastObservedAtMs, wallMs, checkpointMs)) commit();
    } else {
      incarnation++;
      const result = transform(memory, {
        outcome: {
          kind: 'document',
          document: { DocumentIncarnation: incarnation, Events: step.events },
          observed: { wallMs, monotonicMs: wallMs },
          changed: true,
        },
        vm: VM,
        hostBootTimeMs: bootMs,
        maxGapMs: MAX_GAP_MS,
        ...(step.stallMs === undefined ? {} : { maxStallMs: step.stallMs }),
      });
      for (const record of result.records) expect(validateRecord(record)).toEqual([]);
      out.records.push(...result.records);
      memory = result.state;
      commit();
      previousDocument = documentFingerprint({ DocumentIncarnation: incarnation, Events: step.events });
    }
    trueLastObservedMs = wallMs;
  }
  out.memory = memory;
  out.durable = durable;
  return out;
}

/** Polls every second from `from` to `to` (inclusive) showing the same events. */
function idle(from: number, to: number, events: ScheduledEvent[]): PipelineStep[] {
  const steps: PipelineStep[] = [];
  for (let at = from; at <= to; at++) steps.push({ at, events });
  return steps;
}

const S = (id: string) => event({ EventId: id, notBeforeMs: NB });
const STARTED = (id: string) => event({ EventId: id, EventStatus: 'Started', EventType: 'Reboot' });

interface Scenario {
  name: string;
  steps: PipelineStep[];
  expected: string[];
  check?: (run: PipelineRun) => void;
}

const scenarios: Scenario[] = [
  {
    name: 'restart after a long idle, graceful and quick: the stop committed the observation time → canceled',
    steps: [
      ...idle(0, 600, [S('A')]), // 10 minutes of the same document
      { at: 600.5, stop: 'graceful' },
      { at: 601, start: true },
      { at: 602, events: [] }, // 2 s unwatched ≤ 3 s
    ],
    expected: ['A:scheduled', 'A:canceled'],
    check: (run) => {
      expect(run.durableObservedAtStart).toEqual([T0 + 600_000]);
      // First document, one checkpoint a minute for ten minutes, the stop, the removal.
      expect(run.commits).toBe(1 + 10 + 1 + 1);
      expect(run.unchanged).toBe(600);
    },
  },
  {
    name: 'restart after a long idle, graceful but slow (more than maxGapMs unwatched) → completed, observation-gap',
    steps: [
      ...idle(0, 600, [S('A')]),
      { at: 600.5, stop: 'graceful' },
      { at: 610, start: true },
      { at: 611, events: [] },
    ],
    expected: ['A:scheduled', 'A:completed'],
    check: (run) => expect(run.records[1]?.data.reason).toBe('observation-gap'),
  },
  {
    name: 'crash after idle (SIGKILL), restarted at once: the gap runs from the last COMMIT, not the last poll → never canceled',
    steps: [
      ...idle(0, 30, [S('A')]), // unchanged polls: nothing committed after the first
      { at: 30.5, stop: 'crash' },
      { at: 31, start: true },
      { at: 32, events: [] }, // truly 2 s unwatched, but only the observation at 0 s is durable
    ],
    expected: ['A:scheduled', 'A:completed'],
    check: (run) => {
      expect(run.records[1]?.data.reason).toBe('observation-gap');
      expect(run.durableObservedAtStart).toEqual([T0]);
      expect(run.trueLastObservedBeforeStart).toEqual([T0 + 30_000]);
      expect(run.commits).toBe(2);
    },
  },
  {
    name: 'crash after a long idle with an event tracked: the checkpoint bounds the over-estimate to one minute',
    steps: [
      ...idle(0, 150, [S('A')]),
      { at: 150.5, stop: 'crash' },
      { at: 151, start: true },
      { at: 152, events: [] },
    ],
    expected: ['A:scheduled', 'A:completed'],
    check: (run) => {
      expect(run.records[1]?.data.reason).toBe('observation-gap');
      expect(run.durableObservedAtStart).toEqual([T0 + 120_000]); // checkpoints at 60 s and 120 s
      const [durable] = run.durableObservedAtStart;
      const [truth] = run.trueLastObservedBeforeStart;
      expect(truth! - durable!).toBeLessThanOrEqual(OBSERVATION_CHECKPOINT_MS);
    },
  },
  {
    name: 'days of idle without any event: nothing is written after the first document, and a later event is diffed normally',
    steps: [
      ...idle(0, 3 * 86_400, []).filter((s) => s.at % 600 === 0), // three days (a poll every 10 min is enough here)
      { at: 3 * 86_400 + 0.5, stop: 'crash' },
      { at: 3 * 86_400 + 1, start: true },
      { at: 3 * 86_400 + 2, events: [] }, // first document of the run: committed
      { at: 3 * 86_400 + 3, events: [event({ EventId: 'B', notBeforeMs: T0 + 4 * 86_400_000 })] },
      { at: 3 * 86_400 + 4, events: [] }, // watched continuously since the restart → canceled
    ],
    expected: ['B:scheduled', 'B:canceled'],
    check: (run) => {
      expect(run.durableObservedAtStart).toEqual([T0]); // never checkpointed while idle
      expect(run.commits).toBe(1 + 3);
    },
  },
  {
    name: 'reboot after idle: the host booted after the last observation → completed, host-rebooted',
    steps: [
      ...idle(0, 45, [S('A')]),
      { at: 45.5, stop: 'crash' }, // the host goes down without warning
      { at: 70, start: true, bootAt: 60 },
      { at: 71, events: [] },
    ],
    expected: ['A:scheduled', 'A:completed'],
    check: (run) => expect(run.records[1]?.data.reason).toBe('host-rebooted'),
  },
  {
    name: 'reboot after idle while Started: downtime runs from the last committed observation (at most a checkpoint early)',
    steps: [
      { at: 0, events: [S('R')] },
      ...idle(10, 100, [STARTED('R')]), // Started at 10 (committed), checkpoint at 70, last poll at 100
      { at: 100.5, stop: 'crash' },
      { at: 130, start: true, bootAt: 120 },
      { at: 131, events: [STARTED('R')] },
      { at: 132, events: [] },
    ],
    expected: ['R:scheduled', 'R:started', 'R:completed'],
    check: (run) => {
      const impact = run.records[2]?.data.observedImpact as Record<string, unknown>;
      expect(impact.hostRebooted).toBe(true);
      expect(run.records[2]?.data.inferred).toBe(false); // it was seen Started
      expect(impact.downtimeFrom).toBe(new Date(T0 + 70_000).toISOString());
      expect(impact.downtimeTo).toBe(new Date(T0 + 131_000).toISOString());
    },
  },
  {
    name: 'reboot after idle with a graceful stop (the OS shut down cleanly): downtime from the true last poll',
    steps: [
      { at: 0, events: [S('R')] },
      ...idle(10, 100, [STARTED('R')]),
      { at: 100.5, stop: 'graceful' },
      { at: 130, start: true, bootAt: 120 },
      { at: 131, events: [] },
    ],
    expected: ['R:scheduled', 'R:started', 'R:completed'],
    check: (run) => {
      const impact = run.records[2]?.data.observedImpact as Record<string, unknown>;
      expect(run.records[2]?.data.inferred).toBe(true);
      expect(run.records[2]?.data.reason).toBe('host-rebooted');
      expect(impact.downtimeFrom).toBe(new Date(T0 + 100_000).toISOString());
    },
  },
  {
    name: 'a restart without reboot after idle is not taken for a reboot (the first document of a run is committed)',
    steps: [
      { at: 0, stop: 'crash' },
      { at: 1, start: true, bootAt: 0.5 }, // the host booted; the forwarder started after it
      ...idle(2, 40, [S('A')]),
      { at: 40.5, stop: 'crash' },
      { at: 41, start: true }, // same boot: not a reboot
      { at: 42, events: [] },
    ],
    expected: ['A:scheduled', 'A:completed'],
    check: (run) => expect(run.records[1]?.data.reason).toBe('observation-gap'),
  },
];

describe('restart after idle: committed vs in-memory observation time (table-driven)', () => {
  for (const scenario of scenarios) {
    it(scenario.name, () => {
      const run = runPipeline(scenario.steps);
      expect(summary(run.records)).toEqual(scenario.expected);
      scenario.check?.(run);
    });
  }
});

describe('observeUnchanged', () => {
  const eventArb: fc.Arbitrary<ScheduledEvent> = fc
    .record({ id: fc.constantFrom('E1', 'E2', 'E3'), started: fc.boolean(), nb: fc.constantFrom(-600, 600) })
    .map(({ id, started, nb }) =>
      event({
        EventId: id,
        EventStatus: started ? 'Started' : 'Scheduled',
        notBeforeMs: started ? null : T0 + nb * 1000,
      }),
    );
  const docArb = fc.array(eventArb, { maxLength: 4 });

  it('gives exactly the state transform() gives for the same document again, and never a record', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ events: docArb, dt: fc.constantFrom(1, 2, 5, 3600) }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.constantFrom(1, 4, 40 * 86_400),
        fc.option(fc.integer({ min: 0, max: 9000 }), { nil: undefined }),
        fc.boolean(),
        (docs, repeatAfter, stall, reboot) => {
          let state = initialState();
          let at = T0;
          let document: ScheduledEventsDocument = { DocumentIncarnation: 0, Events: [] };
          for (const [i, d] of docs.entries()) {
            at += d.dt * 1000;
            document = { DocumentIncarnation: i + 1, Events: d.events };
            state = transform(state, {
              outcome: {
                kind: 'document',
                document,
                observed: { wallMs: at, monotonicMs: at },
                changed: true,
              },
              vm: VM,
              hostBootTimeMs: T0 - 1000,
              maxGapMs: MAX_GAP_MS,
            }).state;
          }
          const frozen = JSON.stringify(state);
          const nowMs = at + repeatAfter * 1000;
          const bootMs = reboot ? nowMs - 500 : T0 - 1000;
          const full = transform(state, {
            outcome: {
              kind: 'document',
              document,
              observed: { wallMs: nowMs, monotonicMs: nowMs },
              changed: false,
            },
            vm: VM,
            hostBootTimeMs: bootMs,
            maxGapMs: MAX_GAP_MS,
            ...(stall === undefined ? {} : { maxStallMs: stall }),
          });
          const cheap = observeUnchanged(state, {
            observedAtMs: nowMs,
            hostBootTimeMs: bootMs,
            ...(stall === undefined ? {} : { maxStallMs: stall }),
          });
          expect(full.records).toEqual([]);
          expect(cheap).toEqual(full.state);
          expect(JSON.stringify(state)).toBe(frozen); // the previous state is never mutated
        },
      ),
      { numRuns: 300 },
    );
  });

  it('shares the untouched parts of an idle state instead of copying them', () => {
    const state: ForwarderState = {
      ...initialState(),
      ended: [{ eventId: 'OLD', occurrence: 1, endedAtMs: T0 }],
      lastObservedAtMs: T0,
    };
    const next = observeUnchanged(state, { observedAtMs: T0 + 1000 });
    expect(next.lastObservedAtMs).toBe(T0 + 1000);
    expect(next.ended).toBe(state.ended);
    expect(next.events).toBe(state.events);
  });
});

describe('the restart gap is never under-estimated (property)', () => {
  const stepArb = fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('same' as const) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('doc' as const),
        ids: fc.subarray(['A', 'B'] as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('restart' as const),
        how: fc.constantFrom('graceful', 'crash') as fc.Arbitrary<'graceful' | 'crash'>,
        downSeconds: fc.constantFrom(0.5, 1, 2, 5, 90),
      }),
    },
  );

  it('every canceled record follows a truly watched interval of at most maxGapMs', () => {
    let canceled = 0;
    let restartsCanceled = 0;
    fc.assert(
      fc.property(
        fc.array(fc.record({ step: stepArb, dt: fc.constantFrom(1, 1, 2, 4, 30, 61) }), {
          minLength: 1,
          maxLength: 60,
        }),
        (raw) => {
          const steps: PipelineStep[] = [];
          let at = 0;
          let current: ScheduledEvent[] = [];
          for (const { step, dt } of raw) {
            at += dt;
            if (step.kind === 'restart') {
              steps.push({ at, stop: step.how });
              at += step.downSeconds;
              steps.push({ at, start: true });
            } else if (step.kind === 'fail') {
              steps.push({ at, fail: true });
            } else {
              if (step.kind === 'doc') current = step.ids.map((id) => S(id));
              steps.push({ at, events: current });
            }
          }
          // The truth: the wall time of every successful observation, to judge each canceled record.
          const observations = steps.filter((s) => 'events' in s).map((s) => T0 + s.at * 1000);
          const run = runPipeline(steps, 60_000);
          for (const record of run.records.filter((r) => r.transition === 'canceled')) {
            const endedMs = Date.parse(record.data.timing.endedAt as string);
            const before = observations.filter((t) => t < endedMs);
            const previous = before[before.length - 1]!;
            expect(endedMs - previous).toBeLessThanOrEqual(MAX_GAP_MS);
            canceled++;
          }
          if (run.durableObservedAtStart.length > 0 && run.records.some((r) => r.transition === 'canceled')) {
            restartsCanceled++;
          }
          // And the committed observation time never runs ahead of the truth.
          run.durableObservedAtStart.forEach((durable, i) => {
            const truth = run.trueLastObservedBeforeStart[i];
            if (durable !== null && truth !== null && truth !== undefined) {
              expect(durable).toBeLessThanOrEqual(truth);
            }
          });
        },
      ),
      { numRuns: 300 },
    );
    // The property was exercised: cancellations happened, also in runs with restarts.
    expect(canceled).toBeGreaterThan(0);
    expect(restartsCanceled).toBeGreaterThan(0);
  });
});

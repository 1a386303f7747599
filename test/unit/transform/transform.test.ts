import { describe, expect, it } from 'vitest';
import { type LifecycleRecord, RECORD_TYPE_PREFIX } from '../../../src/domain/index.ts';
import { type ApprovalInput, initialState, restoreState, transform } from '../../../src/transform/index.ts';
import { event, runSteps, type Step, summary, T0, VM } from './helpers.ts';

const MIN = 60;
/** NotBefore 15 minutes after T0. */
const NB = T0 + 15 * MIN * 1000;

function only(records: LifecycleRecord[], transition: string): LifecycleRecord {
  const matching = records.filter((record) => record.transition === transition);
  expect(matching).toHaveLength(1);
  return matching[0]!;
}

function approval(eventId: string, at: number, extra: Partial<ApprovalInput> = {}): ApprovalInput {
  return {
    eventId,
    approvedAtMs: T0 + at * 1000,
    rule: 'approve-freeze',
    leader: true,
    hooks: [{ name: 'drain', ok: true, exitCode: 0, durationMs: 1200 }],
    ...extra,
  };
}

interface Scenario {
  name: string;
  steps: Step[];
  expected: string[];
  maxGapMs?: number;
  vmName?: string;
  check?: (records: LifecycleRecord[]) => void;
}

const LM = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123';

const scenarios: Scenario[] = [
  {
    name: "the docs' example sequence (live migration seen by WestNO_0)",
    steps: [
      { at: 0, events: [], incarnation: 1 },
      { at: 1, events: [event({ EventId: LM })], incarnation: 2 },
      { at: 2, events: [event({ EventId: LM, EventStatus: 'Started' })], incarnation: 3 },
      { at: 3, events: [], incarnation: 4 },
    ],
    expected: [`${LM}:scheduled`, `${LM}:started`, `${LM}:completed`],
    check: (records) => {
      const scheduled = only(records, 'scheduled');
      expect(scheduled.data.NotBefore).toBe('Mon, 11 Apr 2022 22:26:58 GMT');
      expect(scheduled.data.notBeforeUtc).toBe('2022-04-11T22:26:58.000Z');
      expect(scheduled.data.DocumentIncarnation).toBe(2);
      expect(scheduled.data.affectsThisVm).toBe(true);
      expect(scheduled.data.timing.noticeSeconds).toBe(16 * 60 + 58 - 1);
      expect(scheduled.maintenancetype).toBe('Freeze');
      const completed = only(records, 'completed');
      expect(completed.data.inferred).toBe(false);
      expect(completed.data.reason).toBeUndefined();
      expect(completed.data.timing).toEqual({
        firstSeenAt: '2022-04-11T22:10:01.000Z',
        startedAt: '2022-04-11T22:10:02.000Z',
        endedAt: '2022-04-11T22:10:03.000Z',
        noticeSeconds: 1017,
      });
    },
  },
  {
    name: 'live-migration freeze: the longest stall in the Started window is the observed impact',
    steps: [
      { at: 0, events: [event({ EventId: LM, notBeforeMs: NB })], stallMs: 900 },
      { at: 1, events: [event({ EventId: LM, notBeforeMs: NB })], stallMs: 800 },
      { at: 2, events: [event({ EventId: LM, EventStatus: 'Started' })], stallMs: 3 },
      { at: 8, events: [event({ EventId: LM, EventStatus: 'Started' })], stallMs: 4800 },
      { at: 9, events: [event({ EventId: LM, EventStatus: 'Started' })], stallMs: 2 },
      { at: 10, events: [], stallMs: 1 },
    ],
    maxGapMs: 10_000,
    expected: [`${LM}:scheduled`, `${LM}:started`, `${LM}:completed`],
    check: (records) => {
      const impact = only(records, 'completed').data.observedImpact as Record<string, unknown>;
      expect(impact.longestStallMs).toBe(4800);
      expect(impact.longestObservationGapMs).toBe(6000);
      expect(impact.expectedDurationSeconds).toBe(5);
      expect(impact.hostRebooted).toBe(false);
    },
  },
  {
    name: 'live-migration freeze: stall and observation gap are whole milliseconds in the record',
    steps: [
      { at: 0, events: [event({ EventId: LM, notBeforeMs: NB })], stallMs: 0.4 },
      { at: 2, events: [event({ EventId: LM, EventStatus: 'Started' })], stallMs: 1.0134990000001 },
      { at: 8.0004999, events: [event({ EventId: LM, EventStatus: 'Started' })], stallMs: 59.52411799999754 },
      { at: 10, events: [], stallMs: 1 },
    ],
    maxGapMs: 10_000,
    expected: [`${LM}:scheduled`, `${LM}:started`, `${LM}:completed`],
    check: (records) => {
      const impact = only(records, 'completed').data.observedImpact as Record<string, unknown>;
      expect(impact.longestStallMs).toBe(60);
      expect(Number.isInteger(impact.longestObservationGapMs)).toBe(true);
      expect(impact.longestObservationGapMs).toBeGreaterThanOrEqual(6000);
      expect(impact.longestObservationGapMs).toBeLessThanOrEqual(6001);
    },
  },
  {
    name: 'user reboot: downtime from the last poll before the reboot to the first after boot',
    steps: [
      {
        at: 0,
        events: [event({ EventId: 'UR', EventType: 'Reboot', EventSource: 'User', notBeforeMs: NB })],
      },
      {
        at: 900,
        events: [event({ EventId: 'UR', EventType: 'Reboot', EventStatus: 'Started' })],
        bootAt: -3600,
      },
      {
        at: 901,
        events: [event({ EventId: 'UR', EventType: 'Reboot', EventStatus: 'Started' })],
        bootAt: -3600,
      },
      // host reboots at 920; the sidecar polls again at 945
      {
        at: 945,
        events: [event({ EventId: 'UR', EventType: 'Reboot', EventStatus: 'Started' })],
        bootAt: 920,
      },
      { at: 1500, events: [], bootAt: 920 },
    ],
    maxGapMs: 1_000_000,
    expected: ['UR:scheduled', 'UR:started', 'UR:completed'],
    check: (records) => {
      const completed = only(records, 'completed');
      expect(completed.data.inferred).toBe(false);
      expect(completed.data.observedImpact).toMatchObject({
        hostRebooted: true,
        downtimeSeconds: 44,
        downtimeFrom: new Date(T0 + 901_000).toISOString(),
        downtimeTo: new Date(T0 + 945_000).toISOString(),
      });
    },
  },
  {
    name: 'redeploy: gone after the boot on the new host (incarnation reset) → Completed inferred host-rebooted',
    steps: [
      { at: 0, events: [event({ EventId: 'RD', EventType: 'Redeploy', notBeforeMs: NB })], incarnation: 7 },
      {
        at: 900,
        events: [event({ EventId: 'RD', EventType: 'Redeploy', EventStatus: 'Started' })],
        incarnation: 8,
      },
      { at: 1020, events: [], incarnation: 1, bootAt: 990 },
    ],
    expected: ['RD:scheduled', 'RD:started', 'RD:completed'],
    check: (records) => {
      const completed = only(records, 'completed');
      expect(completed.data.inferred).toBe(true);
      expect(completed.data.reason).toBe('host-rebooted');
      expect(completed.data.DocumentIncarnation).toBe(1);
      expect(completed.data.observedImpact).toMatchObject({ hostRebooted: true, downtimeSeconds: 120 });
    },
  },
  {
    name: 'reboot while only Scheduled: Completed inferred host-rebooted, never Canceled',
    steps: [
      {
        at: 0,
        events: [event({ EventId: 'PR', EventType: 'Reboot', notBeforeMs: T0 + 7 * 24 * 3600 * 1000 })],
      },
      {
        at: 1,
        events: [event({ EventId: 'PR', EventType: 'Reboot', notBeforeMs: T0 + 7 * 24 * 3600 * 1000 })],
      },
      { at: 2.5, events: [], bootAt: 1.5 },
    ],
    expected: ['PR:scheduled', 'PR:completed'],
    check: (records) => {
      const completed = only(records, 'completed');
      expect(completed.data).toMatchObject({ inferred: true, reason: 'host-rebooted' });
      expect((completed.data.observedImpact as { downtimeSeconds: number }).downtimeSeconds).toBe(1.5);
    },
  },
  {
    name: 'platform reboot approved by us: Approved record, then Started and Completed',
    steps: [
      { at: 0, events: [event({ EventId: 'PA', EventType: 'Reboot', notBeforeMs: NB })] },
      {
        at: 1,
        events: [event({ EventId: 'PA', EventType: 'Reboot', notBeforeMs: NB })],
        approvals: [approval('PA', 0.5)],
      },
      { at: 2, events: [event({ EventId: 'PA', EventType: 'Reboot', EventStatus: 'Started' })] },
      { at: 3, events: [] },
    ],
    expected: ['PA:scheduled', 'PA:approved', 'PA:started', 'PA:completed'],
    check: (records) => {
      const approved = only(records, 'approved');
      expect(approved.time).toBe(new Date(T0 + 500).toISOString());
      expect(approved.data.approval).toEqual({
        approvedAt: new Date(T0 + 500).toISOString(),
        rule: 'approve-freeze',
        leader: true,
        posted: true,
        dryRun: false,
        hooks: [{ name: 'drain', ok: true, exitCode: 0, durationMs: 1200, timedOut: false }],
      });
    },
  },
  {
    name: 'approved by us and gone while still Scheduled → Completed inferred approved-by-us, not Canceled',
    steps: [
      { at: 0, events: [event({ EventId: 'PB', notBeforeMs: NB })] },
      { at: 1, events: [], approvals: [approval('PB', 0.5)] },
    ],
    expected: ['PB:scheduled', 'PB:approved', 'PB:completed'],
    check: (records) => {
      expect(only(records, 'completed').data).toMatchObject({ inferred: true, reason: 'approved-by-us' });
    },
  },
  {
    name: 'hardware failure: first seen Started, no Scheduled invented',
    steps: [
      { at: 0, events: [] },
      { at: 1, events: [event({ EventId: 'HW', EventType: 'Reboot', EventStatus: 'Started' })] },
      { at: 2, events: [event({ EventId: 'HW', EventType: 'Reboot', EventStatus: 'Started' })] },
      { at: 400, events: [] },
    ],
    maxGapMs: 1_000_000,
    expected: ['HW:started', 'HW:completed'],
    check: (records) => {
      const started = only(records, 'started');
      expect(started.data.firstSeenStatus).toBe('Started');
      expect(started.data.timing).toMatchObject({
        startedAt: started.data.timing.firstSeenAt,
        noticeSeconds: null,
      });
      expect(only(records, 'completed').data.inferred).toBe(false);
    },
  },
  {
    name: 'cancellation: Scheduled gone while watched, NotBefore in the future → Canceled',
    steps: [
      { at: 0, events: [event({ EventId: 'CX', notBeforeMs: NB })] },
      { at: 1, events: [event({ EventId: 'CX', notBeforeMs: NB })] },
      { at: 2, events: [] },
    ],
    expected: ['CX:scheduled', 'CX:canceled'],
    check: (records) => {
      const canceled = only(records, 'canceled');
      expect(canceled.type).toBe(`${RECORD_TYPE_PREFIX}.canceled`);
      expect(canceled.data.inferred).toBe(false);
      expect(canceled.data.timing.endedAt).toBe(new Date(T0 + 2000).toISOString());
    },
  },
  {
    name: 'cancellation not provable after an observation gap → Completed inferred observation-gap',
    steps: [
      { at: 0, events: [event({ EventId: 'GX', notBeforeMs: NB })] },
      { at: 1, events: 'fail' },
      { at: 2, events: 'fail' },
      { at: 5, events: [] },
    ],
    expected: ['GX:scheduled', 'GX:completed'],
    check: (records) => {
      expect(only(records, 'completed').data).toMatchObject({ inferred: true, reason: 'observation-gap' });
    },
  },
  {
    name: 'preempt with 30 s notice: Scheduled gone after NotBefore → Completed inferred not-before-passed',
    steps: [
      {
        at: 0,
        events: [
          event({ EventId: 'SP', EventType: 'Preempt', DurationInSeconds: -1, notBeforeMs: T0 + 30_000 }),
        ],
      },
      {
        at: 30,
        events: [
          event({ EventId: 'SP', EventType: 'Preempt', DurationInSeconds: -1, notBeforeMs: T0 + 30_000 }),
        ],
      },
      { at: 31, events: [] },
    ],
    maxGapMs: 60_000,
    expected: ['SP:scheduled', 'SP:completed'],
    check: (records) => {
      expect(only(records, 'scheduled').data.timing.noticeSeconds).toBe(30);
      expect(only(records, 'completed').data).toMatchObject({ inferred: true, reason: 'not-before-passed' });
    },
  },
  {
    name: 'terminate: Scheduled then Started, then the VM is deleted (no further polls)',
    steps: [
      { at: 0, events: [event({ EventId: 'TM', EventType: 'Terminate', notBeforeMs: T0 + 300_000 })] },
      { at: 300, events: [event({ EventId: 'TM', EventType: 'Terminate', EventStatus: 'Started' })] },
    ],
    expected: ['TM:scheduled', 'TM:started'],
    check: (records) => expect(only(records, 'started').maintenancetype).toBe('Terminate'),
  },
  {
    name: 'reschedule: NotBefore and Resources change → Updated records with previous values and distinct ids',
    steps: [
      { at: 0, events: [event({ EventId: 'RS', notBeforeMs: NB })] },
      { at: 1, events: [event({ EventId: 'RS', notBeforeMs: NB + 3_600_000 })] },
      { at: 2, events: [event({ EventId: 'RS', notBeforeMs: NB + 3_600_000 })] },
      { at: 3, events: [event({ EventId: 'RS', notBeforeMs: NB + 3_600_000, Resources: ['WestNO_1'] })] },
    ],
    expected: ['RS:scheduled', 'RS:updated', 'RS:updated'],
    check: (records) => {
      const [first, second] = records.filter((record) => record.transition === 'updated');
      expect(first!.data.changed).toEqual(['NotBefore']);
      expect(first!.data.previous).toMatchObject({ NotBefore: new Date(NB).toUTCString() });
      expect(first!.data.NotBefore).toBe(new Date(NB + 3_600_000).toUTCString());
      expect(second!.data.changed).toEqual(['Resources']);
      expect(second!.data.affectsThisVm).toBe(false);
      expect(second!.data.previous).toMatchObject({ Resources: ['WestNO_0', 'WestNO_1'] });
      expect(first!.id).not.toBe(second!.id);
    },
  },
  {
    name: 'broadcast to the availability set: records for events that do not affect this VM too',
    steps: [
      {
        at: 0,
        events: [
          event({ EventId: 'B1', Resources: ['vmss_1', 'vmss_2'] }),
          event({ EventId: 'B2', Resources: ['VMSS_3'] }),
        ],
      },
    ],
    vmName: 'vmss_3',
    expected: ['B1:scheduled', 'B2:scheduled'],
    check: (records) => {
      expect(records.map((record) => record.data.affectsThisVm)).toEqual([false, true]);
    },
  },
  {
    name: 'two simultaneous events end differently',
    steps: [
      {
        at: 0,
        events: [event({ EventId: 'E1', notBeforeMs: NB }), event({ EventId: 'E2', notBeforeMs: NB })],
      },
      {
        at: 1,
        events: [event({ EventId: 'E1', EventStatus: 'Started' }), event({ EventId: 'E2', notBeforeMs: NB })],
      },
      { at: 2, events: [] },
    ],
    expected: ['E1:scheduled', 'E2:scheduled', 'E1:started', 'E1:completed', 'E2:canceled'],
  },
  {
    name: 'incarnation reset and skip are only hints: unchanged events give no records',
    steps: [
      { at: 0, events: [event({ EventId: 'IR', notBeforeMs: NB })], incarnation: 190 },
      { at: 1, events: [event({ EventId: 'IR', notBeforeMs: NB })], incarnation: 1 },
      { at: 2, events: [event({ EventId: 'IR', EventStatus: 'Started' })], incarnation: 4 },
      { at: 3, events: [event({ EventId: 'IR', EventStatus: 'Started' })], incarnation: 4 },
    ],
    expected: ['IR:scheduled', 'IR:started'],
  },
  {
    name: 'duplicate EventIds in one document: the Started entry wins',
    steps: [
      {
        at: 0,
        events: [event({ EventId: 'DU', notBeforeMs: NB }), event({ EventId: 'DU', EventStatus: 'Started' })],
      },
      { at: 1, events: [event({ EventId: 'DU', EventStatus: 'Started' }), event({ EventId: 'DU' })] },
    ],
    expected: ['DU:started'],
  },
  {
    name: 'a Started event reported as Scheduled again is absorbed silently',
    steps: [
      { at: 0, events: [event({ EventId: 'RG', EventStatus: 'Started' })] },
      { at: 1, events: [event({ EventId: 'RG', notBeforeMs: NB })] },
      { at: 2, events: [event({ EventId: 'RG', EventStatus: 'Started' })] },
      { at: 3, events: [] },
    ],
    expected: ['RG:started', 'RG:completed'],
  },
  {
    name: 'an EventId reappearing after it ended is a new occurrence with new ids',
    steps: [
      { at: 0, events: [event({ EventId: 'RA', notBeforeMs: NB })] },
      { at: 1, events: [] },
      { at: 2, events: [event({ EventId: 'RA', notBeforeMs: NB })] },
      { at: 3, events: [] },
    ],
    expected: ['RA:scheduled', 'RA:canceled', 'RA:scheduled', 'RA:canceled'],
    check: (records) => {
      expect(new Set(records.map((record) => record.id)).size).toBe(4);
      expect(records.map((record) => record.data.occurrence)).toEqual([1, 1, 2, 2]);
    },
  },
  {
    name: 'dry-run and non-leader approvals are recorded but do not make the event approved by us',
    steps: [
      { at: 0, events: [event({ EventId: 'DR', notBeforeMs: NB })] },
      {
        at: 1,
        events: [event({ EventId: 'DR', notBeforeMs: NB })],
        approvals: [approval('DR', 0.5, { dryRun: true }), approval('DR', 0.6, { leader: false })],
      },
      { at: 2, events: [] },
    ],
    expected: ['DR:scheduled', 'DR:approved', 'DR:approved', 'DR:canceled'],
    check: (records) => {
      const approvals = records.filter((record) => record.transition === 'approved');
      expect(approvals.map((record) => record.data.approval)).toMatchObject([
        { dryRun: true, posted: false },
        { leader: false, posted: false },
      ]);
      expect(approvals[0]!.id).not.toBe(approvals[1]!.id);
    },
  },
  {
    name: 'a not-posted approval records why the event will start without it; a posted one never carries a reason',
    steps: [
      { at: 0, events: [event({ EventId: 'NP', notBeforeMs: NB })] },
      {
        at: 1,
        events: [event({ EventId: 'NP', notBeforeMs: NB })],
        approvals: [
          approval('NP', 0.5, { posted: false, notPostedReason: 'prepare hook "node" timed out' }),
          approval('NP', 0.6, { posted: true, notPostedReason: 'ignored' }),
        ],
      },
    ],
    expected: ['NP:scheduled', 'NP:approved', 'NP:approved'],
    check: (records) => {
      const [notPosted, posted] = records.filter((record) => record.transition === 'approved');
      expect(notPosted!.data.approval).toMatchObject({
        posted: false,
        notPostedReason: 'prepare hook "node" timed out',
      });
      expect(posted!.data.approval).toMatchObject({ posted: true });
      expect(posted!.data.approval).not.toHaveProperty('notPostedReason');
    },
  },
  {
    name: 'the same approval committed twice gives one record; an unknown event is marked eventKnown false',
    steps: [
      { at: 0, events: [event({ EventId: 'AP', notBeforeMs: NB })] },
      { at: 1, events: [event({ EventId: 'AP', notBeforeMs: NB })], approvals: [approval('AP', 0.5)] },
      {
        at: 2,
        events: [event({ EventId: 'AP', notBeforeMs: NB })],
        approvals: [approval('AP', 1.5), approval('NOPE', 1.5)],
      },
    ],
    expected: ['AP:scheduled', 'AP:approved', 'NOPE:approved'],
    check: (records) => {
      expect(records[2]!.data).toMatchObject({ eventKnown: false, EventType: '', occurrence: 1 });
    },
  },
];

describe('transform rules (table-driven)', () => {
  for (const scenario of scenarios) {
    it(scenario.name, () => {
      const { records } = runSteps(scenario.steps, {
        ...(scenario.maxGapMs === undefined ? {} : { maxGapMs: scenario.maxGapMs }),
        vm: { ...VM, name: scenario.vmName ?? VM.name },
      });
      expect(summary(records)).toEqual(scenario.expected);
      scenario.check?.(records);
    });
  }
});

describe('transform contract', () => {
  it('a failed poll returns the same state object and no records', () => {
    const { state } = runSteps([{ at: 0, events: [event({ EventId: 'F1', notBeforeMs: NB })] }]);
    const result = transform(state, {
      outcome: {
        kind: 'failure',
        reason: 'server-error',
        message: 'HTTP 500',
        httpStatus: 500,
        observed: { wallMs: T0 + 1000, monotonicMs: 1000 },
        consecutiveFailures: 1,
      },
      vm: VM,
      maxStallMs: 10_000,
      hostBootTimeMs: T0 + 900,
    });
    expect(result.state).toBe(state);
    expect(result.records).toEqual([]);
  });

  it('approvals committed alongside a failed poll are still recorded (and nothing else changes)', () => {
    const { state } = runSteps([{ at: 0, events: [event({ EventId: 'F2', notBeforeMs: NB })] }]);
    const result = transform(state, {
      outcome: {
        kind: 'failure',
        reason: 'timeout',
        message: 'timed out',
        observed: { wallMs: T0 + 1000, monotonicMs: 1000 },
        consecutiveFailures: 1,
      },
      vm: VM,
      approvals: [approval('F2', 0.5)],
    });
    expect(summary(result.records)).toEqual(['F2:approved']);
    expect(result.state.events[0]?.approvedByUs).toBe(true);
    expect(result.state.lastObservedAtMs).toBe(state.lastObservedAtMs);
    const next = runSteps([{ at: 2, events: [] }], { start: result.state }).records;
    expect(next[0]?.data).toMatchObject({ inferred: true, reason: 'approved-by-us' });
  });

  it('never mutates the previous state', () => {
    const { state } = runSteps([{ at: 0, events: [event({ EventId: 'M1', notBeforeMs: NB })] }]);
    const before = JSON.stringify(state);
    transform(state, {
      outcome: {
        kind: 'document',
        document: { DocumentIncarnation: 2, Events: [event({ EventId: 'M1', EventStatus: 'Started' })] },
        observed: { wallMs: T0 + 1000, monotonicMs: 1000 },
        changed: true,
      },
      vm: VM,
      maxStallMs: 5,
    });
    expect(JSON.stringify(state)).toBe(before);
  });

  it('CloudEvents envelope: source, subject, type, time, extensions, lower-case extension names', () => {
    const { records } = runSteps([{ at: 0, events: [event({ EventId: LM })] }]);
    const record = records[0]!;
    expect(record).toMatchObject({
      specversion: '1.0',
      source: VM.resourceId,
      subject: LM,
      type: `${RECORD_TYPE_PREFIX}.scheduled`,
      time: '2022-04-11T22:10:00.000Z',
      datacontenttype: 'application/json',
      transition: 'scheduled',
      maintenancetype: 'Freeze',
      vmid: VM.vmId,
    });
    for (const key of Object.keys(record)) expect(key).toMatch(/^[a-z0-9]{1,20}$/);
    expect(record.id).not.toContain('.');
    expect(record.data.vm).toEqual({
      name: 'WestNO_0',
      vmId: VM.vmId,
      resourceId: VM.resourceId,
      subscriptionId: VM.subscriptionId,
      resourceGroup: 'rg-web-prod',
      location: 'norwayeast',
      zone: '',
      vmScaleSetName: '',
      vmSize: 'Standard_D2s_v5',
      computerName: 'westno0',
    });
  });

  it('source falls back to urn:azure:vm:<vmId>, then to something deterministic', () => {
    const steps: Step[] = [{ at: 0, events: [event({ EventId: LM })] }];
    const byVmId = runSteps(steps, { vm: { ...VM, resourceId: '' } }).records[0]!;
    expect(byVmId.source).toBe(`urn:azure:vm:${VM.vmId}`);
    const unknown = runSteps(steps, { vm: undefined }).records[0]!;
    expect(unknown.source).toBe('urn:azure:vm:unknown');
    expect(unknown.data.affectsThisVm).toBe(false);
    expect(unknown.vmid).toBe('');
    expect(runSteps(steps, { vm: undefined }).records[0]!.id).toBe(unknown.id);
  });

  it('affectsThisVm is case-insensitive and ignores the pre-2017-08-01 leading underscore', () => {
    const { records } = runSteps(
      [
        {
          at: 0,
          events: [
            event({ EventId: 'A1', Resources: ['_vmss_3'] }),
            event({ EventId: 'A2', Resources: ['vmss_30'] }),
          ],
        },
      ],
      { vm: { ...VM, name: 'VMSS_3' } },
    );
    expect(records.map((record) => record.data.affectsThisVm)).toEqual([true, false]);
  });

  it('ids are deterministic and survive a restart (state round-tripped through JSON)', () => {
    const steps: Step[] = [
      { at: 0, events: [event({ EventId: LM, notBeforeMs: NB })] },
      { at: 1, events: [event({ EventId: LM, EventStatus: 'Started' })] },
      { at: 2, events: [] },
    ];
    const straight = runSteps(steps).records;
    const first = runSteps(steps.slice(0, 1));
    const restored = restoreState(JSON.parse(JSON.stringify(first.state)));
    const resumed = runSteps(steps.slice(1), { start: restored }).records;
    expect([...first.records, ...resumed].map((record) => record.id)).toEqual(
      straight.map((record) => record.id),
    );
    expect(new Set(straight.map((record) => record.id)).size).toBe(3);
  });

  it('an unchanged document produces no records', () => {
    const same = [event({ EventId: LM, notBeforeMs: NB })];
    const { perStep } = runSteps([
      { at: 0, events: same, incarnation: 2 },
      { at: 1, events: same, incarnation: 2 },
      { at: 2, events: same, incarnation: 2 },
    ]);
    expect(perStep.map((records) => records.length)).toEqual([1, 0, 0]);
  });

  it('restoreState rejects what it does not understand, naming the problem', () => {
    expect(() => restoreState(null)).toThrow(/not a JSON object/);
    expect(() => restoreState({ version: 99, events: [], ended: [] })).toThrow(/version 99/);
    expect(() => restoreState({ version: 1 })).toThrow(/"events" or "ended"/);
    expect(restoreState(JSON.parse(JSON.stringify(initialState())))).toEqual(initialState());
  });
});

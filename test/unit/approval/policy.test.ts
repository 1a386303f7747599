/**
 * The approval policy: rule matching, the observe-only default, leader modes, and the docs' sample policy
 * (config/approval.example.yaml) against a transliteration of the documents' Python sample program.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { approvalSection, decide, hookApplies, isLeader } from '../../../src/approval/index.ts';
import { loadConfig } from '../../../src/config/index.ts';
import type { ScheduledEvent, VmIdentity } from '../../../src/domain/index.ts';
import { parseScheduledEventsDocument } from '../../../src/sources/imds/index.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');

/** The documents' advanced_sample(), per event: what it does (confirm = POST StartRequests, log = nothing). */
function sampleProgram(event: {
  EventStatus: string;
  EventSource: string;
  EventType: string;
  DurationInSeconds: number;
}) {
  if (event.EventStatus === 'Started') return 'log';
  if (event.EventSource === 'User') return 'confirm';
  if (event.EventType === 'Freeze' && event.DurationInSeconds >= 0 && event.DurationInSeconds < 9)
    return 'confirm';
  return 'log';
}

/** The documents' example: a live migration as seen by two VMs (four documents). */
const DOCS_DOCUMENTS = [
  { DocumentIncarnation: 1, Events: [] },
  {
    DocumentIncarnation: 2,
    Events: [
      {
        EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
        EventStatus: 'Scheduled',
        EventType: 'Freeze',
        ResourceType: 'VirtualMachine',
        Resources: ['WestNO_0', 'WestNO_1'],
        NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
        Description:
          'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
        EventSource: 'Platform',
        DurationInSeconds: 5,
      },
    ],
  },
  {
    DocumentIncarnation: 3,
    Events: [
      {
        EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
        EventStatus: 'Started',
        EventType: 'Freeze',
        ResourceType: 'VirtualMachine',
        Resources: ['WestNO_0', 'WestNO_1'],
        NotBefore: '',
        Description:
          'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
        EventSource: 'Platform',
        DurationInSeconds: 5,
      },
    ],
  },
  { DocumentIncarnation: 4, Events: [] },
];

/** The documents' other example events (the schema sample, a user restart, a platform reboot, ...). */
function event(fields: Partial<ScheduledEvent>): ScheduledEvent {
  return {
    EventId: 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5',
    EventType: 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: ['WestNO_0'],
    EventStatus: 'Scheduled',
    NotBefore: 'Mon, 19 Sep 2016 18:29:47 GMT',
    notBeforeUtc: '2016-09-19T18:29:47.000Z',
    Description: 'Host server is undergoing maintenance.',
    EventSource: 'Platform',
    DurationInSeconds: -1,
    ...fields,
  };
}

const examplePolicy = loadConfig({ file: join(REPO, 'config', 'approval.example.yaml') }).approval;
const affected = { affectsThisVm: true };

describe("the docs' sample policy (config/approval.example.yaml)", () => {
  it("reproduces the sample program's decisions on the docs' example documents", () => {
    const decisions: string[] = [];
    for (const raw of DOCS_DOCUMENTS) {
      const document = parseScheduledEventsDocument(JSON.stringify(raw));
      for (const e of document.Events) {
        const ours = decide(e, affected, examplePolicy.rules);
        const approve = ours.action === 'approve' || ours.action === 'approve-after-hooks';
        expect(approve ? 'confirm' : 'log', `${e.EventId} ${e.EventStatus}`).toBe(sampleProgram(e));
        decisions.push(`${document.DocumentIncarnation}:${e.EventStatus}:${ours.action}:${ours.rule}`);
      }
    }
    expect(decisions).toEqual(['2:Scheduled:approve:approve-short-freeze', '3:Started:never:default']);
  });

  it('approves user events at once, short freezes at once, and leaves the rest', () => {
    const table: Array<[Partial<ScheduledEvent>, string, string]> = [
      [{ EventType: 'Reboot', EventSource: 'User' }, 'approve', 'approve-user-initiated'],
      [{ EventType: 'Redeploy', EventSource: 'User' }, 'approve', 'approve-user-initiated'],
      [{ EventType: 'Freeze', DurationInSeconds: 0 }, 'approve', 'approve-short-freeze'],
      [{ EventType: 'Freeze', DurationInSeconds: 8 }, 'approve', 'approve-short-freeze'],
      [{ EventType: 'Freeze', DurationInSeconds: 9 }, 'never', 'leave-the-rest'],
      [{ EventType: 'Freeze', DurationInSeconds: -1 }, 'never', 'leave-the-rest'],
      [{ EventType: 'Reboot' }, 'never', 'leave-the-rest'],
      [{ EventType: 'Redeploy' }, 'never', 'leave-the-rest'],
      [{ EventType: 'Preempt', DurationInSeconds: 0 }, 'never', 'leave-the-rest'],
      [{ EventType: 'Terminate' }, 'never', 'leave-the-rest'],
    ];
    for (const [fields, action, rule] of table) {
      expect(decide(event(fields), affected, examplePolicy.rules), JSON.stringify(fields)).toEqual({
        action,
        rule,
      });
    }
  });

  it('agrees with the sample program on every generated event', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('Scheduled', 'Started'),
        fc.constantFrom('Platform', 'User', ''),
        fc.constantFrom('Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'),
        fc.integer({ min: -1, max: 30 }),
        (EventStatus, EventSource, EventType, DurationInSeconds) => {
          const e = event({ EventStatus, EventSource, EventType, DurationInSeconds });
          const ours = decide(e, affected, examplePolicy.rules).action;
          expect(ours === 'never' ? 'log' : 'confirm').toBe(sampleProgram(e));
        },
      ),
    );
  });
});

describe('decide', () => {
  const rules = (list: unknown[]) => approvalSection.parse({ rules: list }).rules;

  it('never approves without rules (observe only by default)', () => {
    const defaults = approvalSection.parse(undefined);
    expect(defaults.rules).toEqual([]);
    expect(defaults.dryRun).toBe(false);
    expect(defaults.leader).toBe('first');
    expect(decide(event({ EventSource: 'User' }), affected, defaults.rules)).toEqual({
      action: 'never',
      rule: 'default',
    });
  });

  it('takes the first matching rule, case-insensitively, with every condition required', () => {
    const policy = rules([
      { name: 'big', match: { resources: { min: 3 } }, action: 'never' },
      {
        name: 'mine-freeze',
        match: { eventTypes: ['freeze'], affectsThisVm: true },
        action: 'approve-after-hooks',
      },
      { name: 'others', match: { affectsThisVm: false }, action: 'never' },
      { name: 'user', match: { eventSources: ['USER'] }, action: 'approve' },
    ]);
    expect(decide(event({ EventType: 'Freeze', Resources: ['a', 'b', 'c'] }), affected, policy).rule).toBe(
      'big',
    );
    expect(decide(event({ EventType: 'Freeze' }), affected, policy)).toEqual({
      action: 'approve-after-hooks',
      rule: 'mine-freeze',
    });
    expect(decide(event({ EventType: 'Freeze' }), { affectsThisVm: false }, policy).rule).toBe('others');
    expect(decide(event({ EventSource: 'User' }), affected, policy).rule).toBe('user');
    expect(decide(event({}), affected, policy).rule).toBe('default');
  });

  it('treats ranges as min inclusive, max exclusive', () => {
    const policy = rules([
      { name: 'r', match: { durationInSeconds: { min: 2, max: 4 } }, action: 'approve' },
    ]);
    const actions = [1, 2, 3, 4].map((d) => decide(event({ DurationInSeconds: d }), affected, policy).action);
    expect(actions).toEqual(['never', 'approve', 'approve', 'never']);
  });

  it('never approves an event that is not Scheduled', () => {
    const policy = rules([{ name: 'all', match: {}, action: 'approve' }]);
    expect(decide(event({ EventStatus: 'Started' }), affected, policy).action).toBe('never');
  });

  it('rejects bad policies with errors naming the problem', () => {
    expect(() => approvalSection.parse({ rules: [{ name: 'x', match: {}, action: 'yes' }] })).toThrow(
      /action/,
    );
    expect(() =>
      approvalSection.parse({
        rules: [{ name: 'x', match: { durationInSeconds: { min: 9, max: 0 } }, action: 'approve' }],
      }),
    ).toThrow(/min must be smaller than max/);
    expect(() =>
      approvalSection.parse({
        rules: [
          { name: 'x', match: {}, action: 'approve' },
          { name: 'x', match: {}, action: 'never' },
        ],
      }),
    ).toThrow(/duplicate rule name/);
  });
});

describe('isLeader', () => {
  const vm = (name: string) => ({ name }) as VmIdentity;
  const resources = ['WestNO_1', 'westno_0', 'WestNO_2'];

  it('first: only the first name in Resources (case-insensitive, leading _ ignored)', () => {
    expect(isLeader('first', resources, vm('westno_1'))).toBe(true);
    expect(isLeader('first', ['_WestNO_1'], vm('WestNO_1'))).toBe(true);
    expect(isLeader('first', resources, vm('WestNO_0'))).toBe(false);
  });

  it('lowest-name: the smallest name', () => {
    expect(isLeader('lowest-name', resources, vm('WestNO_0'))).toBe(true);
    expect(isLeader('lowest-name', resources, vm('WestNO_1'))).toBe(false);
  });

  it('any: every affected VM, never an unaffected one or an unknown identity', () => {
    expect(resources.every((name) => isLeader('any', resources, vm(name)))).toBe(true);
    expect(isLeader('any', resources, vm('Other'))).toBe(false);
    expect(isLeader('first', resources, undefined)).toBe(false);
    expect(isLeader('first', [], vm('WestNO_1'))).toBe(false);
  });
});

describe('hookApplies', () => {
  it('matches listed event types case-insensitively; empty means every type', () => {
    expect(hookApplies([], 'Reboot')).toBe(true);
    expect(hookApplies(['reboot', 'Redeploy'], 'Reboot')).toBe(true);
    expect(hookApplies(['Freeze'], 'Reboot')).toBe(false);
  });
});

/**
 * The approval plan (src/approval/plan.ts): pure functions from progress + facts to the next progress and the
 * actions the runner takes. Table-driven like the transform's tests; no I/O, no clock.
 */
import { describe, expect, it } from 'vitest';
import { type ApprovalConfig, approvalSection } from '../../../src/approval/config.ts';
import {
  advance,
  nextPrepareHook,
  type PlanAction,
  type PlanFacts,
  type PostFacts,
  peersChecked,
  pendingApprovals,
  phaseDone,
  planPost,
  postAccepted,
  postFailed,
  prepareHookEnded,
  reconcile,
  resume,
  trackedByKey,
} from '../../../src/approval/plan.ts';
import type { EventProgress } from '../../../src/approval/progress.ts';
import type { LifecycleRecord, ScheduledEvent, VmIdentity } from '../../../src/domain/index.ts';
import type { ApprovalInput, TrackedEvent } from '../../../src/transform/index.ts';
import { eventProgress, scheduledEvent } from './fixtures.ts';

const VM = { name: 'vm0', vmId: 'id0' } as VmIdentity;
const NB = Date.parse('2022-04-11T22:25:00Z');
const NOW = NB - 600_000; // ten minutes before NotBefore

function tracked(fields: Partial<ScheduledEvent> = {}, tracking: Partial<TrackedEvent> = {}): TrackedEvent {
  const eventId = fields.EventId ?? 'E1';
  return {
    eventId,
    occurrence: 1,
    last: scheduledEvent({ EventId: eventId, ...fields }),
    firstSeenStatus: 'Scheduled',
    firstSeenAtMs: NOW - 1000,
    startedAtMs: null,
    lastNotBeforeUtc: '2022-04-11T22:25:00.000Z',
    lastSeenAtMs: NOW,
    lastIncarnation: 1,
    approvedByUs: false,
    approvalsRecorded: [],
    updateCount: 0,
    maxStallMs: null,
    maxObservationGapMs: null,
    downtime: null,
    ...tracking,
  };
}

const hook = (name: string, timeoutMs = 300_000) => ({ name, command: '/bin/true', timeoutMs });
const ok = (name = 'drain') => ({ name, ok: true, exitCode: 0, durationMs: 1, timedOut: false });
const failed = (name = 'drain') => ({ name, ok: false, exitCode: 1, durationMs: 1, timedOut: false });
const approve = (action: string) => [{ name: 'user', match: { eventSources: ['User'] }, action }];
const config = (section: Record<string, unknown> = {}): ApprovalConfig => approvalSection.parse(section);

function facts(over: Partial<PlanFacts> & { events?: TrackedEvent[] } = {}): PlanFacts {
  const { events = [tracked()], ...rest } = over;
  return {
    config: config({ rules: approve('approve') }),
    tracked: trackedByKey(events),
    vm: VM,
    nowMs: NOW,
    busy: new Set(),
    stopped: false,
    ...rest,
  };
}

const kinds = (actions: PlanAction[]) =>
  actions.map((a) =>
    a.kind === 'log'
      ? `log:${a.message}`
      : a.kind === 'notice'
        ? `notice:${a.notice.kind}:${a.notice.hook}:${a.notice.rerun ? 'rerun' : 'failed'}`
        : a.kind,
  );
const approval = (over: Partial<ApprovalInput> = {}): ApprovalInput => ({
  eventId: 'E1',
  approvedAtMs: NOW,
  rule: 'user',
  leader: true,
  hooks: [],
  posted: true,
  ...over,
});
const NO_COMMIT = { records: [], approvals: [] };

describe('reconcile: a newly seen event', () => {
  const cases: [
    string,
    Record<string, unknown>,
    Partial<PlanFacts> & { events?: TrackedEvent[] },
    Partial<EventProgress> | null,
    string[],
  ][] = [
    [
      'policy match, approve, leader: decided and queued for the POST',
      { rules: approve('approve') },
      {},
      { action: 'approve', rule: 'user', post: 'pending', approval: null },
      ['log:approval decision', 'persist', 'post'],
    ],
    [
      'no matching rule: never, nothing to do',
      { rules: approve('approve') },
      { events: [tracked({ EventSource: 'Platform' })] },
      { action: 'never', post: 'none', approval: null },
      ['log:approval decision', 'persist'],
    ],
    [
      'not affecting this VM: nothing, whatever the rules say',
      { rules: approve('approve') },
      { events: [tracked({ Resources: ['vm7'] })] },
      { affectsThisVm: false, leader: false, post: 'none', approval: null },
      ['log:approval decision', 'persist'],
    ],
    [
      'affected non-leader without hooks: records its (empty) preparation, never POSTs',
      { rules: approve('approve') },
      { events: [tracked({ Resources: ['vm1', 'vm0'] })] },
      { leader: false, post: 'none', approval: expect.objectContaining({ leader: false, posted: false }) },
      ['log:approval decision', 'persist'],
    ],
    [
      'leader rule "any": the second VM is a leader too',
      { rules: approve('approve'), leader: 'any' },
      { events: [tracked({ Resources: ['vm1', 'vm0'] })] },
      { leader: true, post: 'pending' },
      ['log:approval decision', 'persist', 'post'],
    ],
    [
      'dry run: recorded as a dry-run approval, never POSTed',
      { rules: approve('approve'), dryRun: true },
      {},
      { post: 'none', approval: expect.objectContaining({ dryRun: true, posted: false, approvedAtMs: NOW }) },
      ['log:approval decision', 'log:dry-run: would approve (not POSTed)', 'persist'],
    ],
    [
      'approve-after-hooks: the prepare hooks run first, no POST yet',
      { rules: approve('approve-after-hooks'), hooks: { prepare: [hook('drain')] } },
      {},
      { prepare: 'running', post: 'none', approval: null },
      ['log:approval decision', 'persist', 'prepare'],
    ],
    [
      'approve at once: the POST does not wait for the prepare hooks',
      { rules: approve('approve'), hooks: { prepare: [hook('drain')] } },
      {},
      { prepare: 'running', post: 'pending' },
      ['log:approval decision', 'persist', 'prepare', 'post'],
    ],
    [
      'hooks limited to other event types do not apply',
      {
        rules: approve('approve-after-hooks'),
        hooks: { prepare: [{ ...hook('drain'), eventTypes: ['Freeze'] }] },
      },
      {},
      { prepare: 'none', post: 'pending' },
      ['log:approval decision', 'persist', 'post'],
    ],
    [
      'first seen Started: no decision (log), no prepare hooks, nothing to POST',
      { rules: approve('approve-after-hooks'), hooks: { prepare: [hook('drain')] } },
      { events: [tracked({ EventStatus: 'Started', notBeforeUtc: null })] },
      { prepare: 'none', action: 'never', post: 'none' },
      ['persist'],
    ],
    [
      'no policy (no rules, no hooks): never, and no line per event',
      {},
      {},
      { action: 'never', post: 'none', prepare: 'none', recover: 'none', approval: null },
      ['persist'],
    ],
    ['no policy and the identity unknown: nothing to warn about', {}, { vm: undefined }, null, []],
    [
      'identity unknown: nothing decided yet (warned once)',
      { rules: approve('approve') },
      { vm: undefined },
      null,
      ['log:VM identity unknown: approval decisions wait until it is known'],
    ],
    [
      'stopping: decided and persisted, but no job and no POST',
      { rules: approve('approve-after-hooks'), hooks: { prepare: [hook('drain')] } },
      { stopped: true },
      { prepare: 'pending' },
      ['log:approval decision', 'persist'],
    ],
  ];
  it.each(cases)('%s', (_name, section, over, expected, actions) => {
    const plan = reconcile([], facts({ ...over, config: config(section) }), NO_COMMIT);
    expect(kinds(plan.actions)).toEqual(actions);
    if (expected === null) expect(plan.progress).toEqual([]);
    else expect(plan.progress).toEqual([expect.objectContaining({ key: 'E1#1', ...expected })]);
  });

  it('the identity warning is marked once; the runner logs it at most once per process', () => {
    const plan = reconcile([], facts({ vm: undefined }), NO_COMMIT);
    expect(plan.actions[0]).toMatchObject({ kind: 'log', level: 'warn', once: true });
  });

  it('a prepare action carries the tracked event the hooks are told about', () => {
    const event = tracked();
    const plan = reconcile(
      [],
      facts({
        events: [event],
        config: config({ rules: approve('approve-after-hooks'), hooks: { prepare: [hook('drain')] } }),
      }),
      NO_COMMIT,
    );
    expect(plan.actions).toContainEqual({ kind: 'prepare', key: 'E1#1', event });
  });

  it('does not change the progress it was given', () => {
    const before = [eventProgress({ post: 'none', approval: null })];
    const copy = structuredClone(before);
    reconcile(before, facts(), NO_COMMIT);
    expect(before).toEqual(copy);
  });
});

describe('reconcile: known events', () => {
  const recorded = approval();
  const terminal = { subject: 'E1', transition: 'completed', data: {} } as unknown as LifecycleRecord;
  const cases: [
    string,
    EventProgress,
    Partial<PlanFacts> & { events?: TrackedEvent[] },
    { records?: LifecycleRecord[]; approvals?: ApprovalInput[] },
    Partial<EventProgress> | null,
    (string | PlanAction)[],
  ][] = [
    [
      'a committed approval (same object) is recorded',
      eventProgress({ post: 'posted', approval: recorded }),
      {},
      { approvals: [recorded] },
      { recorded: true },
      ['persist'],
    ],
    [
      'a committed approval (equal, e.g. after a copy) is recorded',
      eventProgress({ post: 'posted', approval: recorded }),
      {},
      { approvals: [{ ...recorded, hooks: [] }] },
      { recorded: true },
      ['persist'],
    ],
    [
      'already posted after a restart, the state lists it (crash after the commit): recorded, not again',
      eventProgress({ post: 'posted', approval: recorded }),
      { events: [tracked({}, { approvalsRecorded: ['posted'] })] },
      {},
      { recorded: true, post: 'posted' },
      ['persist'],
    ],
    [
      'already posted after a restart, not yet committed: handed to the transform again, no POST',
      eventProgress({ post: 'posted', approval: recorded }),
      {},
      {},
      { recorded: false, post: 'posted' },
      [],
    ],
    [
      'the state lists another kind: still to record',
      eventProgress({ post: 'posted', approval: recorded }),
      { events: [tracked({}, { approvalsRecorded: ['dry-run'] })] },
      {},
      { recorded: false },
      [],
    ],
    [
      'event gone while a POST waits: the approval fails (not posted)',
      eventProgress({ post: 'pending' }),
      { events: [] },
      {},
      {
        ended: true,
        post: 'failed',
        approval: expect.objectContaining({
          posted: false,
          leader: true,
          approvedAtMs: NOW,
          notPostedReason: 'the event ended before it could be approved',
        }),
      },
      ['log:approval not POSTed', 'persist'],
    ],
    [
      'event gone: recover hooks run with its terminal record',
      eventProgress({ recover: 'pending', action: 'never' }),
      { events: [] },
      { records: [terminal] },
      { ended: true, recover: 'pending' },
      ['persist', { kind: 'recover', key: 'E1#1', terminal }],
    ],
    [
      'event gone, no terminal record in this commit: recover hooks run without it',
      eventProgress({ recover: 'pending', action: 'never' }),
      { events: [] },
      {},
      { ended: true },
      ['persist', { kind: 'recover', key: 'E1#1', terminal: undefined }],
    ],
    [
      'event gone with its prepare hooks pending: no prepare, entry kept for nothing → forgotten',
      eventProgress({ prepare: 'pending', action: 'never' }),
      { events: [] },
      {},
      null,
      ['persist'],
    ],
    [
      'event gone, approval recorded, recover done: forgotten',
      eventProgress({ post: 'posted', approval: recorded, recorded: true, recover: 'done' }),
      { events: [] },
      {},
      null,
      ['persist'],
    ],
    [
      'event gone, approval not recorded yet: kept until it is',
      eventProgress({ post: 'posted', approval: recorded }),
      { events: [] },
      {},
      { ended: true, recorded: false },
      ['persist'],
    ],
    [
      'event gone while its hook job runs: kept, nothing new started',
      eventProgress({ prepare: 'running', action: 'approve-after-hooks' }),
      { events: [], busy: new Set(['E1#1']) },
      {},
      { ended: true, prepare: 'running' },
      ['persist'],
    ],
    [
      'a busy entry is not settled, even when it could be',
      eventProgress({ prepare: 'done', action: 'approve-after-hooks', hooks: [ok()] }),
      { busy: new Set(['E1#1']) },
      {},
      { post: 'none' },
      [],
    ],
  ];
  it.each(cases)('%s', (_name, start, over, commit, expected, actions) => {
    const plan = reconcile([start], facts(over), { records: [], approvals: [], ...commit });
    expect(plan.actions.map((a) => (a.kind === 'recover' ? a : kinds([a])[0]))).toEqual(actions);
    if (expected === null) expect(plan.progress).toEqual([]);
    else expect(plan.progress).toEqual([expect.objectContaining(expected)]);
  });
});

describe('advance: settling after the prepare hooks', () => {
  const cases: [string, Partial<EventProgress>, Partial<EventProgress>, string[]][] = [
    [
      'leader, every hook ok (approve-after-hooks): queued for the POST',
      { action: 'approve-after-hooks', prepare: 'done', hooks: [ok(), ok('b')] },
      { post: 'pending', approval: null },
      ['persist', 'post'],
    ],
    [
      'leader, a hook failed: recorded as not approved, no POST',
      { action: 'approve-after-hooks', prepare: 'done', hooks: [failed()] },
      {
        post: 'none',
        approval: expect.objectContaining({
          leader: true,
          posted: false,
          hooks: [failed()],
          notPostedReason: 'prepare hook "drain" failed (exit 1)',
        }),
      },
      ['log:not approving: a prepare hook failed', 'persist'],
    ],
    [
      'leader, hooks still running: waits',
      { action: 'approve-after-hooks', prepare: 'running' },
      { post: 'none', approval: null },
      [],
    ],
    [
      'non-leader, hooks finished (one failed): records them, never POSTs',
      { leader: false, action: 'approve-after-hooks', prepare: 'done', hooks: [failed()] },
      {
        post: 'none',
        approval: expect.objectContaining({
          leader: false,
          posted: false,
          notPostedReason: 'prepare hook "drain" failed (exit 1)',
        }),
      },
      ['persist'],
    ],
    [
      'dry run after hooks: recorded as dry run',
      { action: 'approve-after-hooks', prepare: 'done', hooks: [ok()], dryRun: true },
      { post: 'none', approval: expect.objectContaining({ dryRun: true, hooks: [ok()] }) },
      ['log:dry-run: would approve (not POSTed)', 'persist'],
    ],
    [
      'the event ended while its hooks ran (all ok): queued; the POST round then records it not posted',
      { action: 'approve-after-hooks', prepare: 'done', hooks: [ok()], ended: true },
      { post: 'pending', ended: true },
      ['persist', 'post'],
    ],
    [
      'a POST already pending: only asks for the POST loop again',
      { post: 'pending' },
      { post: 'pending' },
      ['post'],
    ],
    [
      'POSTed and recorded: nothing more',
      { post: 'posted', approval: approval(), recorded: true },
      { post: 'posted' },
      [],
    ],
  ];
  it.each(cases)('%s', (_name, start, expected, actions) => {
    const plan = advance([eventProgress(start)], facts());
    expect(kinds(plan.actions)).toEqual(actions);
    expect(plan.progress).toEqual([expect.objectContaining(expected)]);
  });
});

describe('advance: the peer gate (an event affecting other VMs, approve-after-hooks)', () => {
  const ready = { action: 'approve-after-hooks' as const, prepare: 'done' as const, hooks: [ok()] };
  const gated = facts({ peers: true }); // the fixture's event affects vm0 (this VM) and vm1
  it('waits for the other VMs: a peers job for vm1, no POST yet', () => {
    const plan = advance([eventProgress(ready)], gated);
    expect(kinds(plan.actions)).toEqual([
      'log:waiting for the other affected VMs to be prepared before approving',
      'persist',
      'peers',
    ]);
    expect(plan.actions.find((a) => a.kind === 'peers')).toEqual({
      kind: 'peers',
      key: 'E1#1',
      eventId: 'E1',
      others: ['vm1'],
    });
    expect(plan.progress).toEqual([expect.objectContaining({ peers: 'checking', post: 'none' })]);
  });

  it('once they are ready: queued for the POST', () => {
    const afterCheck = peersChecked(
      [eventProgress({ ...ready, peers: 'checking' })],
      'E1#1',
      { ready: true },
      NOW,
    );
    const plan = advance(afterCheck.progress, gated);
    expect(kinds(plan.actions)).toEqual(['persist', 'post']);
    expect(plan.progress).toEqual([expect.objectContaining({ peers: 'ready', post: 'pending' })]);
  });

  it('one will not be ready: recorded as not posted, naming it', () => {
    const plan = peersChecked(
      [eventProgress({ ...ready, peers: 'checking' })],
      'E1#1',
      { ready: false, reason: 'other affected VMs were not ready: vm1 (node vm1): its preparation failed' },
      NOW,
    );
    expect(kinds(plan.actions)).toEqual(['log:not approving: other affected VMs were not ready', 'persist']);
    expect(plan.progress).toEqual([
      expect.objectContaining({
        post: 'failed',
        approval: expect.objectContaining({
          posted: false,
          leader: true,
          notPostedReason: 'other affected VMs were not ready: vm1 (node vm1): its preparation failed',
        }),
      }),
    ]);
    expect(pendingApprovals(plan.progress)).toHaveLength(1);
  });

  it.each([
    ['a single-VM event', { ...ready }, facts({ peers: true, events: [tracked({ Resources: ['vm0'] })] })],
    ['no peer gate configured', { ...ready }, facts()],
    ['action approve (does not wait for hooks, nor for peers)', { action: 'approve' as const }, gated],
  ])('no waiting for %s', (_name, start, plannedWith) => {
    const plan = advance([eventProgress(start)], plannedWith);
    expect(kinds(plan.actions)).toEqual(['persist', 'post']);
  });

  it('a check interrupted by a restart starts again', () => {
    const resumed = resume([eventProgress({ ...ready, peers: 'checking' })], config());
    expect(resumed.progress[0]!.peers).toBeUndefined();
    expect(kinds(advance(resumed.progress, gated).actions)).toContain('peers');
  });
});

describe('resume (after a restart)', () => {
  const prepare = { hooks: { prepare: [hook('a'), hook('b')] } };
  const cases: [string, Record<string, unknown>, Partial<EventProgress>, Partial<EventProgress>, string[]][] =
    [
      [
        'a hook interrupted by the crash counts as failed',
        prepare,
        { prepare: 'running', hooks: [ok('a')] },
        {
          prepare: 'done',
          hooks: [
            ok('a'),
            {
              ...failed('b'),
              exitCode: null,
              durationMs: 0,
              detail: 'interrupted by a restart of the forwarder: its outcome is unknown',
            },
          ],
        },
        [
          'notice:prepare-interrupted:b:failed',
          'log:a prepare hook was interrupted by a restart; counted as failed (set approval.rerunHooksAfterRestart to run it again)',
        ],
      ],
      [
        'interrupted, rerunHooksAfterRestart: all prepare hooks run again',
        { ...prepare, rerunHooksAfterRestart: true },
        { prepare: 'running', hooks: [ok('a')] },
        { prepare: 'pending', hooks: [] },
        ['notice:prepare-interrupted:b:rerun'],
      ],
      [
        'hooks done, POST pending, rerunHooksAfterRestart: hooks again before the POST',
        { ...prepare, rerunHooksAfterRestart: true },
        { prepare: 'done', hooks: [ok('a'), ok('b')], post: 'pending' },
        { prepare: 'pending', hooks: [], post: 'none' },
        [],
      ],
      [
        'hooks done, POST pending: their results are reused',
        prepare,
        { prepare: 'done', hooks: [ok('a'), ok('b')], post: 'pending' },
        { prepare: 'done', hooks: [ok('a'), ok('b')], post: 'pending' },
        [],
      ],
      [
        'already posted, rerunHooksAfterRestart: nothing runs again',
        { ...prepare, rerunHooksAfterRestart: true },
        { prepare: 'done', hooks: [ok('a'), ok('b')], post: 'posted', approval: approval() },
        { prepare: 'done', post: 'posted' },
        [],
      ],
      [
        'ended, rerunHooksAfterRestart: nothing runs again',
        { ...prepare, rerunHooksAfterRestart: true },
        { prepare: 'done', hooks: [ok('a')], ended: true },
        { prepare: 'done', hooks: [ok('a')] },
        [],
      ],
      [
        'stopped gracefully mid-hooks (pending): continues from there',
        prepare,
        { prepare: 'pending', hooks: [ok('a')] },
        { prepare: 'pending', hooks: [ok('a')] },
        [],
      ],
    ];
  it.each(cases)('%s', (_name, section, start, expected, actions) => {
    const plan = resume([eventProgress(start)], config(section));
    expect(kinds(plan.actions)).toEqual(actions);
    expect(plan.progress).toEqual([expect.objectContaining(expected)]);
  });
});

describe('nextPrepareHook', () => {
  const deadline = new Date(NB - 30_000).toISOString();
  const two = config({ hooks: { prepare: [hook('a', 60_000), hook('b', 3_600_000)] } });
  const cases: [string, Partial<EventProgress>, TrackedEvent, number, object | null][] = [
    [
      'the first hook, its own timeout',
      {},
      tracked(),
      NOW,
      { hook: expect.objectContaining({ name: 'a' }), timeoutMs: 60_000, deadline },
    ],
    [
      'the next hook after one succeeded, cut to NotBefore minus the safety margin',
      { hooks: [ok('a')] },
      tracked(),
      NOW,
      { hook: expect.objectContaining({ name: 'b' }), timeoutMs: NB - 30_000 - NOW, deadline },
    ],
    ['none after a failed hook', { hooks: [failed('a')] }, tracked(), NOW, null],
    ['none once all ran', { hooks: [ok('a'), ok('b')] }, tracked(), NOW, null],
    ['none when the event does not affect this VM', { affectsThisVm: false }, tracked(), NOW, null],
    [
      'past the deadline: no time left (the hook is not run)',
      {},
      tracked(),
      NB - 10_000,
      { hook: expect.objectContaining({ name: 'a' }), timeoutMs: -20_000, deadline },
    ],
    [
      'NotBefore moved later: the deadline follows the event as tracked now',
      { hooks: [ok('a')] },
      tracked({ notBeforeUtc: '2022-04-11T23:25:00.000Z' }),
      NOW,
      { timeoutMs: 3_600_000, deadline: new Date(NB + 3_600_000 - 30_000).toISOString() },
    ],
    [
      'no NotBefore: the hook keeps its own timeout, no deadline',
      { hooks: [ok('a')] },
      tracked({ notBeforeUtc: null }, { lastNotBeforeUtc: null }),
      NOW,
      { timeoutMs: 3_600_000, deadline: null },
    ],
  ];
  it.each(cases)('%s', (_name, over, event, nowMs, expected) => {
    const step = nextPrepareHook(two, eventProgress(over), event, nowMs);
    if (expected === null) expect(step).toBeNull();
    else expect(step).toMatchObject(expected);
  });

  it('a finished hook is appended; a stopped one leaves the preparation pending; done marks the phase', () => {
    const start = [eventProgress({ prepare: 'running' }), eventProgress({ eventId: 'E2' })];
    const after = prepareHookEnded(start, 'E1#1', ok('a'));
    expect(after[0]).toMatchObject({ prepare: 'running', hooks: [ok('a')] });
    expect(after[1]).toBe(start[1]);
    expect(prepareHookEnded(after, 'E1#1', null)[0]).toMatchObject({ prepare: 'pending', hooks: [ok('a')] });
    expect(phaseDone(after, 'E1#1', 'prepare')[0]).toMatchObject({ prepare: 'done' });
    expect(phaseDone(start, 'E2#1', 'recover')[1]).toMatchObject({ recover: 'done' });
  });
});

describe('planPost', () => {
  const base: PostFacts = {
    tracked: trackedByKey([tracked(), tracked({ EventId: 'E2' })]),
    nowMs: NOW,
    hasClient: true,
    lastPostAtMs: Number.NEGATIVE_INFINITY,
    pollIntervalMs: 1000,
  };
  const pendingBoth = [eventProgress({ post: 'pending' }), eventProgress({ eventId: 'E2', post: 'pending' })];
  const cases: [string, EventProgress[], Partial<PostFacts>, object, Partial<EventProgress>[], string[]][] = [
    ['nothing pending: done', [eventProgress()], {}, { kind: 'done' }, [{ post: 'none' }], []],
    [
      'every ready event in one request',
      pendingBoth,
      {},
      { kind: 'post', keys: ['E1#1', 'E2#1'], eventIds: ['E1', 'E2'] },
      [{ post: 'pending' }, { post: 'pending' }],
      [],
    ],
    [
      'no faster than the poll interval after the last POST',
      pendingBoth,
      { lastPostAtMs: NOW - 400 },
      { kind: 'wait', ms: 600 },
      [{ post: 'pending' }, { post: 'pending' }],
      [],
    ],
    [
      'the poll interval has passed: POST',
      pendingBoth,
      { lastPostAtMs: NOW - 1000 },
      { kind: 'post', eventIds: ['E1', 'E2'] },
      [{ post: 'pending' }, { post: 'pending' }],
      [],
    ],
    [
      'NotBefore passed: not POSTed, recorded as such',
      [eventProgress({ post: 'pending' })],
      { nowMs: NB },
      { kind: 'done' },
      [
        {
          post: 'failed',
          approval: expect.objectContaining({
            posted: false,
            approvedAtMs: NB,
            notPostedReason: 'NotBefore passed before the approval was accepted',
          }),
        },
      ],
      ['log:approval not POSTed', 'persist'],
    ],
    [
      'one event started meanwhile: the other still goes',
      pendingBoth,
      { tracked: trackedByKey([tracked({ EventStatus: 'Started' }), tracked({ EventId: 'E2' })]) },
      { kind: 'post', keys: ['E2#1'], eventIds: ['E2'] },
      [{ post: 'failed' }, { post: 'pending' }],
      ['log:approval not POSTed', 'persist'],
    ],
    [
      'no approval client (replay source): not POSTed',
      [eventProgress({ post: 'pending' })],
      { hasClient: false },
      { kind: 'done' },
      [{ post: 'failed', approval: expect.objectContaining({ posted: false }) }],
      ['log:approval not POSTed', 'persist'],
    ],
  ];
  it.each(cases)('%s', (_name, progress, over, next, expected, actions) => {
    const round = planPost(progress, { ...base, ...over });
    expect(round.next).toMatchObject(next);
    expect(kinds(round.actions)).toEqual(actions);
    expect(round.progress).toEqual(expected.map((e) => expect.objectContaining(e)));
  });
});

describe('after a POST', () => {
  const batch = { keys: ['E1#1'], eventIds: ['E1'] };
  const progress = [
    eventProgress({ post: 'pending', hooks: [ok()] }),
    eventProgress({ eventId: 'E2', post: 'pending' }),
  ];

  it('accepted: the batch is posted and handed to the transform; the rest waits', () => {
    const plan = postAccepted(progress, batch, NOW + 5);
    expect(plan.progress[0]).toMatchObject({
      post: 'posted',
      recorded: false,
      approval: {
        eventId: 'E1',
        approvedAtMs: NOW + 5,
        leader: true,
        posted: true,
        hooks: [ok()],
        rule: 'user',
      },
    });
    expect(plan.progress[1]).toBe(progress[1]);
    expect(kinds(plan.actions)).toEqual(['log:approved: StartRequests accepted', 'persist']);
    expect(pendingApprovals(plan.progress)).toEqual([plan.progress[0]!.approval]);
  });

  const cases: [string, { retryable: boolean; retryAfterMs?: number }, number | null, string[]][] = [
    [
      'rejected (4xx): not posted, no retry',
      { retryable: false },
      null,
      ['log:approval not POSTed', 'persist'],
    ],
    [
      'retryable: again after the poll interval',
      { retryable: true },
      NOW,
      ['log:approval POST failed; retrying'],
    ],
    [
      'retryable, Retry-After shorter than the poll interval: the poll interval',
      { retryable: true, retryAfterMs: 10 },
      NOW,
      ['log:approval POST failed; retrying'],
    ],
    [
      'retryable, Retry-After longer: waits for it',
      { retryable: true, retryAfterMs: 5000 },
      NOW + 4000,
      ['log:approval POST failed; retrying'],
    ],
  ];
  it.each(cases)('%s', (_name, failure, lastPostAtMs, actions) => {
    const plan = postFailed(
      progress,
      batch,
      { message: 'boom', ...failure },
      { nowMs: NOW, pollIntervalMs: 1000 },
    );
    expect(kinds(plan.actions)).toEqual(actions);
    if (lastPostAtMs === null) {
      expect(plan.retry).toBeNull();
      expect(plan.progress[0]).toMatchObject({ post: 'failed', approval: { posted: false } });
      expect(plan.actions[0]).toMatchObject({ fields: { why: 'IMDS rejected the approval: boom' } });
    } else {
      expect(plan.retry).toEqual({ lastPostAtMs });
      expect(plan.progress).toEqual(progress);
    }
  });
});

describe('pendingApprovals', () => {
  const a = approval();
  const cases: [string, EventProgress[], ApprovalInput[]][] = [
    ['none decided', [eventProgress()], []],
    ['decided, not recorded', [eventProgress({ approval: a })], [a]],
    ['decided and recorded', [eventProgress({ approval: a, recorded: true })], []],
  ];
  it.each(cases)('%s', (_name, progress, expected) => {
    expect(pendingApprovals(progress)).toEqual(expected);
  });
});

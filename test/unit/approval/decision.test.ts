/** The pure approval decisions (src/approval/decision.ts), table-driven like the transform's tests. */
import { describe, expect, it } from 'vitest';
import { approvalSection } from '../../../src/approval/config.ts';
import { cannotPost, newProgress, type Settlement, settle } from '../../../src/approval/decision.ts';
import type { EventProgress } from '../../../src/approval/progress.ts';
import type { ScheduledEvent, VmIdentity } from '../../../src/domain/index.ts';
import type { TrackedEvent } from '../../../src/transform/index.ts';
import { scheduledEvent } from './fixtures.ts';

const VM = { name: 'vm0', vmId: 'id0' } as VmIdentity;
const NB = Date.parse('2022-04-11T22:25:00Z');

function tracked(fields: Partial<ScheduledEvent> = {}, tracking: Partial<TrackedEvent> = {}): TrackedEvent {
  return {
    eventId: 'E1',
    occurrence: 1,
    last: scheduledEvent({ EventSource: 'Platform', ...fields }),
    lastNotBeforeUtc: '2022-04-11T22:25:00.000Z',
    ...tracking,
  } as TrackedEvent;
}

const hook = { name: 'drain', command: '/bin/true' };
const config = (section: Record<string, unknown> = {}) => approvalSection.parse(section);
const ok = { name: 'drain', ok: true, exitCode: 0, durationMs: 1 };
const failed = { name: 'drain', ok: false, exitCode: 1, durationMs: 1 };

describe('settle', () => {
  type Entry = Parameters<typeof settle>[0];
  const base: Entry = {
    approval: null,
    post: 'none',
    affectsThisVm: true,
    action: 'approve-after-hooks',
    prepare: 'done',
    hooks: [ok],
    leader: true,
  };
  const cases: [string, Partial<Entry>, Settlement][] = [
    ['leader, hooks ok', {}, 'approve'],
    ['leader, no hooks apply', { prepare: 'none', hooks: [] }, 'approve'],
    ['leader, hooks still running', { prepare: 'running' }, 'wait'],
    ['leader, hooks not started', { prepare: 'pending' }, 'wait'],
    ['leader, a hook failed', { hooks: [ok, failed] }, 'record-hook-failed'],
    ['leader, approve at once (hooks running)', { action: 'approve', prepare: 'running' }, 'approve'],
    ['leader, approve at once (hook failed)', { action: 'approve', hooks: [failed] }, 'approve'],
    ['action never', { action: 'never' }, 'wait'],
    ['not affected', { affectsThisVm: false }, 'wait'],
    ['already decided', { approval: { eventId: 'E1' } as EventProgress['approval'] }, 'wait'],
    ['already pending a POST', { post: 'pending' }, 'wait'],
    ['POST failed', { post: 'failed' }, 'wait'],
    ['non-leader, hooks finished', { leader: false }, 'record-not-leader'],
    ['non-leader, hook failed', { leader: false, hooks: [failed] }, 'record-not-leader'],
    ['non-leader, hooks running', { leader: false, prepare: 'running' }, 'wait'],
    ['non-leader, never', { leader: false, action: 'never' }, 'wait'],
  ];
  it.each(cases)('%s → %s', (_name, over, expected) => {
    expect(settle({ ...base, ...over })).toBe(expected);
  });
});

describe('cannotPost', () => {
  const cases: [string, TrackedEvent | undefined, number, boolean, string | null][] = [
    ['Scheduled, before NotBefore', tracked(), NB - 1, true, null],
    [
      'gone from the state',
      undefined,
      NB - 1,
      true,
      'the event was no longer Scheduled: it started (approved by another VM, or by Azure) or ended first',
    ],
    [
      'Started',
      tracked({ EventStatus: 'Started' }),
      NB - 1,
      true,
      'the event was no longer Scheduled: it started (approved by another VM, or by Azure) or ended first',
    ],
    ['NotBefore reached', tracked(), NB, true, 'NotBefore passed before the approval was accepted'],
    ['no NotBefore', tracked({ notBeforeUtc: null }, { lastNotBeforeUtc: null }), NB + 1, true, null],
    ['no approval client', tracked(), NB - 1, false, 'no IMDS client (replay source): cannot POST'],
  ];
  it.each(cases)('%s', (_name, event, nowMs, hasClient, expected) => {
    expect(cannotPost(event, nowMs, hasClient)).toBe(expected);
  });
});

describe('newProgress', () => {
  const rules = [{ name: 'reboots', match: { eventTypes: ['Reboot'] }, action: 'approve-after-hooks' }];
  const cases: [string, Record<string, unknown>, TrackedEvent, Partial<EventProgress>][] = [
    [
      'no rules: never, no hooks',
      {},
      tracked(),
      { action: 'never', prepare: 'none', recover: 'none', affectsThisVm: true, leader: true },
    ],
    [
      'a matching rule with prepare and recover hooks',
      { rules, hooks: { prepare: [hook], recover: [hook] } },
      tracked(),
      { action: 'approve-after-hooks', rule: 'reboots', prepare: 'pending', recover: 'pending' },
    ],
    [
      'Started when first seen: no prepare hooks, recover still applies',
      { rules, hooks: { prepare: [hook], recover: [hook] } },
      tracked({ EventStatus: 'Started' }),
      { prepare: 'none', recover: 'pending' },
    ],
    [
      'not affecting this VM: no hooks, not the leader of a set it is not in',
      { rules, hooks: { prepare: [hook], recover: [hook] } },
      tracked({ Resources: ['vm1'] }),
      { affectsThisVm: false, prepare: 'none', recover: 'none' },
    ],
    ['dry run is copied', { rules, dryRun: true }, tracked(), { dryRun: true }],
  ];
  it.each(cases)('%s', (_name, section, event, expected) => {
    const entry = newProgress(config(section), event, VM);
    expect(entry).toMatchObject({ key: 'E1#1', eventId: 'E1', post: 'none', approval: null, ...expected });
  });
});

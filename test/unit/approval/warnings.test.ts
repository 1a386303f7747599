/** The approval policy's warning (src/approval/warnings.ts): rules that can release VMs whose preparation is unseen. */
import { describe, expect, it } from 'vitest';
import { approvalSection } from '../../../src/approval/config.ts';
import { multiVmApprovalWarnings } from '../../../src/approval/warnings.ts';

const drain = { name: 'drain', command: '/usr/local/bin/drain', eventTypes: ['Reboot'] };
const policy = (rule: Record<string, unknown>, hooks = [drain]) =>
  approvalSection.parse({ rules: [{ name: 'r', match: {}, ...rule }], hooks: { prepare: hooks } });
const warned = (rule: Record<string, unknown>, peerGate = false, hooks = [drain]) =>
  multiVmApprovalWarnings(policy(rule, hooks), peerGate).map((w) => w.path);

describe('multiVmApprovalWarnings', () => {
  it.each([
    ['approve-after-hooks, any event', { action: 'approve-after-hooks' }, false, ['approval.rules[0]']],
    ['approve (hooks run, do not gate)', { action: 'approve' }, false, ['approval.rules[0]']],
    [
      'resources up to 3 VMs',
      { action: 'approve-after-hooks', match: { resources: { max: 4 } } },
      false,
      ['approval.rules[0]'],
    ],
    [
      'single-VM events only (max 2, exclusive)',
      { action: 'approve-after-hooks', match: { resources: { max: 2 } } },
      false,
      [],
    ],
    ['never', { action: 'never' }, false, []],
    [
      'no prepare hook for its event types',
      { action: 'approve-after-hooks', match: { eventTypes: ['Freeze'] } },
      false,
      [],
    ],
    ['Kubernetes cluster approval, approve-after-hooks', { action: 'approve-after-hooks' }, true, []],
    [
      'Kubernetes cluster approval, approve (does not wait)',
      { action: 'approve' },
      true,
      ['approval.rules[0]'],
    ],
  ] as const)('%s', (_name, rule, peerGate, expected) => {
    expect(warned(rule, peerGate)).toEqual(expected);
  });

  it('a rule without prepare hooks is not warned about', () => {
    expect(warned({ action: 'approve' }, false, [])).toEqual([]);
  });
});

/** The one "was the approval posted" rule (src/domain/approval.ts), table-driven. */
import { describe, expect, it } from 'vitest';
import {
  approvalInputPosted,
  approvalRecordKind,
  approvalRecordPosted,
} from '../../../src/domain/approval.ts';
import type { ApprovalInput } from '../../../src/transform/index.ts';

const ok = { name: 'drain', ok: true, exitCode: 0, durationMs: 1 };
const failed = { name: 'drain', ok: false, exitCode: 1, durationMs: 1 };
const input = (over: Partial<ApprovalInput>): ApprovalInput =>
  ({ eventId: 'e1', approvedAtMs: 0, rule: 'r', leader: true, hooks: [ok], ...over }) as ApprovalInput;

describe('approvalInputPosted', () => {
  const cases: [string, Partial<ApprovalInput>, boolean][] = [
    ['leader, hooks ok', {}, true],
    ['leader, no hooks', { hooks: [] }, true],
    ['leader, a hook failed', { hooks: [ok, failed] }, false],
    ['not the leader', { leader: false }, false],
    ['dry run', { dryRun: true }, false],
    ['explicitly posted', { leader: false, posted: true }, true],
    ['explicitly not posted', { posted: false }, false],
    ['dry run wins over posted', { dryRun: true, posted: true }, false],
  ];
  it.each(cases)('%s', (_name, over, expected) => {
    expect(approvalInputPosted(input(over))).toBe(expected);
  });
});

describe('approvalRecordPosted', () => {
  const cases: [string, Record<string, unknown>, boolean][] = [
    ['posted', { approval: { posted: true, dryRun: false } }, true],
    ['posted, dryRun missing', { approval: { posted: true } }, true],
    ['not posted', { approval: { posted: false, dryRun: false } }, false],
    ['dry run', { approval: { posted: true, dryRun: true } }, false],
    ['no approval data', {}, false],
    ['posted is not a boolean', { approval: { posted: 'true' } }, false],
  ];
  it.each(cases)('%s', (_name, data, expected) => {
    expect(approvalRecordPosted(data)).toBe(expected);
  });
});

describe('approvalRecordKind', () => {
  const cases: [string, Partial<ApprovalInput>, string][] = [
    ['posted', {}, 'posted'],
    ['dry run', { dryRun: true }, 'dry-run'],
    ['leader, hook failed', { hooks: [failed] }, 'not-posted'],
    ['leader, POST failed', { posted: false }, 'not-posted'],
    ['not the leader', { leader: false, posted: false }, 'not-leader'],
  ];
  it.each(cases)('%s', (_name, over, expected) => {
    expect(approvalRecordKind(input(over))).toBe(expected);
  });
});

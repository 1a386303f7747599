import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldEvent } from '../../../src/fleet/fold.ts';
import { parseRecord } from '../../../src/fleet/validate.ts';
import { freezeLifecycle, iso, record } from '../../support/fleet-records.ts';

describe('foldEvent', () => {
  it('summarizes a full lifecycle: notice, advertised versus observed impact, lapsed approval', () => {
    const e = foldEvent(freezeLifecycle());
    expect(e).toMatchObject({
      status: 'completed',
      eventType: 'Freeze',
      firstSeenAt: iso(0),
      notBefore: iso(900),
      noticeSeconds: 900,
      advertisedSeconds: 5,
      observedSeconds: 4.2,
      startedAt: iso(950),
      endedAt: iso(960),
      inferred: false,
      approval: 'lapsed',
      missing: [],
      vmDeleted: false,
      records: 3,
    });
  });

  it('gives the same row for every arrival order (property)', () => {
    const records = [
      ...freezeLifecycle(),
      record('updated', { at: 10, notBeforeAt: 1200, extra: { changed: ['NotBefore'], updateSequence: 1 } }),
    ];
    const expected = foldEvent(records);
    expect(expected.noticeSeconds).toBe(900); // completed (latest) carries the latest NotBefore known to it
    fc.assert(
      fc.property(
        fc.shuffledSubarray(records, { minLength: records.length, maxLength: records.length }),
        (order) => {
          expect(foldEvent(order)).toEqual(expected);
        },
      ),
    );
  });

  it('tolerates Completed without Started: the missing transition is named, the start time kept', () => {
    const [scheduled, , completed] = freezeLifecycle();
    const e = foldEvent([completed!, scheduled!]);
    expect(e.status).toBe('completed');
    expect(e.startedAt).toBe(iso(950));
    expect(e.missing).toEqual(['started']);
  });

  it('a hardware failure first seen Started misses nothing and had no approval window', () => {
    const started = record('started', {
      at: 5,
      startedAt: 5,
      notBeforeAt: null,
      firstSeenStatus: 'Started',
      firstSeenAt: 5,
    });
    const e = foldEvent([started]);
    expect(e).toMatchObject({ status: 'started', missing: [], approval: 'none', noticeSeconds: null });
  });

  it('a started Preempt of the reporting VM means the VM is deleted (no terminal record will come)', () => {
    const e = foldEvent([
      record('scheduled', { eventType: 'Preempt', at: 0, notBeforeAt: 30 }),
      record('started', { eventType: 'Preempt', at: 31, startedAt: 31, notBeforeAt: 30 }),
    ]);
    expect(e).toMatchObject({ status: 'started', vmDeleted: true });
  });

  it('approvals posted by us win over dry runs; canceled events had none', () => {
    const approved = record('approved', {
      at: 100,
      extra: { approval: { approvedAt: iso(100), rule: 'short-freeze', posted: true, dryRun: false } },
    });
    expect(foldEvent([...freezeLifecycle(), approved])).toMatchObject({
      approval: 'us',
      approvedAt: iso(100),
      approvalRule: 'short-freeze',
    });
    const dry = record('approved', {
      at: 100,
      extra: { approval: { rule: 'r', posted: false, dryRun: true } },
    });
    expect(foldEvent([...freezeLifecycle(), dry]).approval).toBe('dry-run');
    const canceled = record('canceled', { at: 300, extra: { inferred: false } });
    expect(foldEvent([record('scheduled', { at: 0 }), canceled])).toMatchObject({
      status: 'canceled',
      approval: 'none',
    });
  });
});

describe('parseRecord', () => {
  it('accepts objects, JSON text and bytes', () => {
    const r = freezeLifecycle()[0]!;
    expect('record' in parseRecord(r)).toBe(true);
    expect('record' in parseRecord(JSON.stringify(r))).toBe(true);
    expect('record' in parseRecord(Buffer.from(JSON.stringify(r)))).toBe(true);
  });

  it.each([
    ['not json', 'body is not JSON'],
    [[1, 2], 'body is not an object'],
    [{ specversion: '1.0', id: 'x' }, 'source: missing (expected a string) (and 4 more)'],
    [
      { specversion: '1.0', id: 'x', source: 's', type: 'com.example.other', subject: 'E', time: iso(0) },
      'type: unknown type "com.example.other" (and 1 more)',
    ],
  ])('rejects %j naming the problem', (body, reason) => {
    expect(parseRecord(body)).toEqual({ error: reason });
  });
});

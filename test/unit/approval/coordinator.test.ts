/**
 * ApprovalCoordinator against states produced by the real transform, an in-memory meta store, a recording
 * IMDS client double and an injected clock: restart recovery, idempotency, lapsed NotBefore, rejected POSTs,
 * pruning, unknown identity.
 */
import { describe, expect, it } from 'vitest';
import {
  type ApprovalClient,
  ApprovalCoordinator,
  approvalSection,
  PROGRESS_META_KEY,
} from '../../../src/approval/index.ts';
import type { EventProgress } from '../../../src/approval/progress.ts';
import type { ScheduledEvent, VmIdentity } from '../../../src/domain/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { ImdsError } from '../../../src/sources/imds-protocol/errors.ts';
import {
  type ApprovalInput,
  type ForwarderState,
  initialState,
  transform,
} from '../../../src/transform/index.ts';
import { eventProgress, scheduledEvent } from './fixtures.ts';

const T0 = Date.parse('2022-04-11T22:10:00Z');
const VM = { name: 'WestNO_0', vmId: 'vm-0' } as VmIdentity;

function event(fields: Partial<ScheduledEvent> = {}): ScheduledEvent {
  return scheduledEvent({ Resources: ['WestNO_0', 'WestNO_1'], ...fields });
}

function step(
  state: ForwarderState,
  events: ScheduledEvent[],
  atMs: number,
  approvals: ApprovalInput[] = [],
) {
  return transform(state, {
    outcome: {
      kind: 'document',
      document: { DocumentIncarnation: 1, Events: events },
      observed: { wallMs: atMs, monotonicMs: atMs },
      changed: true,
    },
    vm: VM,
    approvals,
  });
}

class MemoryMeta {
  readonly values = new Map<string, string>();
  getMeta(key: string) {
    return this.values.get(key);
  }
  setMeta(key: string, value: string) {
    this.values.set(key, value);
  }
  progress(): EventProgress[] {
    return JSON.parse(this.values.get(PROGRESS_META_KEY) ?? '[]') as EventProgress[];
  }
}

class RecordingClient implements ApprovalClient {
  readonly calls: string[][] = [];
  failWith: Error | undefined;
  async approve(eventIds: string[]): Promise<void> {
    this.calls.push(eventIds);
    if (this.failWith) throw this.failWith;
  }
}

function coordinator(
  meta: MemoryMeta,
  client: RecordingClient,
  approval: Record<string, unknown>,
  opts: { now?: () => number; vm?: VmIdentity | undefined } = {},
) {
  return new ApprovalCoordinator({
    config: approvalSection.parse(approval),
    store: meta,
    client,
    identity: () => ('vm' in opts ? opts.vm : VM),
    pollIntervalMs: 10,
    logger: silentLogger(),
    now: opts.now ?? (() => T0 + 5_000),
  });
}

const APPROVE_USER = { rules: [{ name: 'user', match: { eventSources: ['User'] }, action: 'approve' }] };

describe('ApprovalCoordinator', () => {
  it('POSTs once, hands the approval to the transform until committed, then never again', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, APPROVE_USER);
    const first = step(initialState(), [event()], T0);
    c.start(initialState());
    c.afterCommit({ state: first.state, records: first.records, approvals: [] });
    await c.idle();
    expect(client.calls).toEqual([['E1']]);
    const pending = c.pendingApprovals();
    expect(pending).toEqual([
      expect.objectContaining({ eventId: 'E1', leader: true, posted: true, rule: 'user' }),
    ]);

    const second = step(first.state, [event()], T0 + 1000, pending);
    expect(second.records.map((r) => r.transition)).toEqual(['approved']);
    c.afterCommit({ state: second.state, records: second.records, approvals: pending });
    await c.idle();
    expect(c.pendingApprovals()).toEqual([]);

    // A new coordinator on the same meta (a restart) neither POSTs nor re-records.
    const restarted = coordinator(meta, client, APPROVE_USER);
    restarted.start(second.state);
    await restarted.idle();
    expect(client.calls.length).toBe(1);
    expect(restarted.pendingApprovals()).toEqual([]);
  });

  it('an approval the state already recorded (crash after the commit, before the progress write) is not recorded again', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, APPROVE_USER);
    const first = step(initialState(), [event()], T0);
    c.start(first.state);
    await c.idle();
    const pending = c.pendingApprovals();
    const committed = step(first.state, [event()], T0 + 1000, pending); // committed, but afterCommit never ran
    const restarted = coordinator(meta, client, APPROVE_USER);
    restarted.start(committed.state);
    expect(restarted.pendingApprovals()).toEqual([]);
    await restarted.idle();
    expect(client.calls.length).toBe(1);
  });

  it('a prepare hook interrupted by a crash counts as failed: no POST, a not-posted record', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const approval = {
      rules: [{ name: 'after', match: {}, action: 'approve-after-hooks' }],
      hooks: { prepare: [{ name: 'drain', command: process.execPath, args: ['-e', ''] }] },
    };
    const first = step(initialState(), [event()], T0);
    const interrupted = eventProgress({ action: 'approve-after-hooks', rule: 'after', prepare: 'running' });
    meta.setMeta(PROGRESS_META_KEY, JSON.stringify([interrupted]));
    const c = coordinator(meta, client, approval);
    c.start(first.state);
    await c.idle();
    expect(client.calls).toEqual([]);
    expect(c.pendingApprovals()).toEqual([
      expect.objectContaining({
        leader: true,
        posted: false,
        hooks: [expect.objectContaining({ name: 'drain', ok: false })],
      }),
    ]);
  });

  it('does not POST once NotBefore has passed, and records that it did not', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, APPROVE_USER, { now: () => Date.parse('2022-04-11T22:25:01Z') });
    const first = step(initialState(), [event()], T0);
    c.start(first.state);
    await c.idle();
    expect(client.calls).toEqual([]);
    expect(c.pendingApprovals()).toEqual([expect.objectContaining({ leader: true, posted: false })]);
  });

  it('gives up on a rejected POST (400) without retrying', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    client.failWith = new ImdsError('bad-request', 'IMDS rejected the request as malformed (400)');
    const c = coordinator(meta, client, APPROVE_USER);
    c.start(step(initialState(), [event()], T0).state);
    await c.idle();
    expect(client.calls.length).toBe(1);
    expect(meta.progress()[0]).toMatchObject({ post: 'failed', approval: { posted: false } });
  });

  it('forgets an event once it ended and its approval was recorded', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, APPROVE_USER);
    const first = step(initialState(), [event()], T0);
    c.start(first.state);
    await c.idle();
    const pending = c.pendingApprovals();
    const gone = step(first.state, [], T0 + 1000, pending);
    expect(gone.records.map((r) => r.transition)).toEqual(['approved', 'completed']);
    expect(gone.records[1]!.data.reason).toBe('approved-by-us');
    c.afterCommit({ state: gone.state, records: gone.records, approvals: pending });
    await c.idle();
    expect(meta.progress()).toEqual([]);
  });

  it('waits for the VM identity before deciding', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    let vm: VmIdentity | undefined;
    const c = new ApprovalCoordinator({
      config: approvalSection.parse(APPROVE_USER),
      store: meta,
      client,
      identity: () => vm,
      pollIntervalMs: 10,
      logger: silentLogger(),
      now: () => T0 + 5_000,
    });
    const first = step(initialState(), [event()], T0);
    c.start(first.state);
    await c.idle();
    expect(meta.progress()).toEqual([]);
    vm = VM;
    c.afterCommit({ state: first.state, records: [], approvals: [] });
    await c.idle();
    expect(client.calls).toEqual([['E1']]);
  });

  it('an unaffected VM decides nothing, whatever the rules say', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, APPROVE_USER, { vm: { name: 'Elsewhere' } as VmIdentity });
    c.start(step(initialState(), [event()], T0).state);
    await c.idle();
    expect(client.calls).toEqual([]);
    expect(c.pendingApprovals()).toEqual([]);
  });

  it('reconfigure (a reload): events seen next follow the new rules; an event already decided keeps its decision', async () => {
    const meta = new MemoryMeta();
    const client = new RecordingClient();
    const c = coordinator(meta, client, {}); // observe only: no rule approves anything
    const first = step(initialState(), [event()], T0);
    c.start(initialState());
    c.afterCommit({ state: first.state, records: first.records, approvals: [] });
    await c.idle();
    expect(client.calls).toEqual([]);
    expect(meta.progress().map((p) => [p.eventId, p.action])).toEqual([['E1', 'never']]);

    c.reconfigure(approvalSection.parse(APPROVE_USER));
    const second = step(first.state, [event(), event({ EventId: 'E2' })], T0 + 1000);
    c.afterCommit({ state: second.state, records: second.records, approvals: [] });
    await c.idle();
    expect(client.calls).toEqual([['E2']]); // E1 was decided before the reload: as across a restart
    expect(meta.progress().map((p) => [p.eventId, p.action, p.rule])).toEqual([
      ['E1', 'never', expect.any(String)],
      ['E2', 'approve', 'user'],
    ]);
  });
});

/**
 * The approval runner (src/approval/runner.ts) executing plans: logs (once-only ones once), persisted progress
 * (a failing store is logged, never thrown), real hook processes followed by the next plan, and POST retries —
 * with an in-memory meta store, a recording IMDS client double and captured logs.
 */

import { describe, expect, it } from 'vitest';
import { approvalSection } from '../../../src/approval/config.ts';
import { reconcile } from '../../../src/approval/plan.ts';
import { type EventProgress, PROGRESS_META_KEY } from '../../../src/approval/progress.ts';
import { type ApprovalClient, ApprovalRunner } from '../../../src/approval/runner.ts';
import type { VmIdentity } from '../../../src/domain/index.ts';
import { createLogger } from '../../../src/log.ts';
import { ImdsError } from '../../../src/sources/imds-protocol/errors.ts';
import { type ForwarderState, initialState, transform } from '../../../src/transform/index.ts';
import { auditedStream } from '../../support/logs.ts';
import { scheduledEvent } from './fixtures.ts';

const T0 = Date.parse('2022-04-11T22:10:00Z');
const VM = { name: 'vm0', vmId: 'id0' } as VmIdentity;

function scheduled(): ForwarderState {
  const event = scheduledEvent({ Resources: ['vm0'] });
  return transform(initialState(), {
    outcome: {
      kind: 'document',
      document: { DocumentIncarnation: 1, Events: [event] },
      observed: { wallMs: T0, monotonicMs: T0 },
      changed: true,
    },
    vm: VM,
    approvals: [],
  }).state;
}

class MemoryMeta {
  readonly values = new Map<string, string>();
  failing = false;
  getMeta(key: string) {
    return this.values.get(key);
  }
  setMeta(key: string, value: string) {
    if (this.failing) throw new Error('ENOSPC: no space left on device');
    this.values.set(key, value);
  }
  progress(): EventProgress[] {
    return JSON.parse(this.values.get(PROGRESS_META_KEY) ?? '[]') as EventProgress[];
  }
}

class RecordingClient implements ApprovalClient {
  readonly calls: string[][] = [];
  readonly failures: Error[] = [];
  async approve(eventIds: string[]): Promise<void> {
    this.calls.push(eventIds);
    const failure = this.failures.shift();
    if (failure) throw failure;
  }
}

function setup(
  section: Record<string, unknown>,
  opts: { vm?: VmIdentity | undefined; now?: () => number } = {},
) {
  const vm = 'vm' in opts ? opts.vm : VM;
  const lines: Array<{ level: number; msg: string } & Record<string, unknown>> = [];
  const stream = auditedStream((line) => lines.push(JSON.parse(line)));
  const meta = new MemoryMeta();
  const client = new RecordingClient();
  const runner = new ApprovalRunner({
    config: approvalSection.parse(section),
    store: meta,
    client,
    identity: () => vm,
    pollIntervalMs: 5,
    logger: createLogger({ level: 'debug', pretty: false, destination: stream }),
    now: opts.now ?? (() => T0 + 5_000),
  });
  const state = scheduled();
  runner.track(state);
  const plan = () => reconcile(runner.progress, runner.facts(), { records: [], approvals: [] });
  return { lines, meta, client, runner, state, plan };
}

const APPROVE = { rules: [{ name: 'user', match: { eventSources: ['User'] }, action: 'approve' }] };
const AFTER_HOOKS = (...exitCodes: number[]) => ({
  rules: [{ name: 'user', match: {}, action: 'approve-after-hooks' }],
  hooks: {
    prepare: exitCodes.map((code, i) => ({
      name: `h${i}`,
      command: process.execPath,
      args: ['-e', `process.exit(${code})`],
    })),
  },
});

describe('ApprovalRunner', () => {
  it('a once-only log line is written once per process; nothing undecided is persisted', async () => {
    const { lines, meta, runner, plan } = setup(APPROVE, { vm: undefined });
    runner.apply(plan());
    runner.apply(plan());
    expect(lines.filter((l) => l.msg.startsWith('VM identity unknown'))).toHaveLength(1);
    expect(meta.values.has(PROGRESS_META_KEY)).toBe(false); // nothing decided, nothing to persist
    await runner.idle();
  });

  it('persists and logs the decision, then POSTs once', async () => {
    const { lines, meta, client, runner, plan } = setup(APPROVE);
    runner.apply(plan());
    expect(lines.find((l) => l.msg === 'approval decision')).toMatchObject({ eventId: 'E1', rule: 'user' });
    expect(meta.progress()).toEqual([expect.objectContaining({ key: 'E1#1', post: 'pending' })]);
    await runner.idle();
    expect(client.calls).toEqual([['E1']]);
    expect(meta.progress()[0]).toMatchObject({ post: 'posted', approval: { posted: true } });
  });

  it('a store that cannot be written is logged as an error; the runner carries on', async () => {
    const { lines, meta, client, runner, plan } = setup(APPROVE);
    meta.failing = true;
    expect(() => runner.apply(plan())).not.toThrow();
    await runner.idle();
    expect(lines.some((l) => l.level === 50 && l.msg.startsWith('cannot persist approval progress'))).toBe(
      true,
    );
    expect(client.calls).toEqual([['E1']]);
    expect(runner.progress[0]).toMatchObject({ post: 'posted' });
  });

  it('runs the prepare hooks (real processes), then asks the plan again: all ok → one POST', async () => {
    const { meta, client, runner, plan } = setup(AFTER_HOOKS(0, 0));
    runner.apply(plan());
    expect(runner.progress[0]).toMatchObject({ prepare: 'running' });
    await runner.idle();
    expect(meta.progress()[0]).toMatchObject({
      prepare: 'done',
      hooks: [
        expect.objectContaining({ name: 'h0', ok: true }),
        expect.objectContaining({ name: 'h1', ok: true }),
      ],
      post: 'posted',
    });
    expect(client.calls).toEqual([['E1']]);
  });

  it('stops at the first failed prepare hook: the rest do not run, nothing is POSTed', async () => {
    const { meta, client, runner, plan } = setup(AFTER_HOOKS(3, 0));
    runner.apply(plan());
    await runner.idle();
    expect(meta.progress()[0]).toMatchObject({
      prepare: 'done',
      hooks: [expect.objectContaining({ name: 'h0', ok: false, exitCode: 3 })],
      post: 'none',
      approval: { leader: true, posted: false },
    });
    expect(client.calls).toEqual([]);
  });

  it('retries a transient POST failure, then records one posted approval', async () => {
    let t = T0 + 5_000;
    const { lines, meta, client, runner, plan } = setup(APPROVE, { now: () => ++t }); // 1 ms per reading
    client.failures.push(new ImdsError('server-error', 'IMDS answered 503', { httpStatus: 503 }));
    runner.apply(plan());
    await runner.idle();
    expect(client.calls).toEqual([['E1'], ['E1']]);
    expect(lines.find((l) => l.msg === 'approval POST failed; retrying')).toMatchObject({ retryMs: 5 });
    expect(meta.progress()[0]).toMatchObject({ post: 'posted', approval: { posted: true } });
  });

  it('after stop() nothing new starts: the progress stays for the next start', async () => {
    const { meta, client, runner, plan } = setup(AFTER_HOOKS(0));
    await runner.stop();
    runner.apply(reconcile(runner.progress, runner.facts(), { records: [], approvals: [] }));
    await runner.idle();
    expect(client.calls).toEqual([]);
    expect(meta.progress()[0]).toMatchObject({ prepare: 'pending', hooks: [] });
    expect(plan().actions.some((a) => a.kind === 'prepare' || a.kind === 'post')).toBe(false);
  });
});

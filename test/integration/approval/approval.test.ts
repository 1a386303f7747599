/**
 * Approval end to end, in process: the real Forwarder (IMDS client over HTTP to the simulator, real SQLite
 * outbox, file sink) with the ApprovalCoordinator, and real hook processes (process.execPath + hook.mjs).
 * Simulated time is frozen (timeScale 0), so an event can only start early through our POST.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { silentLogger } from '../../../src/log.ts';
import { Forwarder } from '../../../src/pipeline/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const HOOK = join(import.meta.dirname, 'hook.mjs');
const LEADER = 'WestNO_0';
const FOLLOWER = 'WestNO_1';

const tmp = makeTempDir('sef-approval-');
afterAll(() => tmp.cleanup());
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let counter = 0;
function path(name: string): string {
  return join(tmp.dir, `${name}-${++counter}`);
}

function jsonLines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

interface HookLine {
  mode: string;
  env: Record<string, string>;
  stdin: LifecycleRecord;
}

const SAMPLE_RULES = [
  { name: 'approve-user-initiated', match: { eventSources: ['User'] }, action: 'approve' },
  {
    name: 'approve-short-freeze',
    match: { eventTypes: ['Freeze'], durationInSeconds: { min: 0, max: 9 } },
    action: 'approve',
  },
];

function hook(name: string, mode: 'ok' | 'fail' | 'hang', log: string, extra: Record<string, unknown> = {}) {
  return { name, command: process.execPath, args: [HOOK, mode, log], ...extra };
}

async function simulator(): Promise<RunningSimulator> {
  const sim = await startSimulator({ vmName: LEADER, timeScale: 0 });
  cleanups.push(() => sim.close());
  return sim;
}

/** Runs a forwarder for `vmName` against the simulator; returns the file sink's path. */
function forwarder(sim: RunningSimulator, approval: Record<string, unknown>, vmName = LEADER) {
  const out = path('records.jsonl');
  const config = loadConfig({
    overrides: {
      imds: { endpoint: vmName === LEADER ? sim.url : sim.vmUrl(vmName), pollIntervalMs: 200 },
      stateDir: path('state'),
      sinks: [{ name: 'file', type: 'file', path: out }],
      approval,
    },
  });
  const fwd = new Forwarder({ config, logger: silentLogger() });
  const controller = new AbortController();
  const running = fwd.run(controller.signal);
  cleanups.push(async () => {
    controller.abort();
    await running;
  });
  const records = () => jsonLines<LifecycleRecord>(out);
  return { fwd, records, out };
}

const posts = (sim: RunningSimulator) =>
  sim.admin.requests().log.filter((r) => r.method === 'POST' && r.endpoint === 'scheduledevents');

function byTransition(records: LifecycleRecord[], eventId: string, transition: string) {
  return records.find((r) => r.subject === eventId && r.transition === transition);
}

describe('approval with the simulator', () => {
  it('hooks succeed → the leader POSTs → the event starts before NotBefore; recover hooks run when it is gone', async () => {
    const sim = await simulator();
    const prepareLog = path('prepare.jsonl');
    const recoverLog = path('recover.jsonl');
    const { records } = forwarder(sim, {
      rules: [
        { name: 'drain-then-approve', match: { eventTypes: ['Reboot'] }, action: 'approve-after-hooks' },
      ],
      hooks: {
        prepare: [
          hook('drain', 'ok', prepareLog, { eventTypes: ['Reboot'] }),
          hook('checkpoint', 'ok', prepareLog),
        ],
        recover: [hook('rejoin', 'ok', recoverLog)],
      },
    });
    const injected = sim.admin.injectEvent({
      id: 'E-REBOOT',
      type: 'Reboot',
      resources: [LEADER, FOLLOWER],
      noticeSeconds: '15m',
      startedFor: '1m',
    });
    const notBeforeMs = injected.notBeforeMs!;

    const started = await waitFor(() => byTransition(records(), 'E-REBOOT', 'started'), 'the started record');
    expect(sim.admin.approvals()).toEqual([expect.objectContaining({ eventId: 'E-REBOOT', vm: LEADER })]);
    expect(Date.parse(started.time)).toBeLessThan(notBeforeMs);
    expect(posts(sim).length).toBe(1);

    const approved = await waitFor(
      () => byTransition(records(), 'E-REBOOT', 'approved'),
      'the approved record',
    );
    expect(validateRecord(approved)).toEqual([]);
    expect(approved.data.approval).toMatchObject({
      rule: 'drain-then-approve',
      leader: true,
      posted: true,
      dryRun: false,
      hooks: [
        { name: 'drain', ok: true, exitCode: 0, timedOut: false },
        { name: 'checkpoint', ok: true, exitCode: 0, timedOut: false },
      ],
    });

    // Both prepare hooks got the scheduled record on stdin and the key fields in the environment.
    const prepared = jsonLines<HookLine>(prepareLog);
    expect(prepared.map((l) => l.env.SEF_HOOK_NAME)).toEqual(['drain', 'checkpoint']);
    expect(prepared[0]!.stdin).toMatchObject({ subject: 'E-REBOOT', transition: 'scheduled' });
    expect(prepared[0]!.env).toMatchObject({
      SEF_HOOK_PHASE: 'prepare',
      SEF_EVENT_ID: 'E-REBOOT',
      SEF_EVENT_TYPE: 'Reboot',
      SEF_EVENT_STATUS: 'Scheduled',
      SEF_RESOURCES: `${LEADER},${FOLLOWER}`,
      SEF_AFFECTS_THIS_VM: 'true',
      SEF_LEADER: 'true',
      SEF_VM_NAME: LEADER,
      SEF_NOT_BEFORE: new Date(notBeforeMs).toISOString(),
    });

    // Gone after the impact: completed (inferred approved-by-us is not needed: it was seen Started) + recover hook.
    sim.admin.advance(2 * 60_000);
    const completed = await waitFor(
      () => byTransition(records(), 'E-REBOOT', 'completed'),
      'the completed record',
    );
    expect(completed.data.inferred).toBe(false);
    const recovered = await waitFor(() => jsonLines<HookLine>(recoverLog)[0], 'the recover hook');
    expect(recovered.env).toMatchObject({ SEF_HOOK_PHASE: 'recover', SEF_EVENT_ID: 'E-REBOOT' });
    expect(recovered.stdin).toMatchObject({ subject: 'E-REBOOT', transition: 'completed' });
    expect(sim.admin.approvals().length).toBe(1);
  });

  it("the docs' sample policy approves a user event and a short freeze in one request, and leaves a reboot", async () => {
    const sim = await simulator();
    const { records } = forwarder(sim, { rules: SAMPLE_RULES });
    sim.admin.injectEvent({ id: 'E-USER', type: 'Reboot', eventSource: 'User', resources: [LEADER] });
    sim.admin.injectEvent({
      id: 'E-FREEZE',
      type: 'Freeze',
      durationInSeconds: 5,
      resources: [LEADER, FOLLOWER],
    });
    sim.admin.injectEvent({ id: 'E-PLATFORM', type: 'Reboot', resources: [LEADER] });

    await waitFor(
      () => byTransition(records(), 'E-USER', 'started') && byTransition(records(), 'E-FREEZE', 'started'),
      'both approved events started',
    );
    await waitFor(() => byTransition(records(), 'E-FREEZE', 'approved'), 'approved records');
    expect(
      sim.admin
        .approvals()
        .map((a) => a.eventId)
        .sort(),
    ).toEqual(['E-FREEZE', 'E-USER']);
    expect(posts(sim).length).toBe(1); // several events in one StartRequests
    const rules = records()
      .filter((r) => r.transition === 'approved')
      .map((r) => `${r.subject}:${(r.data.approval as { rule: string }).rule}`)
      .sort();
    expect(rules).toEqual(['E-FREEZE:approve-short-freeze', 'E-USER:approve-user-initiated']);
    expect(byTransition(records(), 'E-PLATFORM', 'approved')).toBeUndefined();
    expect(sim.admin.events().find((e) => e.id === 'E-PLATFORM')?.status).toBe('Scheduled');
  });

  it('a failing prepare hook prevents the approval (recorded as not posted, with the hook result)', async () => {
    const sim = await simulator();
    const log = path('prepare.jsonl');
    const { records } = forwarder(sim, {
      rules: [{ name: 'after-hooks', match: {}, action: 'approve-after-hooks' }],
      hooks: { prepare: [hook('drain', 'fail', log), hook('never-reached', 'ok', log)] },
    });
    sim.admin.injectEvent({ id: 'E-FAIL', type: 'Reboot', resources: [LEADER] });
    const approved = await waitFor(
      () => byTransition(records(), 'E-FAIL', 'approved'),
      'the approved record',
    );
    expect(approved.data.approval).toMatchObject({
      leader: true,
      posted: false,
      hooks: [{ name: 'drain', ok: false, exitCode: 3, timedOut: false }],
    });
    expect(jsonLines<HookLine>(log).map((l) => l.env.SEF_HOOK_NAME)).toEqual(['drain']);
    expect(sim.admin.approvals()).toEqual([]);
    expect(posts(sim)).toEqual([]);
  });

  it('a hook that outlives NotBefore minus the safety margin is killed and prevents the approval', async () => {
    const sim = await simulator();
    const log = path('prepare.jsonl');
    const { records } = forwarder(sim, {
      safetyMarginMs: 28_000,
      // A 30 s notice is short (below twice the margin): keep the margin for it too (see shortNoticeMarginMs).
      shortNoticeMarginMs: 28_000,
      rules: [{ name: 'after-hooks', match: {}, action: 'approve-after-hooks' }],
      hooks: { prepare: [hook('slow', 'hang', log, { timeoutMs: 600_000 })] },
    });
    // NotBefore in 30 s, margin 28 s: the 10-minute hook timeout is cut to about 2 s.
    sim.admin.injectEvent({ id: 'E-SLOW', type: 'Freeze', resources: [LEADER], noticeSeconds: 30 });
    const approved = await waitFor(
      () => byTransition(records(), 'E-SLOW', 'approved'),
      'the approved record',
      {
        timeoutMs: 20_000,
      },
    );
    const hooks = (approved.data.approval as { hooks: Array<Record<string, unknown>> }).hooks;
    expect(hooks).toEqual([expect.objectContaining({ name: 'slow', ok: false, timedOut: true })]);
    expect(hooks[0]!.durationMs as number).toBeLessThan(30_000);
    expect(sim.admin.approvals()).toEqual([]);
    expect(posts(sim)).toEqual([]);
  });

  it('a non-leader runs its own prepare hooks and records them, but never POSTs', async () => {
    const sim = await simulator();
    const log = path('prepare.jsonl');
    const { records } = forwarder(
      sim,
      {
        rules: SAMPLE_RULES,
        hooks: { prepare: [hook('drain', 'ok', log)] },
      },
      FOLLOWER,
    );
    sim.admin.injectEvent({
      id: 'E-SHARED',
      type: 'Freeze',
      durationInSeconds: 5,
      resources: [LEADER, FOLLOWER],
    });
    const approved = await waitFor(
      () => byTransition(records(), 'E-SHARED', 'approved'),
      'the approved record',
    );
    expect(approved.data.approval).toMatchObject({
      rule: 'approve-short-freeze',
      leader: false,
      posted: false,
      hooks: [{ name: 'drain', ok: true }],
    });
    expect(jsonLines<HookLine>(log)[0]?.env.SEF_LEADER).toBe('false');
    expect(sim.admin.approvals()).toEqual([]);
    expect(posts(sim)).toEqual([]);
  });

  it('dry-run decides and records, but never POSTs', async () => {
    const sim = await simulator();
    const { records } = forwarder(sim, { dryRun: true, rules: SAMPLE_RULES });
    sim.admin.injectEvent({ id: 'E-DRY', type: 'Reboot', eventSource: 'User', resources: [LEADER] });
    const approved = await waitFor(() => byTransition(records(), 'E-DRY', 'approved'), 'the approved record');
    expect(approved.data.approval).toMatchObject({ dryRun: true, posted: false, leader: true });
    expect(sim.admin.approvals()).toEqual([]);
    expect(posts(sim)).toEqual([]);
    expect(sim.admin.events().find((e) => e.id === 'E-DRY')?.status).toBe('Scheduled');
  });

  it('observe-only by default: no approval section, nothing is POSTed', async () => {
    const sim = await simulator();
    const { records } = forwarder(sim, {});
    sim.admin.injectEvent({ id: 'E-OBS', type: 'Reboot', eventSource: 'User', resources: [LEADER] });
    await waitFor(() => byTransition(records(), 'E-OBS', 'scheduled'), 'the scheduled record');
    expect(records().filter((r) => r.transition === 'approved')).toEqual([]);
    expect(posts(sim)).toEqual([]);
  });

  it('retries a failed POST (503) no faster than the poll interval, then records one approval', async () => {
    const sim = await simulator();
    sim.admin.addFault({ kind: 'status', status: 503, method: 'POST', count: 2 });
    const { records } = forwarder(sim, { rules: SAMPLE_RULES });
    sim.admin.injectEvent({ id: 'E-RETRY', type: 'Reboot', eventSource: 'User', resources: [LEADER] });
    await waitFor(() => byTransition(records(), 'E-RETRY', 'approved'), 'the approved record');
    const attempts = posts(sim);
    expect(attempts.map((r) => r.status)).toEqual([503, 503, 200]);
    for (let i = 1; i < attempts.length; i++) {
      expect(Date.parse(attempts[i]!.at) - Date.parse(attempts[i - 1]!.at)).toBeGreaterThanOrEqual(190);
    }
    expect(sim.admin.approvals().length).toBe(1);
  });
});

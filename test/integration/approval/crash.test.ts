/**
 * Crash between hook success and the approval POST, with real processes: `node src/cli/main.ts run --config`
 * against the simulator, whose POSTs hang (fault) so the forwarder is SIGKILLed while its StartRequests is in
 * flight, after the prepare hook succeeded. After a restart the approval happens exactly once and the hook is
 * not run again.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, fileSinkRecords, spawnCli } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const HOOK = join(import.meta.dirname, 'hook.mjs');
const tmp = makeTempDir('sef-approval-crash-');
const children: ForwarderChild[] = [];
let sim: RunningSimulator | undefined;
afterEach(async () => {
  for (const c of children.splice(0))
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await sim?.close();
});
afterAll(() => tmp.cleanup());

const lines = <T>(file: string): T[] =>
  existsSync(file) ? fileSinkRecords<T>(readFileSync(file, 'utf8')).records : [];

it.each([
  { rerunHooksAfterRestart: false, hookRuns: 1 },
  { rerunHooksAfterRestart: true, hookRuns: 2 },
])(
  'SIGKILL after the prepare hook succeeded, before the POST completed (rerunHooksAfterRestart $rerunHooksAfterRestart): after restart exactly one approval, hook runs $hookRuns',
  async ({ rerunHooksAfterRestart, hookRuns }) => {
    const dir = join(tmp.dir, String(rerunHooksAfterRestart));
    mkdirSync(dir);
    sim = await startSimulator({ vmName: 'WestNO_0', timeScale: 0 });
    const hookLog = join(dir, 'prepare.jsonl');
    const out = join(dir, 'records.jsonl');
    const configFile = join(dir, 'forwarder.yaml');
    writeFileSync(
      configFile,
      stringify({
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        stateDir: join(dir, 'state'),
        sinks: [{ name: 'file', type: 'file', path: out }],
        approval: {
          rerunHooksAfterRestart,
          rules: [
            { name: 'drain-then-approve', match: { eventTypes: ['Reboot'] }, action: 'approve-after-hooks' },
          ],
          hooks: { prepare: [{ name: 'drain', command: process.execPath, args: [HOOK, 'ok', hookLog] }] },
        },
      }),
    );

    // Every StartRequests POST hangs: the forwarder is killed while its approval is in flight.
    sim.admin.addFault({ kind: 'hang', method: 'POST' });
    const first = spawnCli(['run', '--config', configFile]);
    children.push(first);
    await first.ready;
    sim.admin.injectEvent({
      id: 'E-CRASH',
      type: 'Reboot',
      resources: ['WestNO_0', 'WestNO_1'],
      noticeSeconds: '15m',
    });
    await waitFor(
      () => first.stderr().includes('"msg":"posting StartRequests"'),
      'the approval POST in flight',
    );
    expect(lines(hookLog).length).toBe(1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(sim.admin.approvals()).toEqual([]);
    expect(sim.admin.events().find((e) => e.id === 'E-CRASH')?.status).toBe('Scheduled');

    sim.admin.clearFaults();
    const second = spawnCli(['run', '--config', configFile]);
    children.push(second);
    await second.ready;
    await waitFor(() => sim!.admin.approvals().length === 1, 'the approval after the restart');
    const approved = await waitFor(
      () => lines<LifecycleRecord>(out).find((r) => r.subject === 'E-CRASH' && r.transition === 'approved'),
      'the approved record',
    );
    await waitFor(
      () => lines<LifecycleRecord>(out).some((r) => r.subject === 'E-CRASH' && r.transition === 'started'),
      'the started record',
    );
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });

    expect(sim.admin.approvals()).toEqual([expect.objectContaining({ eventId: 'E-CRASH', vm: 'WestNO_0' })]);
    // By default the hook ran once, before the crash, and its persisted result is what the approval reports.
    expect(lines(hookLog).length).toBe(hookRuns);
    expect(second.stderr().includes('"msg":"running hook"')).toBe(rerunHooksAfterRestart);
    expect(approved.data.approval).toMatchObject({
      rule: 'drain-then-approve',
      leader: true,
      posted: true,
      hooks: [{ name: 'drain', ok: true, exitCode: 0 }],
    });
    expect(lines<LifecycleRecord>(out).filter((r) => r.transition === 'approved').length).toBe(1);
  },
);

/**
 * Issue 15, item 12: `run --record` keeps the VM identity in the capture and `run --replay` uses it, so replayed
 * records have the same source, vmid and affectsThisVm as the live ones (Slack/Teams, scope this-vm, keep them).
 * Captures written before the identity was recorded still replay (as records of an unknown VM).
 * Real child processes against the simulator.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { jsonLines, MAIN, REPO, spawnCli } from '../../support/child.ts';
import { runArgs } from '../../support/forwarder.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-record-replay-');
let sim: RunningSimulator | undefined;
afterAll(async () => {
  await sim?.close();
  tmp.cleanup();
});

const records = (file: string): LifecycleRecord[] =>
  existsSync(file) ? jsonLines<LifecycleRecord>(readFileSync(file, 'utf8')) : [];

async function replay(capture: string, name: string): Promise<LifecycleRecord[]> {
  const out = join(tmp.dir, `${name}.jsonl`);
  const args = [
    'run',
    '--replay',
    capture,
    '--replay-speed',
    '0',
    '--state-dir',
    join(tmp.dir, `${name}-state`),
  ];
  await promisify(execFile)(process.execPath, [MAIN, ...args, '--sink', `file:${out}`], { cwd: REPO });
  return records(out);
}

describe('run --record / --replay and the VM identity', () => {
  it('replayed records keep the source, vmid and affectsThisVm of the live ones', async () => {
    sim = await startSimulator({ vmName: 'web-1', timeScale: 0 });
    sim.admin.injectEvent({ id: 'E-REC-1', type: 'Reboot', noticeSeconds: 900 });
    const capture = join(tmp.dir, 'capture.jsonl');
    const live = join(tmp.dir, 'live.jsonl');
    const fwd = spawnCli([
      ...runArgs({ imdsEndpoint: sim.url, stateDir: join(tmp.dir, 'live-state'), out: live }),
      '--record',
      capture,
    ]);
    await fwd.ready;
    await waitFor(() => records(live).length === 1, 'the live scheduled record');
    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);

    const [liveRecord] = records(live);
    expect(liveRecord?.source).not.toBe('urn:azure:vm:unknown');
    expect(liveRecord?.data.affectsThisVm).toBe(true);
    const lines = jsonLines<{ vm?: { name: string; vmId: string } }>(readFileSync(capture, 'utf8'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.vm).toMatchObject({ name: 'web-1', vmId: liveRecord?.vmid });

    const replayed = await replay(capture, 'replayed');
    expect(replayed.map((r) => `${r.subject}:${r.transition}`)).toEqual(['E-REC-1:scheduled']);
    expect(replayed[0]).toMatchObject({
      source: liveRecord?.source,
      vmid: liveRecord?.vmid,
      data: { affectsThisVm: true, vm: { name: 'web-1' } },
    });

    // A capture recorded before identities were kept replays as before: same events, unknown VM.
    const old = join(tmp.dir, 'old-capture.jsonl');
    writeFileSync(old, lines.map(({ vm: _vm, ...rest }) => `${JSON.stringify(rest)}\n`).join(''));
    const fromOld = await replay(old, 'old');
    expect(fromOld.map((r) => `${r.subject}:${r.transition}`)).toEqual(['E-REC-1:scheduled']);
    expect(fromOld[0]).toMatchObject({ source: 'urn:azure:vm:unknown', vmid: '' });
  });
});

/**
 * A step of the wall clock never holds a retry back (issue "Forwarder hardening, round 3", item 1): a real `run`
 * child against the IMDS simulator, its webhook sink pointed at a real HTTP receiver answering 503. The child's
 * wall clock (Date.now, new Date()) is stepped by a preloaded module (test/support/clock-shift-preload.ts) at
 * moments the test chooses: back 6 h while the sink is failing, then forward again (set right). Retries go on
 * at their backoff through both steps, and the record is delivered as soon as the receiver is fixed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, spawnCli } from '../../support/child.ts';
import { clockShift } from '../../support/clock-shift.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const HOUR = 60 * 60 * 1000;
const tmp = makeTempDir('sef-clock-step-');
let sim: RunningSimulator | undefined;
let receiver: HttpSinkServer | undefined;
let fwd: ForwarderChild | undefined;

afterAll(async () => {
  if (fwd !== undefined && fwd.child.exitCode === null && fwd.child.signalCode === null) {
    fwd.child.kill('SIGKILL');
    await fwd.exited;
  }
  await receiver?.close();
  await sim?.close();
  tmp.cleanup();
});

describe('wall-clock steps while a sink is failing', () => {
  it('retries go on at their backoff after a 6 h step back and after the clock is set right', async () => {
    sim = await startSimulator({ timeScale: 0 });
    receiver = await HttpSinkServer.start({ status: 503, body: 'maintenance' });
    const r = receiver;
    const shift = clockShift(tmp.dir);
    const stateDir = join(tmp.dir, 'state');
    mkdirSync(stateDir);
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(stateDir)}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'sinks:',
        `  - { name: hook, type: webhook, url: ${JSON.stringify(r.url('/hook'))}, delivery: { backoff: { initialMs: 100, maxMs: 300 } } }`,
        '',
      ].join('\n'),
    );
    fwd = spawnCli(['run', '--config', config], shift.env, shift.nodeArgs);
    await fwd.ready;

    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await r.waitForRequests(2); // failed, and retried at least once

    // The wall clock jumps 6 h back (the 503s go on): the next retries still come within their backoff.
    await shift.set(-6 * HOUR);
    const beforeBackStep = r.requests.length;
    await r.waitForRequests(beforeBackStep + 3);

    // The clock is set right again (a 6 h step forward): retries go on.
    await shift.set(0);
    const beforeForwardStep = r.requests.length;
    await r.waitForRequests(beforeForwardStep + 3);

    // Back 6 h once more, then the receiver is fixed: the record arrives at the next retry.
    await shift.set(-6 * HOUR);
    const beforeFix = r.requests.length;
    await r.waitForRequests(beforeFix + 1);
    r.setDefault({ status: 200, body: 'ok' });
    const fixedAt = r.requests.length;
    await r.waitForRequests(fixedAt + 1);
    await waitFor(
      () => fwd!.stderr().includes('sink recovered: delivered after'),
      'the delivery to be confirmed (sink recovered)',
    );

    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);
  });
});

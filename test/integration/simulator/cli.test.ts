/** The simulate / events / approve commands as real child processes against a real simulator. */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { FAULT_SPEC_FORM } from '../../../src/simulator/faults.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { waitFor } from '../../support/wait.ts';

const execFileAsync = promisify(execFile);
const MAIN = 'src/cli/main.ts';

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [MAIN, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let child: ChildProcess | undefined;
let sim: RunningSimulator | undefined;
afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill();
    await once(child, 'exit');
  }
  child = undefined;
  await sim?.close();
  sim = undefined;
});

/** Starts `simulate` and returns the parsed first stdout line plus a reader for the following lines. */
async function startSimulateCommand(
  args: string[],
): Promise<{ first: { url: string; vm: string }; lines: string[] }> {
  child = spawn(process.execPath, [MAIN, 'simulate', '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const reader = createInterface({ input: child.stdout! });
  const first = new Promise<string>((resolve, reject) => {
    reader.on('line', (line) => {
      lines.push(line);
      if (lines.length === 1) resolve(line);
    });
    child!.once('exit', (code) => reject(new Error(`simulate exited with ${code} before printing its URL`)));
  });
  return { first: JSON.parse(await first) as { url: string; vm: string }, lines };
}

describe('simulate command', () => {
  it('prints its URL first, serves IMDS, and stops on SIGTERM with a summary', async () => {
    const { first, lines } = await startSimulateCommand([
      '--time-scale',
      '0',
      '--vm-name',
      'drill-vm',
      '--inject',
      '{"EventId":"E-1","EventType":"Freeze","DurationInSeconds":5}',
    ]);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.vm).toBe('drill-vm');

    const events = await cli(['events', '--imds-endpoint', first.url]);
    expect(events.code).toBe(0);
    expect(JSON.parse(events.stdout)).toMatchObject({
      DocumentIncarnation: 2,
      Events: [{ EventId: 'E-1', EventType: 'Freeze', EventStatus: 'Scheduled', Resources: ['drill-vm'] }],
    });

    const dryRun = await cli(['approve', 'E-1', '--dry-run', '--imds-endpoint', first.url]);
    expect(dryRun.code).toBe(0);
    expect(JSON.parse(dryRun.stdout)).toMatchObject({ dryRun: true, wouldApprove: ['E-1'] });
    const approvalsAfterDryRun = (await (await fetch(`${first.url}/admin/approvals`)).json()) as unknown[];
    expect(approvalsAfterDryRun).toEqual([]);

    const approve = await cli(['approve', 'E-1', '--imds-endpoint', first.url]);
    expect([approve.code, JSON.parse(approve.stdout)]).toEqual([0, { approved: ['E-1'] }]);
    const started = await cli(['events', '--imds-endpoint', first.url, '--normalized']);
    expect(JSON.parse(started.stdout)).toMatchObject({
      Events: [{ EventStatus: 'Started', notBeforeUtc: null }],
    });

    child!.kill('SIGTERM');
    await once(child!, 'exit');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      stopped: 'SIGTERM',
      approvals: [{ eventId: 'E-1', vm: 'drill-vm' }],
    });
  });

  it('--exit-at-end exits when the scenario ends', async () => {
    const { first, lines } = await startSimulateCommand([
      '--scenario',
      'spot-preempt',
      '--time-scale',
      '500',
      '--exit-at-end',
      '--exit-grace',
      '0.2',
    ]);
    expect(first.vm).toBe('spotvmss_3');
    const [code] = (await once(child!, 'exit')) as [number];
    expect(code).toBe(0);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ stopped: 'scenario-ended' });
  });

  it('--exit-at-end keeps serving the final document during the exit grace', async () => {
    child = spawn(
      process.execPath,
      [
        MAIN,
        'simulate',
        '--scenario',
        'spot-preempt',
        '--time-scale',
        '500',
        '--exit-at-end',
        '--exit-grace',
        '600',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    await waitFor(
      () => stderr.includes('"msg":"scenario ended: serving the final document'),
      'the scenario end',
    );
    expect(stderr).toContain('"graceSeconds":600');
    const { url } = JSON.parse(lines[0]!) as { url: string };
    expect(stderr).toContain(`"listen":"${url}"`); // its own loopback address is not a secret
    expect(stderr).not.toContain('[redacted]');
    const response = await fetch(`${url}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { Metadata: 'true' },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { Events: unknown[] }).Events).toEqual([]); // the final document
    expect(child.exitCode).toBeNull();
    child.kill('SIGTERM');
    await once(child, 'exit');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ stopped: 'SIGTERM' });
  });

  it('--help shows no "(default: [])" for repeatable options', async () => {
    for (const command of ['run', 'simulate']) {
      const help = await cli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/--(sink|fault) <spec>/);
      expect(help.stdout).not.toContain('(default: [])');
    }
  });

  it('lists the bundled scenarios', async () => {
    const result = await cli(['simulate', '--list-scenarios']);
    expect(result.code).toBe(0);
    const names = result.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { name: string }).name);
    expect(names).toContain('live-migration-freeze');
    expect(names.length).toBeGreaterThanOrEqual(12);
  });

  it('usage errors exit 2 with a clear message', async () => {
    const noScenario = await cli(['simulate', '--exit-at-end']);
    expect([noScenario.code, noScenario.stderr]).toEqual([
      2,
      expect.stringContaining('--exit-at-end needs --scenario'),
    ]);
    const missing = await cli(['simulate', '--scenario', 'no-such-scenario']);
    expect([missing.code, missing.stderr]).toEqual([
      2,
      expect.stringContaining('scenario "no-such-scenario" not found'),
    ]);
    const badFault = await cli(['simulate', '--fault', 'explode']);
    expect(badFault.code).toBe(2);
    expect(badFault.stderr).toBe(
      `error: --fault "explode": unknown fault kind "explode". ${FAULT_SPEC_FORM}\n`,
    );
    expect(badFault.stderr).toContain('kinds: latency, slow-first-call, status, reset, hang, html,');
    const badParameter = await cli(['simulate', '--fault', 'status:status=99']);
    expect(badParameter.code).toBe(2);
    expect(badParameter.stderr.split('\n')[0]).toBe(
      `error: --fault "status:status=99": status must be >= 400 (got 99). ${FAULT_SPEC_FORM}`,
    );
    const badKey = await cli(['simulate', '--fault', 'latency:speed=2']);
    expect(badKey.stderr).toContain('unknown key "speed"');
    expect(badKey.stderr).not.toContain('"code"'); // no raw zod issue objects
    const badScale = await cli(['simulate', '--time-scale', 'fast']);
    expect([badScale.code, badScale.stderr]).toEqual([2, expect.stringContaining('--time-scale')]);
  });
});

describe('events and approve commands', () => {
  it('map IMDS answers to exit codes: 400 -> 2, transient failures -> 1', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const badVersion = await cli(['events', '--imds-endpoint', sim.url, '--api-version', '2099-01-01']);
    expect([badVersion.code, badVersion.stderr]).toEqual([2, expect.stringContaining('api-version')]);
    const unknown = await cli(['approve', 'nope', '--imds-endpoint', sim.url]);
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      expect.stringContaining('EventId nope unknown to IMDS'),
    ]);
    sim.admin.setFaults([{ kind: 'status', status: 503 }]);
    const unavailable = await cli(['events', '--imds-endpoint', sim.url]);
    expect([unavailable.code, unavailable.stderr]).toEqual([1, expect.stringContaining('503')]);
    const badEndpoint = await cli(['events', '--imds-endpoint', 'not a url']);
    expect([badEndpoint.code, badEndpoint.stderr]).toEqual([
      2,
      expect.stringContaining('invalid IMDS endpoint'),
    ]);
  });
});

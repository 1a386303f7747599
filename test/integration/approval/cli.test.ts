/** `approve` as a real child process: --config supplies the endpoint, --dry-run never POSTs, bad config exits 2. */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const execFileAsync = promisify(execFile);
const tmp = makeTempDir('sef-approve-cli-');
let sim: RunningSimulator | undefined;
afterEach(async () => sim?.close());
afterAll(() => tmp.cleanup());

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [MAIN, ...args], {
      cwd: REPO,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

it('approve --config takes the endpoint from the config; --dry-run never POSTs; several ids go in one request', async () => {
  sim = await startSimulator({ vmName: 'WestNO_0', timeScale: 0 });
  sim.admin.injectEvent({ id: 'E-A', type: 'Reboot' });
  sim.admin.injectEvent({ id: 'E-B', type: 'Freeze' });
  const config = join(tmp.dir, 'forwarder.yaml');
  writeFileSync(config, `imds:\n  endpoint: ${sim.url}\napproval:\n  dryRun: true\n`);

  const dry = await cli(['approve', 'E-A', 'E-B', '--config', config, '--dry-run']);
  expect(dry.code).toBe(0);
  expect(JSON.parse(dry.stdout)).toMatchObject({
    dryRun: true,
    wouldApprove: ['E-A', 'E-B'],
    events: [
      { EventId: 'E-A', EventType: 'Reboot', EventStatus: 'Scheduled' },
      { EventId: 'E-B', EventType: 'Freeze', EventStatus: 'Scheduled' },
    ],
  });
  expect(JSON.parse(dry.stdout).url).toContain(sim.url);
  expect(sim.admin.approvals()).toEqual([]);

  const real = await cli(['approve', 'E-A', 'E-B', '--config', config]);
  expect([real.code, JSON.parse(real.stdout)]).toEqual([0, { approved: ['E-A', 'E-B'] }]);
  expect(sim.admin.approvals().map((a) => a.eventId)).toEqual(['E-A', 'E-B']);
  const posts = sim.admin.requests().log.filter((r) => r.method === 'POST');
  expect(posts.length).toBe(1);
});

it("approve --config needs none of the sinks' secrets (an operator's shell has not the service's environment)", async () => {
  sim = await startSimulator({ vmName: 'WestNO_0', timeScale: 0 });
  sim.admin.injectEvent({ id: 'E-A', type: 'Reboot' });
  const config = join(tmp.dir, 'with-secrets.yaml');
  const unset = 'SEF_APPROVE_TEST_NEVER_SET_CONN';
  expect(process.env[unset]).toBeUndefined();
  writeFileSync(
    config,
    [
      `imds:\n  endpoint: ${sim.url}`,
      'sinks:',
      '  - name: history',
      '    type: eventhubs',
      `    connectionString: \${${unset}}`,
      '    eventHubName: maintenance',
      '',
    ].join('\n'),
  );
  const dry = await cli(['approve', 'E-A', '--config', config, '--dry-run']);
  expect([dry.code, dry.stderr]).toEqual([0, '']);
  expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, wouldApprove: ['E-A'] });
});

it('approve --config with a bad config exits 2 naming the key', async () => {
  const config = join(tmp.dir, 'bad.yaml');
  writeFileSync(config, 'approval:\n  leader: oldest\n');
  const result = await cli(['approve', 'E-A', '--config', config, '--dry-run']);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain('approval.leader');
});

it('approve on an EventId IMDS does not know says so (exit 2), not "check the api-version"', async () => {
  sim = await startSimulator({ vmName: 'WestNO_0', timeScale: 0 });
  sim.admin.injectEvent({ id: 'E-A', type: 'Reboot' });
  const one = await cli(['approve', 'NOPE-1', '--imds-endpoint', sim.url]);
  expect(one.code).toBe(2);
  expect(one.stderr).toContain('EventId NOPE-1 unknown to IMDS');
  expect(one.stderr).toContain('it lists E-A');
  expect(one.stderr).not.toContain('api-version');
  const mixed = await cli(['approve', 'E-A', 'NOPE-1', 'NOPE-2', '--imds-endpoint', sim.url]);
  expect(mixed.code).toBe(2);
  expect(mixed.stderr).toContain('EventIds NOPE-1, NOPE-2 unknown to IMDS');
  expect(sim.admin.approvals()).toEqual([]);
  // A malformed request (an api-version IMDS rejects) still points at the configuration.
  const badVersion = await cli(['approve', 'E-A', '--imds-endpoint', sim.url, '--api-version', '1999-01-01']);
  expect(badVersion.code).toBe(2);
  expect(badVersion.stderr).toContain('api-version');
});

it('approve --dry-run checks the ids against the current document: an unknown id is exit 2, as without --dry-run', async () => {
  sim = await startSimulator({ vmName: 'WestNO_0', timeScale: 0 });
  sim.admin.injectEvent({ id: 'E-A', type: 'Reboot' });
  const dry = await cli(['approve', 'E-A', 'NOPE-1', '--imds-endpoint', sim.url, '--dry-run']);
  expect(dry.code).toBe(2);
  expect(dry.stdout).toBe('');
  expect(dry.stderr).toContain('EventId NOPE-1 unknown to IMDS');
  expect(dry.stderr).toContain('it lists E-A');
  expect(sim.admin.requests().log.filter((r) => r.method === 'POST')).toEqual([]);
  // Ids compare case-insensitively, as IMDS does (GUIDs).
  const upper = await cli(['approve', 'e-a', '--imds-endpoint', sim.url, '--dry-run']);
  expect(upper.code, upper.stderr).toBe(0);
  expect(JSON.parse(upper.stdout).events).toEqual([
    expect.objectContaining({ EventId: 'E-A', EventStatus: 'Scheduled' }),
  ]);
});

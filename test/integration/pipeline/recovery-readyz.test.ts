/**
 * A real `run` child process with a webhook sink that fails, then recovers (issue 15, items 8 and 15):
 * /readyz (real HTTP to the telemetry listener; `readiness.sinks: any-failing`, so the failing sink makes it 503)
 * shows `pending` and `oldestPendingAgeSeconds` per sink, the
 * recovery is logged once at info level with the number of failed attempts and how long it took, and no log
 * line carries a key twice (`"component":"delivery","component":"delivery"`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, jsonLines, spawnCli, telemetryListener } from '../../support/child.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-recovery-');
let sim: RunningSimulator | undefined;
let server: HttpSinkServer | undefined;
let fwd: ForwarderChild | undefined;
afterAll(async () => {
  fwd?.child.kill('SIGKILL');
  if (fwd) await fwd.exited;
  await sim?.close();
  await server?.close();
  tmp.cleanup();
});

interface ReadySink {
  state: string;
  consecutiveFailures: number;
  pending?: number;
  oldestPendingAgeSeconds?: number;
}

async function readyz(port: number): Promise<{ status: number; sinks: Record<string, ReadySink> }> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  const body = (await response.json()) as { sinks: Record<string, ReadySink> };
  return { status: response.status, sinks: body.sinks };
}

/** How often `"key":` occurs in a raw log line (JSON.parse would silently keep only the last duplicate). */
const occurrences = (line: string, key: string): number => line.split(`"${key}":`).length - 1;

describe('run: a sink that fails and recovers', () => {
  it('reports pending rows in /readyz, logs the recovery once, and logs no duplicate keys', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
    server = await HttpSinkServer.start({ status: 503, body: 'down for maintenance' });
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'telemetry: { listen: { enabled: true, port: 0 }, readiness: { sinks: any-failing } }',
        'sinks:',
        `  - name: hook`,
        '    type: webhook',
        `    url: ${JSON.stringify(server.url())}`,
        '    delivery: { backoff: { initialMs: 50, maxMs: 100 } }',
        '',
      ].join('\n'),
    );
    fwd = spawnCli(['run', '--config', config, '--log-level', 'debug']);
    await fwd.ready;
    const port = Number((await telemetryListener(fwd)).port);

    // Failing: the record waits in the outbox and /readyz says so.
    await server.waitForRequests(3);
    const failing = await waitFor(async () => {
      const r = await readyz(port);
      return r.sinks.hook?.pending === 1 && r.sinks.hook.consecutiveFailures >= 3 ? r : undefined;
    }, '/readyz showing the pending record of the failing sink');
    expect(failing.status).toBe(503);
    expect(failing.sinks.hook).toMatchObject({ state: 'failing', pending: 1 });
    expect(failing.sinks.hook?.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(0);

    // Recovered: delivered, nothing pending, one info line naming the attempts and the duration.
    server.setDefault({ status: 200, body: 'ok' });
    const recovered = await waitFor(async () => {
      const r = await readyz(port);
      return r.sinks.hook?.state === 'ok' && r.sinks.hook.pending === 0 ? r : undefined;
    }, '/readyz showing the recovered sink with nothing pending');
    expect(recovered.sinks.hook).toMatchObject({ pending: 0, oldestPendingAgeSeconds: 0 });
    const failedAttempts = server.requests.filter((_, i) => i < server!.requests.length - 1).length;
    const lines = await waitFor(() => {
      const found = jsonLines(fwd!.stderr()).filter((l) => String(l.msg).startsWith('sink recovered'));
      return found.length > 0 ? found : undefined;
    }, 'the recovery log line');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      component: 'delivery',
      sink: 'hook',
      attempts: failedAttempts,
    });
    expect(lines[0]?.failingForMs).toEqual(expect.any(Number));
    expect(String(lines[0]?.msg)).toMatch(
      new RegExp(`^sink recovered: delivered after ${failedAttempts} failed attempts over \\d`),
    );

    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);
    const raw = fwd
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(raw.some((l) => l.includes('"component":"delivery"'))).toBe(true);
    for (const line of raw) {
      expect(occurrences(line, 'component'), line).toBeLessThanOrEqual(1);
      expect(occurrences(line, 'sink'), line).toBeLessThanOrEqual(1);
    }
  });
});

/**
 * Restart on a full state disk (issue 14, item 2), with a real 1 MiB tmpfs and the real CLI as a child process:
 * the forwarder says that the disk holding the state directory is full, keeps running (no crash loop), is not
 * ready meanwhile (/readyz names the problem), retries opening, and starts by itself once space returns.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, jsonLines, REPO, spawnCli } from '../../support/child.ts';
import { runArgs } from '../../support/forwarder.ts';
import { fillDisk, mountTmpfs } from '../../support/mount.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

let tmp: { dir: string; cleanup: () => void };
let unmount: (() => void) | undefined;
let sim: RunningSimulator | undefined;
let fwd: ForwarderChild | undefined;
beforeEach(() => {
  tmp = makeTempDir('sef-fullstart-');
});
afterEach(async () => {
  if (fwd !== undefined && fwd.child.exitCode === null && fwd.child.signalCode === null) {
    fwd.child.kill('SIGKILL');
    await fwd.exited;
  }
  fwd = undefined;
  await sim?.close();
  sim = undefined;
  unmount?.();
  unmount = undefined;
  tmp.cleanup();
});

/** A previous forwarder committed to `stateDir` and was SIGKILLed (a WAL and -shm are left behind). */
async function seedAndKill(stateDir: string): Promise<void> {
  const store = pathToFileURL(join(REPO, 'src', 'store', 'index.ts')).href;
  const log = pathToFileURL(join(REPO, 'src', 'log.ts')).href;
  const script = `import { openStore } from ${JSON.stringify(store)};
    import { silentLogger } from ${JSON.stringify(log)};
    const s = openStore({ stateDir: ${JSON.stringify(stateDir)}, logger: silentLogger() });
    for (let i = 0; i < 3; i++) s.commit({ i }, []);
    process.kill(process.pid, 'SIGKILL');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
  const [, signal] = await once(child, 'exit');
  expect(signal).toBe('SIGKILL');
}

interface Ready {
  ready: boolean;
  store: { ok: boolean; error?: string };
}

describe('starting on a full state disk', () => {
  it('says the disk holding the state directory is full, keeps running unready, and starts once space returns', async () => {
    const disk = join(tmp.dir, 'disk');
    unmount = mountTmpfs(disk, '1m');
    const stateDir = join(disk, 'state');
    await seedAndKill(stateDir);
    const filler = fillDisk(disk);

    sim = await startSimulator({ scenario: join(REPO, 'config', 'demo.scenario.yaml'), timeScale: 0 });
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(config, 'telemetry:\n  listen:\n    enabled: true\n    port: 0\n');
    fwd = spawnCli([
      ...runArgs({ imdsEndpoint: sim.url, stateDir, out: join(tmp.dir, 'records.jsonl') }),
      '--config',
      config,
    ]);
    const child = fwd;
    const full = await waitFor(
      () =>
        jsonLines(child.stderr()).find((l) => String(l.msg).includes(`the disk holding ${stateDir} is full`)),
      'the disk-full error line',
    );
    expect(full.level).toBe(50);
    expect(String(full.msg)).toContain('retries opening');
    const listen = await waitFor(
      () =>
        jsonLines(child.stderr()).find((l) => String(l.msg).startsWith('telemetry listening'))?.listen as
          | string
          | undefined,
      'the telemetry listener',
    );
    const readyz = await fetch(`${listen}/readyz`);
    expect(readyz.status).toBe(503);
    const body = (await readyz.json()) as Ready;
    expect(body.store.ok).toBe(false);
    expect(body.store.error).toContain(`the disk holding ${stateDir} is full`);
    expect((await fetch(`${listen}/healthz`)).status).toBe(200);
    expect(child.child.exitCode).toBeNull(); // still the same process: no crash loop

    unlinkSync(filler);
    await child.ready;
    const opened = jsonLines(child.stderr()).find(
      (l) => l.msg === 'state store opened after waiting for the disk',
    );
    expect(opened?.attempts as number).toBeGreaterThanOrEqual(2);
    expect(new Set(jsonLines(child.stderr()).map((l) => l.pid)).size).toBe(1);
    await waitFor(
      async () => (await fetch(`${listen}/readyz`)).status === 200,
      '/readyz ready once the store is open',
    );
    // The disk-full line is not repeated on every attempt (at most one every 30 s).
    const fullLines = jsonLines(child.stderr()).filter((l) => String(l.msg).includes('is full'));
    expect(fullLines.length).toBeLessThanOrEqual(Math.ceil((opened?.waitedMs as number) / 30_000) + 1);

    child.child.kill('SIGTERM');
    expect((await child.exited).code).toBe(0);
  });
});

/**
 * The linux-arm64 single executable under Debian's qemu-user (`qemu-aarch64`), with the arm64 C library of
 * Debian's cross packages (libc6-arm64-cross, libstdc++6-arm64-cross: /usr/aarch64-linux-gnu): --version and a
 * short forward from the IMDS simulator to a file sink. No Node.js on PATH.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { artifact, FILES, pathWithout, start, VERSION, whichIn } from './release.ts';

const QEMU = '/usr/bin/qemu-aarch64';
const SYSROOT = '/usr/aarch64-linux-gnu';
const tmp = makeTempDir('sef-pkg-arm64-');
afterAll(() => tmp.cleanup());
let exe: string;
let env: Record<string, string>;

beforeAll(() => {
  // A copy outside the repository, so nothing can be found in ./node_modules up the tree.
  exe = join(tmp.dir, 'scheduled-events-forwarder');
  copyFileSync(artifact(FILES.executable('linux-arm64')), exe);
  chmodSync(exe, 0o755);
  for (const need of [QEMU, join(SYSROOT, 'lib', 'libstdc++.so.6')]) {
    if (!existsSync(need))
      throw new Error(`${need} is missing: apt-get install qemu-user libstdc++6-arm64-cross`);
  }
  env = { PATH: pathWithout(tmp.dir, ['sh']), HOME: tmp.dir, QEMU_LD_PREFIX: SYSROOT };
});

describe('linux-arm64 executable under qemu-user', () => {
  it('is an aarch64 ELF executable', () => {
    const header = readFileSync(exe).subarray(0, 20);
    expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(header.readUInt16LE(18)).toBe(183); // EM_AARCH64
  });

  it('--version prints the package version', () => {
    expect(whichIn(env.PATH!, 'node')).toBe(false);
    const result = spawnSync(QEMU, [exe, '--version'], { env, encoding: 'utf8', timeout: 120_000 });
    expect(result.stdout.trim()).toBe(VERSION);
    expect(result.status).toBe(0);
  });

  it('forwards a scheduled event from the simulator to a file sink', async () => {
    const sim = await startSimulator({});
    const records = join(tmp.dir, 'records.jsonl');
    const child = start(
      QEMU,
      [
        exe,
        'run',
        '--imds-endpoint',
        sim.url,
        '--poll-interval',
        '500',
        '--state-dir',
        join(tmp.dir, 'state'),
        '--sink',
        `file:${records}`,
      ],
      env,
      tmp.dir,
    );
    try {
      const event = sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 900, resources: ['sim-vm-0'] });
      const read = () => (existsSync(records) ? readFileSync(records, 'utf8') : '');
      await waitFor(() => read().includes(event.id), 'the record in the file sink (arm64 under qemu)', {
        timeoutMs: 120_000,
      });
      const text = read();
      const record = JSON.parse(text.split('\n')[0]!) as {
        specversion: string;
        data: { eventType?: string };
      };
      expect(record.specversion).toBe('1.0');
      expect(text).toContain('Freeze');
    } finally {
      child.kill('SIGTERM');
      await child.exited;
      await sim.close();
    }
  });
});

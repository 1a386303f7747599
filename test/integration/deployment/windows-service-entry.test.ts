/**
 * packaging/windows/service-entry.mjs, the script node-windows forks for the Windows service: it runs the CLI
 * with the arguments it gets, and node-windows' IPC "shutdown" message stops it gracefully (as SIGINT does).
 * Forked here exactly as node-windows' wrapper forks it (child_process.fork, arguments split on spaces), in a
 * package-shaped directory whose dist/cli/main.js is this checkout's CLI.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM JavaScript shipped in packaging/, without type declarations
import { buildServiceDefinition } from '../../../packaging/windows/service-definition.mjs';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { REPO } from './compose-files.ts';

const tmp = makeTempDir('sef-winsvc-');
afterAll(() => tmp.cleanup());

/** A package layout: packaging/windows/service-entry.mjs next to dist/cli/main.js (→ src/cli/main.ts). */
function packageLayout(): string {
  const pkg = join(tmp.dir, 'pkg');
  mkdirSync(join(pkg, 'packaging', 'windows'), { recursive: true });
  mkdirSync(join(pkg, 'dist', 'cli'), { recursive: true });
  copyFileSync(
    join(REPO, 'packaging', 'windows', 'service-entry.mjs'),
    join(pkg, 'packaging', 'windows', 'service-entry.mjs'),
  );
  symlinkSync(join(REPO, 'src', 'cli', 'main.ts'), join(pkg, 'dist', 'cli', 'main.js'));
  return join(pkg, 'packaging', 'windows', 'service-entry.mjs');
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

describe('Windows service entry (node-windows)', () => {
  const entry = packageLayout();

  it('runs the CLI with the space-split scriptOptions and stops gracefully on the IPC "shutdown" message', async () => {
    // The same shape as the service's scriptOptions, split the way node-windows' wrapper splits it.
    const args = 'simulate --port 0 --scenario user-reboot'.split(' ');
    const child = fork(entry, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    const exited = exitOf(child);
    await waitFor(() => stdout.includes('"url"'), 'the simulator URL line', { timeoutMs: 20_000 });
    child.send('shutdown');
    expect(await exited).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ stopped: 'SIGINT' });
  }, 40_000);

  it('exits with the CLI exit code when the command ends on its own (no IPC channel keeps it alive)', async () => {
    const child = fork(entry, ['config', 'validate', join(tmp.dir, 'missing.yaml')], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    expect(await exitOf(child)).toBe(2);
  }, 30_000);

  it('puts no quotes or spaces in the arguments node-windows splits on spaces', () => {
    const def = buildServiceDefinition({
      installDir: 'C:\\Program Files\\scheduled-events-forwarder',
      programData: 'C:\\ProgramData',
    });
    const args = (def.scriptOptions as string).split(' ');
    expect(args).toEqual(['run', '--config', def.configPath, '--state-dir', def.stateDir]);
    // WinSW's logs stay with the state under %ProgramData%, not under Program Files.
    expect(def.logpath).toBe('C:\\ProgramData\\scheduled-events-forwarder\\logs');
    expect(() => buildServiceDefinition({ installDir: 'C:\\x', programData: 'C:\\Program Data' })).toThrow(
      /cannot contain spaces/,
    );
  });
});

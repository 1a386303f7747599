/** Every Linux/Windows difference lives in src/platform.ts; its pure parts are tested here for both platforms. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  currentPlatform,
  defaultStateDir,
  killProcessTree,
  shutdownSignals,
  spawnsOwnProcessGroup,
  temporaryDiskReason,
} from '../../src/platform.ts';
import { waitFor } from '../support/wait.ts';

describe('platform', () => {
  it('names the platform', () => {
    expect(currentPlatform('win32')).toBe('windows');
    expect(currentPlatform('linux')).toBe('linux');
    expect(currentPlatform('darwin')).toBe('other');
  });

  it('puts state under /var/lib on Linux and %ProgramData% on Windows', () => {
    expect(defaultStateDir('linux', {})).toBe('/var/lib/scheduled-events-forwarder');
    expect(defaultStateDir('win32', { ProgramData: 'E:\\Data' })).toBe(
      'E:\\Data\\scheduled-events-forwarder',
    );
    expect(defaultStateDir('win32', {})).toBe('C:\\ProgramData\\scheduled-events-forwarder');
  });

  it('recognises the Azure temporary disk on both platforms', () => {
    expect(temporaryDiskReason('/mnt/resource/sef', 'linux')).toContain('/mnt/resource');
    expect(temporaryDiskReason('/mnt', 'linux')).toContain('/mnt');
    expect(temporaryDiskReason('/mnt2/sef', 'linux')).toBeUndefined();
    expect(temporaryDiskReason('/var/lib/scheduled-events-forwarder', 'linux')).toBeUndefined();
    expect(temporaryDiskReason('D:\\sef', 'win32')).toContain('D:\\');
    expect(temporaryDiskReason('d:\\sef', 'win32')).toContain('D:\\');
    expect(temporaryDiskReason('C:\\ProgramData\\scheduled-events-forwarder', 'win32')).toBeUndefined();
  });

  it('uses the signals each platform delivers for a graceful stop', () => {
    expect(shutdownSignals('linux')).toEqual(['SIGTERM', 'SIGINT']);
    expect(shutdownSignals('win32')).toEqual(['SIGINT', 'SIGBREAK']);
  });

  it('gives children their own process group only where one can be signalled', () => {
    expect(spawnsOwnProcessGroup('linux')).toBe(true);
    expect(spawnsOwnProcessGroup('win32')).toBe(false);
  });

  it('ends a real process tree (this host)', async () => {
    // A parent that starts a grandchild and waits; killing the tree must end both.
    const script = `const { spawn } = require('node:child_process');
      const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
      console.log(c.pid); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', script], {
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: spawnsOwnProcessGroup(),
    });
    let out = '';
    parent.stdout.on('data', (d) => {
      out += d;
    });
    const grandchild = Number(await waitFor(() => out.trim(), 'the grandchild pid'));
    const exited = new Promise((resolve) => parent.on('exit', resolve));
    killProcessTree(parent.pid, true);
    await exited;
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(grandchild), 'the grandchild to end');
    expect(alive(grandchild)).toBe(false);
  });
});

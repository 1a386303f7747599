/** Every Linux/Windows difference lives in src/platform.ts; its pure parts are tested here for both platforms. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  childEnvironment,
  currentPlatform,
  defaultStateDir,
  killProcessTree,
  reloadSignal,
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

  it('finds the Linux temporary disk through the mount table (bind mounts of it elsewhere)', () => {
    const mountInfo = [
      '27 1 254:0 / / rw,relatime - ext4 /dev/sda1 rw',
      '40 27 8:17 / /mnt rw,relatime - ext4 /dev/sdb1 rw',
      '41 27 8:17 /sef /srv/data\\040disk rw,relatime - ext4 /dev/sdb1 rw',
      '42 27 8:33 / /datadisk rw,relatime - ext4 /dev/sdc1 rw',
    ].join('\n');
    const reason = temporaryDiskReason('/srv/data disk/state', 'linux', { mountInfo });
    expect(reason).toContain('/srv/data disk');
    expect(reason).toContain('8:17');
    expect(reason).toContain('/mnt is the Azure temporary disk');
    expect(temporaryDiskReason('/datadisk/state', 'linux', { mountInfo })).toBeUndefined();
    expect(temporaryDiskReason('/var/lib/sef', 'linux', { mountInfo })).toBeUndefined();
    // Without a mount at /mnt (a plain directory on the root filesystem) nothing else is flagged.
    const noMnt = mountInfo
      .split('\n')
      .filter((l) => !l.includes(' /mnt '))
      .join('\n');
    expect(temporaryDiskReason('/srv/data disk/state', 'linux', { mountInfo: noMnt })).toBeUndefined();
  });

  it('uses the signals each platform delivers for a graceful stop', () => {
    expect(shutdownSignals('linux')).toEqual(['SIGTERM', 'SIGINT']);
    expect(shutdownSignals('win32')).toEqual(['SIGINT', 'SIGBREAK']);
  });

  it('reloads on SIGHUP where there is one; a Windows service is restarted instead', () => {
    expect(reloadSignal('linux')).toBe('SIGHUP');
    expect(reloadSignal('darwin')).toBe('SIGHUP');
    expect(reloadSignal('win32')).toBeUndefined();
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

describe('childEnvironment (what exec sinks and hooks inherit)', () => {
  const parent = {
    Path: 'C:\\Windows\\system32',
    SystemRoot: 'C:\\Windows',
    ComSpec: 'C:\\Windows\\system32\\cmd.exe',
    PATHEXT: '.COM;.EXE',
    HOME: '/home/sef',
    PATH: '/usr/bin',
    LC_TIME: 'C',
    AZURE_CLIENT_SECRET: 'secret',
    SEF_SLACK_WEBHOOK: 'https://hooks.example/secret',
    MYAPP_TOKEN: 'token',
    HTTPS_PROXY: 'http://proxy:3128',
  };

  it('Windows: the variables Windows programs need, matched whatever their case; a set name replaces any spelling', () => {
    const env = childEnvironment({ parent, pass: ['https_proxy'], set: { PATH: 'C:\\tools' } }, 'win32');
    expect(env).toEqual({
      SystemRoot: 'C:\\Windows',
      ComSpec: 'C:\\Windows\\system32\\cmd.exe',
      PATHEXT: '.COM;.EXE',
      LC_TIME: 'C',
      HTTPS_PROXY: 'http://proxy:3128',
      PATH: 'C:\\tools',
    });
  });

  it('Linux: PATH, HOME, LC_*; passEnv names and PREFIX* patterns (case-sensitive); never anything else', () => {
    const env = childEnvironment({ parent, pass: ['MYAPP_*', 'https_proxy'], set: { X: '1' } }, 'linux');
    expect(env).toEqual({ HOME: '/home/sef', PATH: '/usr/bin', LC_TIME: 'C', MYAPP_TOKEN: 'token', X: '1' });
  });
});

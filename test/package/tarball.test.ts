/**
 * The linux tar.gz archives: layout, and the install script run for real against a temporary root (DESTDIR)
 * with a recording stand-in for systemctl: executable installed and runnable, config written from the example
 * with its state paths under /var/lib, secrets.env 0600, the unit pointing at the installed executable and
 * enabled + started; a second run (upgrade) keeps the edited config; --uninstall removes the executable and
 * the unit and keeps config and state.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/tmp.ts';
import { artifact, FILES, VERSION } from './release.ts';

const tmp = makeTempDir('sef-pkg-tar-');
afterAll(() => tmp.cleanup());

function listing(tarball: string): string[] {
  return spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.trim().split('\n').sort();
}

describe.each(['linux-x64', 'linux-arm64'])('%s tarball', (id) => {
  it('holds one folder with the executable, unit, example config and install script', () => {
    const dir = FILES.archiveDir(id);
    expect(listing(artifact(FILES.tarball(id)))).toEqual(
      [
        `${dir}/`,
        `${dir}/LICENSE.node`,
        `${dir}/THIRD-PARTY-NOTICES`,
        `${dir}/forwarder.example.yaml`,
        `${dir}/install.sh`,
        `${dir}/scheduled-events-forwarder`,
        `${dir}/scheduled-events-forwarder.service`,
      ].sort(),
    );
  });
});

describe('install.sh from the linux-x64 tarball', () => {
  const root = join(tmp.dir, 'root');
  const log = join(tmp.dir, 'systemctl.log');
  const systemctl = join(tmp.dir, 'systemctl');
  const dir = join(tmp.dir, FILES.archiveDir('linux-x64'));
  const install = (...args: string[]) =>
    spawnSync(join(dir, 'install.sh'), args, {
      encoding: 'utf8',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DESTDIR: root, SYSTEMCTL: systemctl },
    });

  it('installs into a temporary root and starts the unit', () => {
    expect(spawnSync('tar', ['-xzf', artifact(FILES.tarball('linux-x64')), '-C', tmp.dir]).status).toBe(0);
    writeFileSync(systemctl, `#!/bin/sh\necho "$*" >> ${log}\n`, { mode: 0o755 });
    const result = install();
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);

    const bin = join(root, 'usr/local/bin/scheduled-events-forwarder');
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    expect(
      spawnSync(bin, ['--version'], { encoding: 'utf8', env: { PATH: '/nonexistent' } }).stdout.trim(),
    ).toBe(VERSION);
    const config = readFileSync(join(root, 'etc/scheduled-events-forwarder/forwarder.yaml'), 'utf8');
    expect(config).toMatch(/^stateDir: \/var\/lib\/scheduled-events-forwarder$/m);
    expect(config).not.toMatch(/\.\/state/);
    expect(statSync(join(root, 'etc/scheduled-events-forwarder/secrets.env')).mode & 0o777).toBe(0o600);
    const unit = readFileSync(join(root, 'etc/systemd/system/scheduled-events-forwarder.service'), 'utf8');
    expect(unit).toMatch(
      /^ExecStart=\/usr\/local\/bin\/scheduled-events-forwarder run --config \/etc\/scheduled-events-forwarder\/forwarder\.yaml$/m,
    );
    expect(unit).toMatch(/^DynamicUser=yes$/m);
    expect(unit).toMatch(/^ProtectSystem=strict$/m);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      'daemon-reload',
      'enable scheduled-events-forwarder',
      'restart scheduled-events-forwarder',
    ]);
  });

  it('an upgrade keeps the edited config; an invalid config stops the install with the reason', () => {
    const configFile = join(root, 'etc/scheduled-events-forwarder/forwarder.yaml');
    writeFileSync(configFile, `${readFileSync(configFile, 'utf8')}# edited by the operator\n`);
    expect(install().status).toBe(0);
    expect(readFileSync(configFile, 'utf8')).toContain('# edited by the operator');

    // Secrets are read the way systemd reads an EnvironmentFile: a connection-string-like value with ; and &.
    writeFileSync(
      join(root, 'etc/scheduled-events-forwarder/secrets.env'),
      'HOOK_URL="http://127.0.0.1:9/x?a=1&b=2;c"\n',
    );
    const minimal =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} syntax / dpkg-query's format
      'stateDir: /var/lib/scheduled-events-forwarder\nsinks:\n  - { name: hook, type: webhook, url: "${HOOK_URL}" }\n';
    writeFileSync(configFile, minimal);
    const withSecret = install();
    expect(withSecret.stdout).toMatch(/hook \(webhook\)/);
    expect(withSecret.status).toBe(0);

    writeFileSync(configFile, `${minimal}colour: blue\n`);
    const bad = install();
    expect(bad.stderr).toMatch(/colour/);
    expect(bad.stderr).toMatch(/configuration .*forwarder\.yaml is invalid/);
    expect(bad.status).not.toBe(0);
  });

  it('--uninstall removes the executable and the unit, keeps config and state', () => {
    const result = install('--uninstall');
    expect(result.status).toBe(0);
    expect(existsSync(join(root, 'usr/local/bin/scheduled-events-forwarder'))).toBe(false);
    expect(existsSync(join(root, 'etc/systemd/system/scheduled-events-forwarder.service'))).toBe(false);
    expect(existsSync(join(root, 'etc/scheduled-events-forwarder/forwarder.yaml'))).toBe(true);
    expect(readFileSync(log, 'utf8')).toContain('disable --now scheduled-events-forwarder');
  });
});

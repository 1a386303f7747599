/**
 * The Debian packages: control fields and contents (dpkg-deb), a real install and purge of the amd64 package
 * into a throw-away root (`dpkg --root`, maintainer scripts run with DPKG_ROOT set; the commands that would
 * touch this machine's users and systemd — adduser, addgroup, getent, chown, deb-systemd-helper, deluser,
 * delgroup — are recording stand-ins on PATH), and lintian with no errors.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/tmp.ts';
import { artifact, FILES, REPO, VERSION } from './release.ts';

const tmp = makeTempDir('sef-pkg-deb-');
afterAll(() => tmp.cleanup());
const NAME = 'scheduled-events-forwarder';
const USER = '_scheduled-events-forwarder';

const dpkgDeb = (...args: string[]) => spawnSync('dpkg-deb', args, { encoding: 'utf8' });

describe.each([
  ['amd64', 'x86-64'],
  ['arm64', 'ARM aarch64'],
])('%s package', (arch, elfArch) => {
  it('has the control fields, conffile and maintainer scripts', () => {
    const deb = artifact(FILES.deb(arch));
    const field = (name: string) => dpkgDeb('-f', deb, name).stdout.trim();
    expect(field('Package')).toBe(NAME);
    expect(field('Version')).toBe(VERSION);
    expect(field('Architecture')).toBe(arch);
    expect(field('Depends')).toMatch(/libc6 \(>= 2\.28\)/);
    expect(field('Depends')).toMatch(/adduser/);
    const control = join(tmp.dir, `control-${arch}`);
    expect(dpkgDeb('-e', deb, control).status).toBe(0);
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe(`/etc/${NAME}/forwarder.yaml\n`);
    for (const script of ['postinst', 'prerm', 'postrm']) {
      expect(statSync(join(control, script)).mode & 0o777).toBe(0o755);
    }
  });

  it('holds the executable, the unit running as the system user, the config and the docs', () => {
    const deb = artifact(FILES.deb(arch));
    const files = dpkgDeb('-c', deb)
      .stdout.trim()
      .split('\n')
      .map((line) => line.split(/\s+/).slice(5).join(' '));
    for (const path of [
      `./usr/bin/${NAME}`,
      `./lib/systemd/system/${NAME}.service`,
      `./etc/${NAME}/forwarder.yaml`,
      `./usr/share/doc/${NAME}/copyright`,
      `./usr/share/doc/${NAME}/changelog.gz`,
      `./usr/share/lintian/overrides/${NAME}`,
      `./usr/share/${NAME}/prometheus/sef-alerts.rules.yml`,
      `./usr/share/${NAME}/prometheus/sef-alerts.test.yml`,
    ]) {
      expect(files).toContain(path);
    }
    const root = join(tmp.dir, `x-${arch}`);
    expect(dpkgDeb('-x', deb, root).status).toBe(0);
    const file = spawnSync('file', ['-b', join(root, 'usr/bin', NAME)], { encoding: 'utf8' }).stdout;
    expect(file).toMatch(new RegExp(`ELF 64-bit LSB executable, ${elfArch.replace('-', '-')}`, 'i'));
    const unit = readFileSync(join(root, 'lib/systemd/system', `${NAME}.service`), 'utf8');
    expect(unit).toMatch(
      new RegExp(`^ExecStart=/usr/bin/${NAME} run --config /etc/${NAME}/forwarder\\.yaml$`, 'm'),
    );
    expect(unit).toMatch(new RegExp(`^User=${USER}$`, 'm'));
    expect(unit).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    expect(unit).not.toMatch(/^DynamicUser=/m);
    expect(unit).toMatch(/^NoNewPrivileges=yes$/m);
    const config = readFileSync(join(root, 'etc', NAME, 'forwarder.yaml'), 'utf8');
    expect(config).toMatch(new RegExp(`^stateDir: /var/lib/${NAME}$`, 'm'));
    const rules = join(root, 'usr', 'share', NAME, 'prometheus', 'sef-alerts.rules.yml');
    expect(readFileSync(rules, 'utf8')).toBe(
      readFileSync(join(REPO, 'packaging', 'prometheus', 'sef-alerts.rules.yml'), 'utf8'),
    );
  });
});

describe('dpkg --root install and purge of the amd64 package', () => {
  const root = join(tmp.dir, 'root');
  const shims = join(tmp.dir, 'shims');
  const calls = join(tmp.dir, 'calls.log');
  const env = () => ({ PATH: `${shims}:/usr/sbin:/usr/bin:/sbin:/bin`, SEF_CALLS: calls });
  const dpkg = (...args: string[]) =>
    spawnSync('dpkg', [`--root=${root}`, '--force-script-chrootless', '--force-depends', ...args], {
      encoding: 'utf8',
      env: env(),
    });

  beforeAll(() => {
    for (const dir of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'var/lib/dpkg/triggers', 'var/log']) {
      mkdirSync(join(root, dir), { recursive: true });
    }
    writeFileSync(join(root, 'var/lib/dpkg/status'), '');
    mkdirSync(shims, { recursive: true });
    for (const tool of [
      'adduser',
      'addgroup',
      'chown',
      'deb-systemd-helper',
      'deb-systemd-invoke',
      'deluser',
      'delgroup',
    ]) {
      writeFileSync(join(shims, tool), `#!/bin/sh\necho "${tool} $*" >> "$SEF_CALLS"\n`);
      chmodSync(join(shims, tool), 0o755);
    }
    // deb-systemd-helper on a machine that never had the package: `debian-installed` is false (the real one
    // keeps that state under /var/lib/systemd/deb-systemd-helper-enabled).
    writeFileSync(
      join(shims, 'deb-systemd-helper'),
      '#!/bin/sh\necho "deb-systemd-helper $*" >> "$SEF_CALLS"\n[ "$1" != debian-installed ]\n',
    );
    // getent: the user and group exist once the stand-in adduser/addgroup "created" them.
    writeFileSync(
      join(shims, 'getent'),
      `#!/bin/sh\ngrep -q "^add$([ "$1" = passwd ] && echo user || echo group) .* $2\\$" "$SEF_CALLS" 2>/dev/null\n`,
    );
    chmodSync(join(shims, 'getent'), 0o755);
  });

  it('installs: files in place, user and group created, state directory 0700, secrets.env 0600, service not started', () => {
    const result = dpkg('-i', artifact(FILES.deb('amd64')));
    // The throw-away root has no packages, so dpkg names each unmet dependency (--force-depends); nothing else.
    const unexpected = result.stderr
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter((line) => !/dependency problems|depends on|is not installed/.test(line));
    expect(unexpected).toEqual([]);
    expect(result.stderr).toMatch(/depends on libc6 \(>= 2\.28\)/);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/systemctl enable --now scheduled-events-forwarder/);
    expect(existsSync(join(root, 'usr/bin', NAME))).toBe(true);
    const log = readFileSync(calls, 'utf8');
    expect(log).toMatch(new RegExp(`^addgroup --system --quiet ${USER}$`, 'm'));
    expect(log).toMatch(
      new RegExp(
        `^adduser --system --quiet --ingroup ${USER} --no-create-home --home /var/lib/${NAME} .*${USER}$`,
        'm',
      ),
    );
    expect(log).toMatch(new RegExp(`^chown ${USER}:${USER} ${root}/var/lib/${NAME}$`, 'm'));
    // Installed, not enabled or started on a fresh install: the service needs its sinks configured first.
    expect(log).toMatch(new RegExp(`^deb-systemd-helper update-state ${NAME}.service$`, 'm'));
    expect(log).not.toMatch(/deb-systemd-helper enable|deb-systemd-invoke (start|restart)/);
    expect(statSync(join(root, 'var/lib', NAME)).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, 'etc', NAME, 'secrets.env')).mode & 0o777).toBe(0o600);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} syntax / dpkg-query's format
    const status = spawnSync('dpkg-query', [`--root=${root}`, '-W', '-f', '${Status} ${Version}', NAME], {
      encoding: 'utf8',
    });
    expect(status.stdout).toBe(`install ok installed ${VERSION}`);
  });

  it('purges: executable, config, secrets, state and the user go', () => {
    writeFileSync(join(root, 'var/lib', NAME, 'outbox.db'), 'x');
    const result = dpkg('--purge', NAME);
    expect(result.status).toBe(0);
    expect(existsSync(join(root, 'usr/bin', NAME))).toBe(false);
    expect(existsSync(join(root, 'etc', NAME, 'forwarder.yaml'))).toBe(false);
    expect(existsSync(join(root, 'etc', NAME, 'secrets.env'))).toBe(false);
    expect(existsSync(join(root, 'var/lib', NAME))).toBe(false);
    const log = readFileSync(calls, 'utf8');
    expect(log).toMatch(new RegExp(`^deluser --quiet --system ${USER}$`, 'm'));
    expect(log).toMatch(new RegExp(`^deb-systemd-helper purge ${NAME}.service$`, 'm'));
  });
});

describe('lintian', () => {
  it('reports no errors for the amd64 package (overrides justified in packaging/debian/lintian-overrides)', () => {
    const result = spawnSync('lintian', ['--tag-display-limit', '0', artifact(FILES.deb('amd64'))], {
      encoding: 'utf8',
      timeout: 170_000,
    });
    const errors = result.stdout.split('\n').filter((line) => line.startsWith('E:'));
    expect(errors).toEqual([]);
    // lintian exits non-zero only for errors (and its own failures).
    expect(result.status).toBe(0);
  });
});

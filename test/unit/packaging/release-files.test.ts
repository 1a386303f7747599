/**
 * The release's derived files (scripts/package): the systemd units made from packaging/systemd's unit, the
 * Debian config made from the example, the pinned integrity list and the embedded assets.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { debianConfig } from '../../../scripts/package/deb.ts';
import { pinnedIntegrity, pinnedNodeVersion, ROOT } from '../../../scripts/package/node-binaries.ts';
import { EMBEDDED_ASSETS, systemdUnit, UNIT_USER } from '../../../scripts/package/release-files.ts';
import { TARGETS } from '../../../scripts/package/targets.ts';

const npmUnit = readFileSync(
  join(ROOT, 'packaging', 'systemd', 'scheduled-events-forwarder.service'),
  'utf8',
);
const directives = (unit: string) => unit.split('\n').filter((l) => /^[A-Z]\w*=/.test(l));

describe('systemd units of the release', () => {
  it('the archive unit runs the executable from /usr/local/bin with every other directive of the npm unit', () => {
    const unit = systemdUnit('/usr/local/bin', 'dynamic');
    expect(unit).toMatch(
      /^ExecStart=\/usr\/local\/bin\/scheduled-events-forwarder run --config \/etc\/scheduled-events-forwarder\/forwarder\.yaml$/m,
    );
    const others = (u: string) => directives(u).filter((l) => !l.startsWith('ExecStart='));
    expect(others(unit)).toEqual(others(npmUnit));
  });

  it('the Debian unit runs as the system user the package creates instead of a dynamic user', () => {
    const unit = systemdUnit('/usr/bin', 'system-user');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/scheduled-events-forwarder run /m);
    expect(unit).toMatch(new RegExp(`^User=${UNIT_USER}\\nGroup=${UNIT_USER}$`, 'm'));
    expect(unit).not.toMatch(/^DynamicUser=/m);
    for (const hardening of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'StateDirectoryMode=0700',
      'UMask=0077',
    ]) {
      expect(directives(unit)).toContain(hardening);
    }
  });
});

describe('release inputs', () => {
  it('the Debian config keeps state under /var/lib and is otherwise the example', () => {
    const example = readFileSync(join(ROOT, 'config', 'forwarder.example.yaml'), 'utf8');
    const config = debianConfig(example);
    expect(config).toMatch(/^stateDir: \/var\/lib\/scheduled-events-forwarder$/m);
    expect(config).not.toContain('./state');
    expect(config.split('\n').length).toBe(example.split('\n').length);
  });

  it('every Node.js binary of every target at the pinned version has a pinned SHA-512', () => {
    const version = pinnedNodeVersion();
    const pins = pinnedIntegrity();
    for (const target of TARGETS) {
      expect(pins.get(`${target.nodePackage}@${version}`)).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
    }
  });

  it('embeds the demo scenario and every simulator scenario, all of which exist', () => {
    expect(EMBEDDED_ASSETS).toContain('config/demo.scenario.yaml');
    expect(EMBEDDED_ASSETS.filter((a) => a.startsWith('config/scenarios/')).length).toBeGreaterThan(5);
    for (const asset of EMBEDDED_ASSETS) expect(existsSync(join(ROOT, asset))).toBe(true);
  });
});

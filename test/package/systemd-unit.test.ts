/**
 * The release's systemd units as systemd itself reads them: `systemd-analyze verify` (Debian's systemd) on the
 * Debian package's and the archive's unit (scripts/package/release-files.ts), with ExecStart pointing at a stand-in
 * executable in a temporary directory (verify checks that every Exec* command exists). Any unknown directive, bad
 * value or missing command is an error here — ExecReload's /bin/kill included.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemdUnit } from '../../scripts/package/release-files.ts';
import { makeTempDir } from '../support/tmp.ts';

const NAME = 'scheduled-events-forwarder';
const tmp = makeTempDir('sef-systemd-unit-');
afterAll(() => tmp.cleanup());

describe('systemd-analyze verify', () => {
  const bin = join(tmp.dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, NAME), '#!/bin/sh\n');
  chmodSync(join(bin, NAME), 0o755);

  for (const identity of ['system-user', 'dynamic'] as const) {
    it(`accepts the ${identity === 'dynamic' ? 'archive' : 'Debian package'} unit, ExecReload included`, () => {
      const dir = join(tmp.dir, identity);
      mkdirSync(dir);
      const file = join(dir, `${NAME}.service`);
      const unit = systemdUnit(bin, identity);
      expect(unit).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
      writeFileSync(file, unit);
      const result = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
      expect(result.error).toBeUndefined();
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    });
  }
});

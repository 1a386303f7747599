/**
 * scripts/dev-install.ts (run by `npm ci`'s prepare script) installs the test servers quietly: npm's output there
 * ("added 458 packages in 2m") is shown only when that install fails. Run on a copy of the script beside a
 * test-servers/ of its own, with a stand-in for npm's CLI (npm_execpath) that prints what npm prints.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-dev-install-');
afterAll(() => tmp.cleanup());

function layout(name: string, npmExitCode: number): { script: string; fakeNpm: string; stamp: string } {
  const root = join(tmp.dir, name);
  mkdirSync(join(root, 'scripts'), { recursive: true });
  mkdirSync(join(root, 'test-servers'), { recursive: true });
  const script = join(root, 'scripts', 'dev-install.ts');
  copyFileSync(join(REPO, 'scripts', 'dev-install.ts'), script);
  writeFileSync(join(root, 'test-servers', 'package-lock.json'), '{"lockfileVersion":3}\n');
  const fakeNpm = join(root, 'fake-npm-cli.js');
  writeFileSync(
    fakeNpm,
    [
      "const { mkdirSync } = require('node:fs');",
      "mkdirSync('node_modules', { recursive: true });",
      "process.stdout.write('\\nadded 458 packages in 2m\\n');",
      npmExitCode === 0 ? '' : "process.stderr.write('npm error code E404\\n');",
      `process.exit(${npmExitCode});`,
    ].join('\n'),
  );
  return { script, fakeNpm, stamp: join(root, 'test-servers', 'node_modules', '.installed-lock-sha256') };
}

function runInstall(script: string, fakeNpm: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_execpath: fakeNpm };
  delete env.npm_config_user_agent; // no "npm ran on an older Node" note
  return spawnSync(process.execPath, [script], { env, encoding: 'utf8' });
}

it('prints nothing when the test servers install, and what npm said when it fails', () => {
  const good = layout('good', 0);
  const quiet = runInstall(good.script, good.fakeNpm);
  expect([quiet.status, quiet.stdout, quiet.stderr]).toEqual([0, '', '']);
  expect(existsSync(good.stamp)).toBe(true);

  const bad = layout('bad', 1);
  const failed = runInstall(bad.script, bad.fakeNpm);
  expect(failed.status).toBe(1);
  expect(failed.stderr).toContain('added 458 packages in 2m');
  expect(failed.stderr).toContain('npm error code E404');
  expect(failed.stderr).toMatch(/installing the test servers in .*test-servers failed \(npm ci exited 1\)/);
  expect(existsSync(bad.stamp)).toBe(false);
});

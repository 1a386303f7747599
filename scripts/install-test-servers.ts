/**
 * Installs the test-only servers of test-servers/ (Azurite, for the fleet consumer's Blob checkpoint tests) from
 * their own lockfile, apart from the forwarder's dependencies: Azurite's telemetry pulls in OpenTelemetry 2.x,
 * which needs @opentelemetry/api < 1.10, while the forwarder uses OpenTelemetry 3.x on @opentelemetry/api 1.10;
 * in one tree npm reported dozens of peer-dependency conflicts on every install (docs/dependencies.md).
 *
 * Run by the root `prepare` script, i.e. after `npm ci` / `npm install` in this repository (never when the
 * published package is installed). Does nothing when the installed servers match test-servers/package-lock.json.
 * npm runs here on the Node.js that runs this script (Node 24 from node_modules/.bin during npm scripts).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = join(import.meta.dirname, '..', 'test-servers');
const lockfile = join(dir, 'package-lock.json');
const stamp = join(dir, 'node_modules', '.installed-lock-sha256');

if (existsSync(lockfile)) {
  const digest = createHash('sha256').update(readFileSync(lockfile)).digest('hex');
  const current = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '';
  if (current !== digest) {
    // npm_execpath is npm's own CLI when npm runs this script; run it on this Node.js (not the one npm ran on).
    const npmCli = process.env.npm_execpath ?? '';
    const args = ['ci', '--no-audit', '--no-fund'];
    const result =
      npmCli.endsWith('.js')
        ? spawnSync(process.execPath, [npmCli, ...args], { cwd: dir, stdio: 'inherit' })
        : spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, {
            cwd: dir,
            stdio: 'inherit',
            shell: process.platform === 'win32',
          });
    if (result.status !== 0) {
      process.stderr.write(`installing the test servers in ${dir} failed (npm ci exited ${result.status})\n`);
      process.exit(1);
    }
    writeFileSync(stamp, `${digest}\n`);
  }
}

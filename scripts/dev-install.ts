/**
 * Development setup, run by the root `prepare` script after `npm ci` / `npm install` in this repository (never
 * when the published package is installed):
 *
 * 1. One line when npm itself ran on an older Node.js than the project's: npm then warns about the engines of
 *    every dependency that needs Node >= 22 (hidden by .npmrc `loglevel=error`); the project, its npm scripts
 *    and its tests run on Node 24 from node_modules/.bin (the `node` devDependency) whatever Node npm ran on.
 * 2. Installs the test-only servers of test-servers/ (Azurite, for the fleet consumer's Blob checkpoint tests)
 *    from their own lockfile, apart from the forwarder's dependencies: Azurite's telemetry pulls in
 *    OpenTelemetry 2.x, which needs @opentelemetry/api < 1.10, while the forwarder uses OpenTelemetry 3.x on
 *    @opentelemetry/api 1.10; in one tree npm reported dozens of peer-dependency conflicts on every install
 *    (docs/dependencies.md). Does nothing when the installed servers match test-servers/package-lock.json.
 *    npm runs there on the Node.js that runs this script (Node 24 during npm scripts), so it has nothing to warn;
 *    its output is shown only when it fails.
 */
import { type SpawnSyncOptionsWithStringEncoding, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const npmNode = /\bnode\/v(\d+)\.\S*/.exec(process.env.npm_config_user_agent ?? '');
const projectMajor = Number(process.versions.node.split('.')[0]);
if (npmNode !== null && Number(npmNode[1]) < projectMajor) {
  process.stderr.write(
    `note: npm ran on Node ${npmNode[0].slice('node/'.length)}; this project runs on Node ${process.versions.node} ` +
      'from node_modules/.bin (the "node" devDependency), so npm\'s engine warnings about older Node are not shown ' +
      '(.npmrc)\n',
  );
}

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
    // Its output is kept and shown only when it fails: a good install adds nothing to `npm ci`'s own output
    // (npm prints its "added N packages" summary at every log level but silent).
    const captured: SpawnSyncOptionsWithStringEncoding = {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
    };
    const result = npmCli.endsWith('.js')
      ? spawnSync(process.execPath, [npmCli, ...args], captured)
      : spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, {
          ...captured,
          shell: process.platform === 'win32',
        });
    if (result.status !== 0) {
      process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
      process.stderr.write(
        `installing the test servers in ${dir} failed (npm ci exited ${result.status}${result.error ? `: ${result.error.message}` : ''})\n`,
      );
      process.exit(1);
    }
    writeFileSync(stamp, `${digest}\n`);
  }
}

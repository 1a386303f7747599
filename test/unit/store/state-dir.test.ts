/**
 * The state directory and its files (issue 14, items 6, 7 and 9), with real directories, symlinks and mounts:
 * an existing directory's mode is never changed and one writable by other users is refused; every file the
 * forwarder creates is 0600 and a directory it creates 0700; the temporary-disk guard resolves symlinks and
 * looks at the mount (the list of temporary-disk roots is injected so /mnt itself is never touched).
 */
import { chmodSync, mkdirSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { temporaryDiskReason } from '../../../src/platform.ts';
import { openStore, type Store, StoreOpenError } from '../../../src/store/index.ts';
import { makeRecord } from '../../support/delivery.ts';
import { bindMount, mountTmpfs } from '../../support/mount.ts';
import { makeTempDir } from '../../support/tmp.ts';

let tmp: { dir: string; cleanup: () => void };
const open: Store[] = [];
const unmounts: Array<() => void> = [];
beforeEach(() => {
  tmp = makeTempDir('sef-statedir-');
});
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const u of unmounts.splice(0).reverse()) u();
  tmp.cleanup();
});

function openAt(dir: string, extra: Partial<Parameters<typeof openStore>[0]> = {}): Store {
  const store = openStore({ stateDir: dir, logger: silentLogger(), ...extra });
  open.push(store);
  return store;
}

const modeOf = (path: string) => statSync(path).mode & 0o7777;

describe('an existing state directory (item 6)', () => {
  it('refuses a directory writable by other users (1777) with the fix, and leaves its mode alone', () => {
    const dir = join(tmp.dir, 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    let error: unknown;
    try {
      openAt(dir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StoreOpenError);
    const message = (error as Error).message;
    expect(message).toContain(`refusing state directory ${dir}`);
    expect(message).toContain('writable by other users');
    expect(message).toContain('mode 01777');
    expect(message).toContain(join(dir, 'scheduled-events-forwarder')); // the fix: a subdirectory we create
    expect(message).toContain(`chmod go-w ${dir}`);
    expect(modeOf(dir)).toBe(0o1777);
    expect(readdirSync(dir)).toEqual([]); // nothing created there
  });

  it('refuses a group-writable directory too', () => {
    const dir = join(tmp.dir, 'group');
    mkdirSync(dir);
    chmodSync(dir, 0o770);
    expect(() => openAt(dir)).toThrow(/writable by other users/);
    expect(modeOf(dir)).toBe(0o770);
  });

  it('uses a private existing directory as it is, without changing its mode', () => {
    const dir = join(tmp.dir, 'readable');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const store = openAt(dir);
    store.commit({ ok: true }, [{ record: makeRecord(1), sinks: ['a'] }]);
    expect(modeOf(dir)).toBe(0o755);
  });

  it('a subdirectory of a shared directory is created 0700 and the shared one keeps its mode', () => {
    const shared = join(tmp.dir, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const dir = join(shared, 'scheduled-events-forwarder');
    openAt(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(shared)).toBe(0o1777);
  });
});

describe('files in a fresh state directory (item 9)', () => {
  it('are all 0600 (forwarder.lock-journal included) and the directory 0700, while open and after close', () => {
    const dir = join(tmp.dir, 'fresh');
    const store = openAt(dir);
    store.commit({ step: 1 }, [{ record: makeRecord(1), sinks: ['a', 'b'] }]);
    const names = readdirSync(dir).sort();
    expect(names).toContain('forwarder.lock-journal');
    expect(names).toContain('forwarder.db-wal');
    const modes = (list: string[]) =>
      Object.fromEntries(list.map((n) => [n, modeOf(join(dir, n)).toString(8)]));
    expect(modes(names)).toEqual(Object.fromEntries(names.map((n) => [n, '600'])));
    expect(modeOf(dir)).toBe(0o700);
    for (const s of open.splice(0)) s.close();
    const after = readdirSync(dir).sort();
    expect(after.length).toBeGreaterThan(0);
    expect(modes(after)).toEqual(Object.fromEntries(after.map((n) => [n, '600'])));
  });
});

describe('the temporary-disk guard resolves the real path (item 7)', () => {
  it('refuses a symlink into a temporary-disk root, for an existing and a not-yet-existing directory', () => {
    const fakeMnt = join(tmp.dir, 'mnt');
    mkdirSync(join(fakeMnt, 'data'), { recursive: true });
    const link = join(tmp.dir, 'state-link');
    symlinkSync(join(fakeMnt, 'data'), link);
    const roots = [fakeMnt];
    // The path text is not under the root; only its real path is.
    expect(link.startsWith(`${fakeMnt}/`)).toBe(false);
    expect(temporaryDiskReason(link, process.platform, { roots })).toContain(
      `resolves to ${join(fakeMnt, 'data')}`,
    );
    for (const stateDir of [link, join(link, 'not', 'yet')]) {
      expect(() => openAt(stateDir, { temporaryDiskRoots: roots })).toThrow(
        new RegExp(`refusing state directory .*resolves to ${join(fakeMnt, 'data')}.*temporary disk`),
      );
    }
    expect(readdirSync(join(fakeMnt, 'data'))).toEqual([]); // nothing was created on the "temporary disk"
    // The same directory is accepted when explicitly allowed, and an unrelated one always.
    openAt(join(tmp.dir, 'elsewhere'), { temporaryDiskRoots: roots });
  });

  it('refuses a bind mount of the temporary disk found through /proc/self/mountinfo', () => {
    const fakeMnt = join(tmp.dir, 'resource');
    unmounts.push(mountTmpfs(fakeMnt, '8m'));
    mkdirSync(join(fakeMnt, 'sub'));
    const bound = join(tmp.dir, 'data-disk');
    unmounts.push(bindMount(join(fakeMnt, 'sub'), bound));
    const roots = [fakeMnt];
    expect(() => openAt(join(bound, 'state'), { temporaryDiskRoots: roots })).toThrow(
      new RegExp(`refusing state directory .*same device .* as ${fakeMnt}.*temporary disk`),
    );
    expect(readdirSync(join(fakeMnt, 'sub'))).toEqual([]);
    // A directory on another filesystem (the test's temp dir) is fine with the same roots.
    expect(temporaryDiskReason(join(tmp.dir, 'other'), process.platform, { roots })).toBeUndefined();
  });
});

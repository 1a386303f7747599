/**
 * Opening the store on a real full disk (issue 14, item 2), in process with a real tmpfs: the failure names the
 * disk and is retryable; openStoreWhenPossible waits (and stops waiting on abort) instead of failing; a reserve
 * file left by the last run is released so the store can open. The CLI side is in
 * test/integration/pipeline/full-disk-startup.test.ts.
 */
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import {
  openStore,
  openStoreWhenPossible,
  RESERVE_FILE,
  type Store,
  StoreOpenError,
} from '../../../src/store/index.ts';
import { captureLogger, makeRecord } from '../../support/delivery.ts';
import { fillDisk, mountTmpfs } from '../../support/mount.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

let tmp: { dir: string; cleanup: () => void };
let unmount: (() => void) | undefined;
const open: Store[] = [];
beforeEach(() => {
  tmp = makeTempDir('sef-fullopen-');
});
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  unmount?.();
  unmount = undefined;
  tmp.cleanup();
});

function mountDisk(size: string): string {
  const disk = join(tmp.dir, 'disk');
  unmount = mountTmpfs(disk, size);
  return disk;
}

describe('opening on a full disk', () => {
  it('fails with a retryable StoreOpenError that names the disk holding the state directory', () => {
    const disk = mountDisk('1m');
    const stateDir = join(disk, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    fillDisk(disk);
    let error: unknown;
    try {
      open.push(openStore({ stateDir, logger: silentLogger() }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StoreOpenError);
    expect((error as StoreOpenError).retryable).toBe(true);
    expect((error as Error).message).toContain(`the disk holding ${stateDir} is full`);
  });

  it('openStoreWhenPossible waits, logs once, and opens when space returns (or resolves undefined on abort)', async () => {
    const disk = mountDisk('1m');
    const stateDir = join(disk, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    const filler = fillDisk(disk);
    const capture = captureLogger();
    const unavailable: number[] = [];
    const opening = openStoreWhenPossible({
      stateDir,
      logger: capture.logger,
      retryDelayMs: () => 10,
      onUnavailable: (_error, attempt) => unavailable.push(attempt),
    });
    await waitFor(() => unavailable.length >= 3, 'three failed attempts');
    const errors = capture.lines().filter((l) => l.level === 50);
    expect(errors).toHaveLength(1); // rate-limited: one line per 30 s
    expect(String(errors[0]?.msg)).toContain(`the disk holding ${stateDir} is full`);
    unlinkSync(filler);
    const store = await opening;
    expect(store).toBeDefined();
    open.push(store as Store);
    (store as Store).commit({ ok: true }, [{ record: makeRecord(1), sinks: ['a'] }]);
    expect(capture.lines().some((l) => l.msg === 'state store opened after waiting for the disk')).toBe(true);

    // Stopped while waiting: resolves undefined, nothing left open.
    for (const s of open.splice(0)) s.close();
    const filler2 = fillDisk(disk);
    const controller = new AbortController();
    const attempts: number[] = [];
    const waiting = openStoreWhenPossible({
      stateDir: join(disk, 'other'),
      logger: silentLogger(),
      retryDelayMs: () => 60_000,
      signal: controller.signal,
      onUnavailable: (_e, attempt) => attempts.push(attempt),
    });
    await waitFor(() => attempts.length === 1, 'the first failed attempt');
    controller.abort();
    expect(await waiting).toBeUndefined();
    unlinkSync(filler2);
  });

  it('releases the reserve file left by the last run so the store can open on a full disk', () => {
    const disk = mountDisk('8m');
    const stateDir = join(disk, 'state');
    const first = openStore({ stateDir, logger: silentLogger() });
    first.commit({ step: 1 }, [{ record: makeRecord(1), sinks: ['a'] }]);
    first.close();
    expect(existsSync(join(stateDir, RESERVE_FILE))).toBe(true);
    fillDisk(disk);
    const capture = captureLogger();
    const store = openStore({ stateDir, logger: capture.logger });
    open.push(store);
    expect(store.pending('a', 10).map((r) => r.recordId)).toEqual(['rec-1']);
    const line = capture.lines().find((l) => String(l.msg).startsWith('DISK FULL at startup'));
    expect(line?.level).toBe(50);
  });
});

/**
 * A transition seen while the state disk is full is not lost (issue 14, item 1; round 3, item 4), with a REAL
 * full disk: the state directory lives on a small tmpfs mounted by the test (tests run as root), filled with a
 * filler file; the CLI `run` is a real child process against the IMDS simulator; the file sink writes to the
 * normal disk.
 *
 * Event committed as Scheduled → the state disk fills → IMDS shows it Started: the forwarder spends its 4 MiB
 * disk-full reserve to commit that transition at once → the disk fills again (no reserve left) → IMDS removes
 * the event: that transition waits in memory → space returns: it is committed, and the reserve re-created. The
 * file sink must receive scheduled, started, completed — in that order.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { RESERVE_BYTES, RESERVE_FILE } from '../../../src/store/index.ts';
import { type ForwarderChild, jsonLines, spawnCli } from '../../support/child.ts';
import { runArgs } from '../../support/forwarder.ts';
import { fillDisk, mountTmpfs } from '../../support/mount.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-tmpfs-');
const mountPoint = join(tmp.dir, 'statefs');
let sim: RunningSimulator | undefined;
let fwd: ForwarderChild | undefined;

let unmount: (() => void) | undefined;

beforeAll(() => {
  // 8 MiB: the store's 4 MiB disk-full reserve file, the database, and room for the filler.
  unmount = mountTmpfs(mountPoint, '8m');
});

afterAll(async () => {
  if (fwd !== undefined && fwd.child.exitCode === null && fwd.child.signalCode === null) {
    fwd.child.kill('SIGKILL');
    await fwd.exited;
  }
  await sim?.close();
  unmount?.();
  tmp.cleanup();
});

function readRecords(file: string): LifecycleRecord[] {
  return existsSync(file) ? jsonLines<LifecycleRecord>(readFileSync(file, 'utf8')) : [];
}

function pendingRows(stateDir: string): number {
  const db = new DatabaseSync(join(stateDir, 'forwarder.db'), { readOnly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function gets(s: RunningSimulator): number {
  return s.admin.requests().log.filter((e) => e.endpoint === 'scheduledevents').length;
}

describe('full state disk (real tmpfs)', () => {
  it('a transition seen while commits fail is kept in memory and committed in order once space returns', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const s = sim;
    const stateDir = join(mountPoint, 'state');
    const outDir = join(tmp.dir, 'out');
    mkdirSync(outDir);
    const out = join(outDir, 'records.jsonl');
    fwd = spawnCli(runArgs({ imdsEndpoint: s.url, stateDir, out }));
    await fwd.ready;

    const event = s.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await waitFor(() => readRecords(out).length === 1, 'the scheduled record');
    // Delivered AND acknowledged: nothing is left for the delivery engine to write.
    await waitFor(() => pendingRows(stateDir) === 0, 'the outbox drained');
    const settled = gets(s) + 3;
    await waitFor(() => gets(s) >= settled, 'a few more polls');

    const reserve = join(stateDir, RESERVE_FILE);
    expect(statSync(reserve).size).toBe(RESERVE_BYTES);
    const filler = fillDisk(mountPoint);
    expect(statSync(filler).size).toBeGreaterThan(0);

    // Started on a full disk: the reserve is released to commit it, so it is durable (and delivered) at once.
    s.admin.setStatus(event.id, 'Started');
    await waitFor(() => readRecords(out).length === 2, 'the started record, committed with the reserve');
    expect(existsSync(reserve)).toBe(false);
    await waitFor(
      () => fwd!.stderr().includes('released the disk-full reserve file to commit the transitions'),
      'the reserve-released log line',
    );
    await waitFor(() => pendingRows(stateDir) === 0, 'the outbox drained');

    // Full again, and no reserve left: the next transition waits in memory.
    const filler2 = fillDisk(mountPoint, 'filler-2.bin');
    s.admin.removeEvent(event.id);
    await waitFor(
      () => fwd!.stderr().includes('the disk holding the state directory is full'),
      'the disk-full error line',
    );
    const errorLine = fwd
      .stderr()
      .split('\n')
      .find((l) => l.includes('the disk holding the state directory is full'))!;
    expect(JSON.parse(errorLine)).toMatchObject({ level: 50, diskFull: true, waitingTransitions: 1 });
    expect(errorLine).toMatch(/1 transition\(s\) wait in memory/);
    const afterRemoval = gets(s) + 3;
    await waitFor(() => gets(s) >= afterRemoval, 'more polls while full');
    expect(readRecords(out).map((r) => r.transition)).toEqual(['scheduled', 'started']); // nothing more

    rmSync(filler); // space returns
    rmSync(filler2);
    await waitFor(() => readRecords(out).length >= 3, 'completed after space returned');
    // The reserve comes back while the forwarder runs, once there is room for it.
    await waitFor(
      () => existsSync(reserve) && statSync(reserve).size === RESERVE_BYTES,
      'the disk-full reserve file to be re-created',
    );
    // The child writes the line after the file; this process reads it from a pipe later: wait, do not race.
    await waitFor(
      () => fwd!.stderr().includes('disk space is back: disk-full reserve file restored'),
      'the reserve-restored log line',
    );
    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);

    const records = [...new Map(readRecords(out).map((r) => [r.id, r])).values()];
    expect(records.map((r) => `${r.subject}:${r.transition}`)).toEqual([
      `${event.id}:scheduled`,
      `${event.id}:started`,
      `${event.id}:completed`,
    ]);
    const [, started, completed] = records;
    // Observed, not inferred: the process saw it Started while the disk was full.
    expect(completed!.data.inferred).toBe(false);
    expect(Date.parse(started!.time)).toBeLessThan(Date.parse(completed!.time));
    expect(fwd.stderr()).toContain('the transitions that waited in memory are committed, in order');
  });
});

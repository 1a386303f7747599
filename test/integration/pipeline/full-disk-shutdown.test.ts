/**
 * Full disk at shutdown (issue "Forwarder hardening, round 3", item 4), on a REAL full disk: the state
 * directory lives on a small tmpfs (tests run as root), filled with a filler file; `run` is a real child
 * process against the IMDS simulator; the file sink writes to the normal disk.
 *
 * Event committed as Scheduled → the state disk fills → IMDS shows it Started, then removes it → SIGTERM. The
 * transitions must not be "lost with this process": the forwarder spends its disk-full reserve to commit them.
 * After space returns, the next start delivers scheduled, started, completed — observed, not inferred — and
 * has re-created the reserve.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { RESERVE_BYTES, RESERVE_FILE } from '../../../src/store/index.ts';
import { type ForwarderChild, jsonLines, spawnCli } from '../../support/child.ts';
import { runArgs } from '../../support/forwarder.ts';
import { fillDisk, mountTmpfs } from '../../support/mount.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-full-stop-');
const mountPoint = join(tmp.dir, 'statefs');
let sim: RunningSimulator | undefined;
const children: ForwarderChild[] = [];
let unmount: (() => void) | undefined;

beforeAll(() => {
  // 8 MiB: the store's 4 MiB disk-full reserve file, the database, and room for the filler.
  unmount = mountTmpfs(mountPoint, '8m');
});

afterAll(async () => {
  for (const fwd of children) {
    if (fwd.child.exitCode === null && fwd.child.signalCode === null) {
      fwd.child.kill('SIGKILL');
      await fwd.exited;
    }
  }
  await sim?.close();
  unmount?.();
  tmp.cleanup();
});

function readRecords(file: string): LifecycleRecord[] {
  return existsSync(file) ? jsonLines<LifecycleRecord>(readFileSync(file, 'utf8')) : [];
}

function gets(s: RunningSimulator): number {
  return s.admin.requests().log.filter((e) => e.endpoint === 'scheduledevents').length;
}

describe('SIGTERM on a full state disk (real tmpfs)', () => {
  it('commits the transitions seen on the full disk with the reserve instead of losing them', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const s = sim;
    const stateDir = join(mountPoint, 'state');
    const outDir = join(tmp.dir, 'out');
    mkdirSync(outDir);
    const out = join(outDir, 'records.jsonl');
    const args = runArgs({ imdsEndpoint: s.url, stateDir, out });
    const first = spawnCli(args);
    children.push(first);
    await first.ready;

    const event = s.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await waitFor(() => readRecords(out).length === 1, 'the scheduled record');
    const settled = gets(s) + 3;
    await waitFor(() => gets(s) >= settled, 'a few more polls');

    const filler = fillDisk(mountPoint);
    s.admin.setStatus(event.id, 'Started');
    const afterStart = gets(s) + 3; // the poll that saw it Started has been handled once two more were sent
    await waitFor(() => gets(s) >= afterStart, 'polls after Started');
    s.admin.removeEvent(event.id);
    const afterRemoval = gets(s) + 3;
    await waitFor(() => gets(s) >= afterRemoval, 'polls after the removal');

    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect(first.stderr()).not.toContain('lost with this process');

    rmSync(filler); // space returns
    const unique = (): LifecycleRecord[] => [...new Map(readRecords(out).map((r) => [r.id, r])).values()];
    const second = spawnCli(args);
    children.push(second);
    await second.ready;
    await waitFor(() => unique().length >= 3, 'every record committed before the full-disk shutdown');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);

    // Everything the first run saw, as it saw it, in order (whichever run delivered it).
    expect(unique().map((r) => `${r.subject}:${r.transition}`)).toEqual([
      `${event.id}:scheduled`,
      `${event.id}:started`,
      `${event.id}:completed`,
    ]);
    expect(unique()[2]!.data.inferred).toBe(false); // observed completed, not inferred at the next start
    // The reserve spent at the shutdown is back.
    expect(statSync(join(stateDir, RESERVE_FILE)).size).toBe(RESERVE_BYTES);
  });
});

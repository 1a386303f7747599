/**
 * The store commands never report "all clear" for a state directory they cannot read (issue "Forwarder
 * hardening, round 3", item 8). A state directory (mode 0700, as the forwarder creates it) holds a pending row
 * committed 7 minutes ago; `outbox status`, `deadletters list` and `deadletters replay` run as real CLI child
 * processes as a user without access: as uid/gid 65534 (nobody) when the test runs as root (as
 * test/support/postgres.ts runs PostgreSQL), otherwise against a copy chmod-ed 000. Each must fail (exit 1)
 * with a message naming the path, the permission found and the fix — never "nothing pending", never SQLite's
 * bare "unable to open database file". The owner still sees the pending row.
 */
import { execFile } from 'node:child_process';
import { chmodSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { openStore } from '../../../src/store/index.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const UNPRIVILEGED = { uid: 65534, gid: 65534 };
const asRoot = process.getuid?.() === 0;
const tmp = makeTempDir('sef-unreadable-');
/** The state directory the owner reads. */
const stateDir = join(tmp.dir, 'state');
/** The one the other user is pointed at: the same directory as root; a chmod-000 copy otherwise. */
let deniedDir = stateDir;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], ids: { uid?: number; gid?: number } = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd: REPO, env: { ...process.env, HOME: tmp.dir }, ...ids },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(() => {
  chmodSync(tmp.dir, 0o755); // the parent can be searched: only the state directory itself is closed
  const sevenMinutesAgo = Date.now() - 7 * 60_000;
  const store = openStore({ stateDir, logger: silentLogger(), now: () => sevenMinutesAgo });
  store.commit({ n: 1 }, [{ record: makeRecord(1), sinks: ['hook'] }]);
  store.close();
  if (!asRoot) {
    deniedDir = join(tmp.dir, 'state-copy');
    cpSync(stateDir, deniedDir, { recursive: true });
    chmodSync(deniedDir, 0o000);
  }
});

afterAll(() => {
  if (!asRoot) chmodSync(deniedDir, 0o700);
  tmp.cleanup();
});

describe('store commands as a user who cannot read the state directory', () => {
  it('the owner sees the 7-minute-old pending row', async () => {
    const result = await cli(['outbox', 'status', '--state-dir', stateDir]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/hook: 1 pending .*oldest 7m/);
  });

  for (const command of [
    ['outbox', 'status'],
    ['deadletters', 'list'],
    ['deadletters', 'replay'],
  ]) {
    it(`${command.join(' ')} fails naming the path, the permission and the fix`, async () => {
      const result = await cli([...command, '--state-dir', deniedDir], asRoot ? UNPRIVILEGED : {});
      expect(result.stdout).not.toMatch(/nothing pending|no dead letters|0 dead letters|replayed/i);
      expect(result.code).toBe(1);
      const message = result.stderr;
      expect(message).toContain(`cannot read`);
      expect(message).toContain(deniedDir);
      expect(message).toMatch(asRoot ? /owned by uid 0 \(root\), mode 0700/ : /mode 0000/);
      expect(message).toMatch(/EACCES/);
      expect(message).toContain(`sudo scheduled-events-forwarder ${command.join(' ')}`);
      expect(message).toContain('not "nothing pending"');
    });
  }
});

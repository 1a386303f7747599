/**
 * Permission problems at startup name the path, the owner and mode found, the user the forwarder runs as, and
 * the fix (issue 14, item 8). Tests run as root, which bypasses permission checks, so the forwarder runs here as
 * a real child process of the CLI with the unprivileged uid/gid 65534 (nobody).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const NOBODY = 65534;
const tmp = makeTempDir('sef-perm-');
beforeAll(() => {
  if (process.getuid?.() !== 0) {
    throw new Error('these tests start the forwarder as uid 65534 and need to run as root (as in CI)');
  }
  chmodSync(tmp.dir, 0o755); // nobody must reach the directories below
});
afterAll(() => tmp.cleanup());

/** Runs `run --state-dir DIR` as nobody; the store check fails before IMDS (a closed port) is ever asked. */
async function runAsNobody(stateDir: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    [MAIN, 'run', '--state-dir', stateDir, '--imds-endpoint', 'http://127.0.0.1:9', '--sink', 'stdout'],
    {
      cwd: REPO,
      uid: NOBODY,
      gid: NOBODY,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, HOME: '/' },
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

describe('permission problems at startup (item 8)', () => {
  it('a state directory owned by another user: path, owner, mode, our user and the fix; its mode is kept', async () => {
    const dir = join(tmp.dir, 'root-owned');
    mkdirSync(dir, { mode: 0o700 });
    const { code, stderr } = await runAsNobody(dir);
    expect(code).toBe(1);
    expect(stderr).toContain(`state directory ${dir} is owned by uid 0 (root), mode 0700`);
    expect(stderr).toContain(`runs as uid ${NOBODY}`);
    expect(stderr).toContain(`chown -R ${NOBODY} ${dir}`);
    expect(stderr).not.toMatch(/EPERM[^\n]*chmod/);
    expect(statSync(dir).mode & 0o7777).toBe(0o700);
  });

  it('a forwarder.db owned by another user (read-only to us): path, owner, mode and the fix', async () => {
    const dir = join(tmp.dir, 'foreign-db');
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, NOBODY, NOBODY);
    const db = join(dir, 'forwarder.db');
    writeFileSync(db, '', { mode: 0o644 });
    const { code, stderr } = await runAsNobody(dir);
    expect(code).toBe(1);
    expect(stderr).toContain(`state file ${db} is owned by uid 0 (root), mode 0644`);
    expect(stderr).toContain(`runs as uid ${NOBODY}`);
    expect(stderr).toContain(`chown -R ${NOBODY} ${dir}`);
    expect(stderr).not.toMatch(/EPERM[^\n]*chmod/);
    expect(statSync(db).mode & 0o7777).toBe(0o644);
  });

  it('a missing state directory whose parent we cannot write: the parent, its owner and mode, and the fix', async () => {
    const parent = join(tmp.dir, 'parent');
    mkdirSync(parent, { mode: 0o755 });
    const dir = join(parent, 'state');
    const { code, stderr } = await runAsNobody(dir);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `cannot create the state directory ${dir}: ${parent} is owned by uid 0 (root), mode 0755`,
    );
    expect(stderr).toContain(`install -d -m 0700 -o <service user> ${dir}`);
  });
});

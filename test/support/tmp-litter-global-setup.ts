/**
 * Vitest globalSetup: every test cleans up what it creates (docs/GUIDE: "Each test removes what it creates"). The
 * run gets a temporary directory of its own (TMPDIR for the workers and every process they start, so
 * `os.tmpdir()` and `mkdtemp` land there), and at the end of the run anything left in it fails the run, naming
 * what was left; the directory is removed either way, so a failing run leaves nothing behind either. Other
 * processes on the machine (other runs, other tools) never write there, so the check cannot be fooled by them.
 *
 * Kept: `node-compile-cache`, the module compile cache npm's own CLI enables in the temporary directory whenever
 * it runs (the tests that run npm; `npm ci` and `npm test` make the same one in /tmp): npm's cache, not a test's.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Entries a run may leave (see the module comment). */
const NOT_LITTER = new Set(['node-compile-cache']);

export default function setup(): () => void {
  const outer = tmpdir();
  const dir = mkdtempSync(join(outer, 'sef-test-run-'));
  // Like /tmp: tests start processes as an unprivileged user (PostgreSQL, the permission tests) that must reach it.
  chmodSync(dir, 0o1777);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    const left = readdirSync(dir).filter((name) => !NOT_LITTER.has(name));
    rmSync(dir, { recursive: true, force: true });
    if (left.length > 0) {
      throw new Error(
        `the test run left ${left.length} entr${left.length === 1 ? 'y' : 'ies'} in its temporary directory ` +
          `(removed now; the test that creates each must remove it): ${left.sort().join(', ')}`,
      );
    }
  };
}

/**
 * Issue 15, item 9: under a Node.js without node:sqlite the built CLI (dist/cli/main.js, as installed) says which
 * Node.js it needs instead of dying with `No such built-in module: node:sqlite`. Runs the real bin with the
 * machine's own `node` (the one on the PATH without node_modules/.bin; Node 20 on the CI machine).
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem, REQUIRED_NODE } from '../../../src/cli/node-version.ts';
import { REPO } from '../../support/child.ts';

const BIN = join(REPO, 'dist', 'cli', 'main.js');
/** The default PATH, without the project's node_modules/.bin (where the pinned Node 24 lives). */
const SYSTEM_PATH = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir !== '' && !dir.includes('node_modules'))
  .join(delimiter);

describe('Node.js version check', () => {
  it('accepts exactly the versions with an unflagged node:sqlite', () => {
    for (const ok of ['22.13.0', '22.20.1', '23.4.0', '24.0.0', '24.21.0', '26.1.0'])
      expect(nodeVersionProblem(ok), ok).toBeUndefined();
    for (const old of ['18.20.4', '20.20.2', '22.12.0', '23.3.0'])
      expect(nodeVersionProblem(old), old).toContain(`needs Node.js ${REQUIRED_NODE} or newer`);
    expect(nodeVersionProblem('20.20.2', '/usr/bin/node')).toContain(
      'runs on Node.js v20.20.2 (/usr/bin/node)',
    );
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${REQUIRED_NODE}`);
  });

  it("the built bin under the machine's own node names the Node.js it needs", async () => {
    const env = { ...process.env, PATH: SYSTEM_PATH };
    const version = execFileSync('node', ['-p', 'process.versions.node'], { env, encoding: 'utf8' }).trim();
    const result = await promisify(execFile)(
      'node',
      [BIN, 'outbox', 'status', '--state-dir', join(REPO, 'no-such-dir')],
      {
        env,
      },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    if (nodeVersionProblem(version) !== undefined) {
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `error: ${nodeVersionProblem(version, execFileSync('node', ['-p', 'process.execPath'], { env, encoding: 'utf8' }).trim())}\n`,
      );
      expect(result.stderr).not.toContain('No such built-in module');
    } else {
      // A machine whose own node is new enough runs the command normally.
      expect(result).toMatchObject({ code: 0, stdout: 'nothing pending\n' });
    }
  });
});

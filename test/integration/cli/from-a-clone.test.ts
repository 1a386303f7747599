/**
 * README's "The command from a clone": each command of its example block runs as written, from the repository,
 * with the machine's own PATH (no node_modules/.bin first: a system Node.js older than the project's), and runs on
 * the project's Node 24.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO } from '../../support/child.ts';

const SYSTEM_PATH = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir !== '' && !dir.includes('node_modules'))
  .join(delimiter);

it('every command of the example block works from the clone, on the pinned Node.js', () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('**The command from a clone:**'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const commands = block.split('\n').filter((line) => line.startsWith('npx node src/cli/main.ts'));
  expect(commands.length).toBeGreaterThanOrEqual(2);
  const env = { ...process.env, PATH: SYSTEM_PATH };
  for (const command of [...commands, 'npx node -p process.versions.node']) {
    const [program, ...args] = command.split(' ');
    const result = spawnSync(program!, args, { cwd: REPO, env, encoding: 'utf8', timeout: 60_000 });
    expect(result.status, `${command}: ${result.stderr}`).toBe(0);
    if (command.endsWith('process.versions.node')) {
      const pinned = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).devDependencies.node;
      expect(result.stdout.trim()).toBe(pinned);
    }
  }
});

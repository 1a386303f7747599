/**
 * Benchmark children measured in turns (bench/lib/turns.ts): real child processes over fork's IPC channel. The
 * parent lets one child through its gate at a time, the order reversed every round; a child that dies says so,
 * with its last stderr, instead of leaving the parent waiting.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { forkTurnChild, takeTurns } from '../../../bench/lib/turns.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-turns-');
afterAll(() => tmp.cleanup());
const script = join(import.meta.dirname, '..', '..', 'support', 'turns-child.ts');

describe('turns', () => {
  it('lets two children through one at a time, the order reversed every round, and collects their results', async () => {
    const file = join(tmp.dir, 'rounds.log');
    const logged: string[] = [];
    const children = ['small', 'large'].map((name) =>
      forkTurnChild<{ name: string; rounds: number }>(script, [name, '3', file], {
        log: (l) => logged.push(l),
      }),
    );
    for (const child of children) await child.atGate();
    await takeTurns(children, 3);
    const results = [];
    for (const child of children) {
      child.go();
      results.push(await child.result);
    }
    expect(readFileSync(file, 'utf8').trim().split('\n')).toEqual([
      'small 0',
      'large 0',
      'large 1',
      'small 1',
      'small 2',
      'large 2',
    ]);
    expect(results).toEqual([
      { name: 'small', rounds: 3 },
      { name: 'large', rounds: 3 },
    ]);
    expect(logged).toEqual([]);
  });

  it('rejects the wait and the result of a child that exits, with its exit code and last stderr', async () => {
    const logged: string[] = [];
    const child = forkTurnChild(script, ['broken', '2', join(tmp.dir, 'broken.log'), 'fail'], {
      log: (l) => logged.push(l),
    });
    await child.atGate();
    child.go();
    await expect(child.atGate()).rejects.toThrow(
      /exited \(code 3\) without a result:\nbroken: the disk is full/,
    );
    await expect(child.result).rejects.toThrow(/code 3/);
    expect(logged).toEqual(['broken: the disk is full']);
  });

  it('makes a child whose parent goes away fail at its gate and exit, instead of waiting for ever', async () => {
    const child = fork(script, ['orphan', '2', join(tmp.dir, 'orphan.log')], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const [message] = (await once(child, 'message')) as [{ type: string }];
    expect(message.type).toBe('gate');
    // 'exit' and the end of stderr: a child whose channel the parent closed emits no 'close'.
    const exited = once(child, 'exit');
    const drained = once(child.stderr!, 'end');
    child.disconnect();
    const [[code]] = await Promise.all([exited, drained]);
    expect(code).not.toBe(0);
    expect(stderr).toContain('the benchmark parent went away');
  });
});

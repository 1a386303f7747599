/**
 * The function-length check (scripts/check-function-length.ts, part of `npm run depcheck`) measures what it claims:
 * every kind of function, from its first line to its closing brace, named so the message points at it, and it
 * fails on a function of 151 lines while passing one of 150. A check that could not see would pass vacuously.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { functionLengths, MAX_FUNCTION_LINES } from '../../../scripts/check-function-length.ts';
import { makeTempDir } from '../../support/tmp.ts';

const script = join(import.meta.dirname, '..', '..', '..', 'scripts', 'check-function-length.ts');
const tmp = makeTempDir('sef-function-length-');
afterAll(() => tmp.cleanup());

/** A function declaration of exactly `lines` lines (its first and last line included). */
function functionOf(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return [`export function ${name}(): void {`, ...body, '}', ''].join('\n');
}

function check(dir: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [script, dir], { encoding: 'utf8', timeout: 60_000 });
}

describe('function length check', () => {
  it('measures every kind of function from its first line to its closing brace, by name', () => {
    const source = [
      '// "é" and "—" before a function must not shift its lines (swc counts bytes)', // 1
      'export function declared(a: number): number {', // 2
      '  const inner = (b: number) => {', // 3
      '    return b;', // 4
      '  };', // 5
      '  return inner(a);', // 6
      '}', // 7
      'export const arrow = async (): Promise<void> => {', // 8
      '  await Promise.resolve();', // 9
      '};', // 10
      'export class Worker {', // 11
      '  constructor(readonly n: number) {}', // 12
      '  run(): void {', // 13
      '    [1].forEach((x) => {', // 14
      '      void x;', // 15
      '    });', // 16
      '  }', // 17
      '  get size(): number {', // 18
      '    return 1;', // 19
      '  }', // 20
      '  #hidden = function (): void {};', // 21
      '}', // 22
      'export const table = { collect() { return 1; }, help: function named() {} };', // 23
    ].join('\n');
    const found = functionLengths(source, 'src/x.ts').map(({ name, line, lines }) => ({ name, line, lines }));
    expect(found).toEqual([
      { name: 'declared', line: 2, lines: 6 },
      { name: 'declared > inner', line: 3, lines: 3 },
      { name: 'arrow', line: 8, lines: 3 },
      { name: 'Worker.constructor', line: 12, lines: 1 },
      { name: 'Worker.run', line: 13, lines: 5 },
      { name: 'Worker.run > (anonymous)', line: 14, lines: 3 },
      { name: 'Worker.size', line: 18, lines: 3 },
      { name: 'Worker > #hidden', line: 21, lines: 1 },
      { name: 'collect', line: 23, lines: 1 },
      { name: 'named', line: 23, lines: 1 },
    ]);
  });

  it(`passes a function of ${MAX_FUNCTION_LINES} lines and fails on one of ${MAX_FUNCTION_LINES + 1}, naming it`, () => {
    const ok = join(tmp.dir, 'ok', 'src');
    mkdirSync(ok, { recursive: true });
    writeFileSync(join(ok, 'fine.ts'), functionOf('fine', MAX_FUNCTION_LINES));
    const passed = check(ok);
    expect(passed.stderr).toBe('');
    expect(passed.status).toBe(0);

    const bad = join(tmp.dir, 'bad', 'src');
    mkdirSync(join(bad, 'deep'), { recursive: true });
    writeFileSync(join(bad, 'fine.ts'), functionOf('fine', MAX_FUNCTION_LINES));
    writeFileSync(join(bad, 'deep', 'long.ts'), `\n${functionOf('tooLong', MAX_FUNCTION_LINES + 1)}`);
    const failed = check(bad);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain(`src/deep/long.ts:2  tooLong  ${MAX_FUNCTION_LINES + 1} lines`);
    expect(failed.stderr).not.toContain('fine');
  });
});

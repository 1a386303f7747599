/**
 * `scheduled-events-forwarder <command> | head -1`: when the reader of stdout closes early, a command that prints
 * a list ends quietly with exit code 0 (src/cli/main.ts), instead of crashing with an EPIPE stack trace. Real CLI
 * child processes whose stdout pipe is closed by the reading side.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isService } from '../../../src/cli/main.ts';
import { silentLogger } from '../../../src/log.ts';
import { openStore } from '../../../src/store/index.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const MAIN = join(import.meta.dirname, '../../../src/cli/main.ts');
const children: ChildProcess[] = [];
const dirs: Array<{ cleanup(): void }> = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  for (const dir of dirs.splice(0)) dir.cleanup();
});

/**
 * Runs the CLI with stdout on a pipe whose reading end is closed after the first line (`closeAfterFirstLine`)
 * or before the child writes anything. Resolves with the exit code, the line read and stderr.
 */
async function runClosingReader(
  args: string[],
  closeAfterFirstLine: boolean,
): Promise<{ code: number | null; signal: string | null; firstLine: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  let firstLine = '';
  const stdout = child.stdout!;
  if (!closeAfterFirstLine) stdout.destroy();
  else {
    let buffered = '';
    stdout.setEncoding('utf8');
    stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const end = buffered.indexOf('\n');
      if (end >= 0 && firstLine === '') {
        firstLine = buffered.slice(0, end);
        stdout.destroy(); // like `head -1`: the reader has seen enough and goes away
      }
    });
  }
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  return { code, signal, firstLine, stderr };
}

describe('a closed stdout pipe ends list commands quietly', () => {
  it('simulate --list-scenarios with a reader that closes before the first line: exit 0, no stack trace', async () => {
    const result = await runClosingReader(['simulate', '--list-scenarios'], false);
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
  });

  it('deadletters list larger than the pipe buffer, reader closes after the first line: exit 0, no stack trace', async () => {
    // Thousands of rows (several hundred KiB): far more than a pipe holds, so the command is certainly still
    // writing when the reader goes away.
    const tmp = makeTempDir('sef-epipe-');
    dirs.push(tmp);
    const stateDir = join(tmp.dir, 'state');
    const store = openStore({ stateDir, logger: silentLogger() });
    const rows = Array.from({ length: 4000 }, (_, i) => ({ record: makeRecord(i + 1), sinks: ['hub'] }));
    store.commit({}, rows);
    store.deadLetter(
      'hub',
      store.pending('hub', rows.length).map((r) => r.seq),
      { reason: 'permanent', error: `http-400: ${'rejected '.repeat(20)}` },
    );
    store.close();

    const result = await runClosingReader(['deadletters', 'list', '--state-dir', stateDir], true);
    expect(result.firstLine).toBe('ID\tSINK\tRECORD ID\tTRANSITION\tREASON\tDEAD-LETTERED AT\tERROR');
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
  });

  it('the long-running services are not among them (a closed stdout is not "done" for run or fleet run)', () => {
    const argv = (...args: string[]) => ['node', 'main.ts', ...args];
    expect(isService(argv('run', '--config', 'x.yaml'))).toBe(true);
    expect(isService(argv('fleet'))).toBe(true);
    expect(isService(argv('fleet', 'run', '--config', 'f.yaml'))).toBe(true);
    expect(isService(argv('fleet', 'report'))).toBe(false);
    expect(isService(argv('run', '--help'))).toBe(false);
    expect(isService(argv('deadletters', 'list'))).toBe(false);
    expect(isService(argv('simulate', '--list-scenarios'))).toBe(false);
  });
});

/**
 * Issue 15, item 14: by default a pending record never expires by age (README: "retries never expire by
 * age"); only a configured `maxAgeHours` moves old rows to dead letters (reason expired), at error level.
 * Real `run` child processes replaying an empty capture over a state directory with 40-day-old pending rows.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { openStore } from '../../../src/store/index.ts';
import { jsonLines, MAIN, REPO } from '../../support/child.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const FORTY_DAYS_MS = 40 * 24 * 3_600_000;

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('sef-caps-');
});
afterEach(() => tmp.cleanup());

/** A state directory whose sink `file` has three records committed 40 days ago. */
function seedOldRows(stateDir: string): void {
  const store = openStore({ stateDir, logger: silentLogger(), now: () => Date.now() - FORTY_DAYS_MS });
  try {
    store.commit(
      {},
      [1, 2, 3].map((n) => ({ record: makeRecord(n), sinks: ['file'] })),
    );
  } finally {
    store.close();
  }
}

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [MAIN, 'run', ...args], { cwd: REPO });
    return { code: 0, stderr };
  } catch (error) {
    const e = error as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

describe('sink caps defaults', () => {
  it('delivers records pending for 40 days: nothing expires by age unless maxAgeHours is set', async () => {
    const stateDir = join(tmp.dir, 'state');
    seedOldRows(stateDir);
    const capture = join(tmp.dir, 'empty.jsonl');
    writeFileSync(capture, '');
    const out = join(tmp.dir, 'records.jsonl');
    const result = await run(['--replay', capture, '--state-dir', stateDir, '--sink', `file:${out}`]);
    expect(result.code).toBe(0);
    expect(jsonLines<{ id: string }>(readFileSync(out, 'utf8')).map((r) => r.id)).toEqual([
      'rec-1',
      'rec-2',
      'rec-3',
    ]);
    expect(result.stderr).not.toContain('over its caps');
  });

  it('with maxAgeHours configured, older pending rows become expired dead letters, logged at error level', async () => {
    const stateDir = join(tmp.dir, 'state');
    seedOldRows(stateDir);
    const capture = join(tmp.dir, 'empty.jsonl');
    writeFileSync(capture, '');
    const out = join(tmp.dir, 'records.jsonl');
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(stateDir)}`,
        `source: { type: replay, file: ${JSON.stringify(capture)} }`,
        'sinks:',
        `  - { name: file, type: file, path: ${JSON.stringify(out)}, delivery: { caps: { maxAgeHours: 720 } } }`,
        '',
      ].join('\n'),
    );
    const result = await run(['--config', config]);
    expect(result.code).toBe(0);
    expect(existsSync(out) ? readFileSync(out, 'utf8') : '').toBe('');
    const capsLine = jsonLines(
      result.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .join('\n'),
    ).find((l) => String(l.msg).startsWith('sink queue over its caps'));
    expect(capsLine).toMatchObject({ level: 50, sink: 'file', expired: 3, overflow: 0 });
    const store = openStore({ stateDir, logger: silentLogger() });
    try {
      expect(store.listDeadLetters().map((d) => `${d.recordId}:${d.reason}`)).toEqual([
        'rec-1:expired',
        'rec-2:expired',
        'rec-3:expired',
      ]);
    } finally {
      store.close();
    }
  });
});

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { openStore } from '../../../src/store/index.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const MAIN = join(import.meta.dirname, '../../../src/cli/main.ts');
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('sef-cli-');
});
afterEach(() => tmp.cleanup());

describe('outbox and deadletters commands', () => {
  it('on a missing or empty state directory, each says what README.md and docs/delivery.md quote (exit 0, creates nothing)', async () => {
    const answers = {
      'outbox status': 'nothing pending',
      'deadletters list': 'no dead letters',
      'deadletters replay': 'nothing to replay: there are no dead letters',
    };
    const empty = join(tmp.dir, 'empty');
    mkdirSync(empty, { mode: 0o700 });
    for (const dir of [join(tmp.dir, 'never-used'), empty]) {
      for (const [command, answer] of Object.entries(answers)) {
        expect(await cli(...command.split(' '), '--state-dir', dir), command).toMatchObject({
          code: 0,
          stdout: `${answer}\n`,
        });
      }
    }
    expect(existsSync(join(tmp.dir, 'never-used'))).toBe(false);
    expect(readdirSync(empty)).toEqual([]);
    for (const doc of ['README.md', 'docs/delivery.md']) {
      const text = readFileSync(join(import.meta.dirname, '../../..', doc), 'utf8').replace(/\s+/g, ' ');
      for (const [command, answer] of Object.entries(answers)) {
        expect(text, doc).toContain(`\`${command}\` prints \`${answer}\``);
      }
    }
  });

  it('shows pending and dead letters and replays them while the forwarder holds the store', async () => {
    const store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
    try {
      store.commit(
        {},
        [1, 2, 3].map((n) => ({ record: makeRecord(n), sinks: ['hook'] })),
      );
      const [first] = store.pending('hook', 1);
      store.deadLetter('hook', [first?.seq as number], {
        reason: 'permanent',
        error: 'exec-exit-3: prepare failed',
      });
      const status = await cli('outbox', 'status', '--state-dir', tmp.dir);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(
        /^hook: 2 pending \(\d+ bytes\), oldest \d+s old, next attempt now, 1 dead letter$/m,
      );
      const list = await cli('deadletters', 'list', '--state-dir', tmp.dir, '--json');
      const rows = JSON.parse(list.stdout) as Array<{ id: number; recordId: string; error: string }>;
      expect(rows).toEqual([
        expect.objectContaining({ recordId: 'rec-1', error: 'exec-exit-3: prepare failed' }),
      ]);
      expect(await cli('deadletters', 'replay', '--state-dir', tmp.dir, '--id', 'abc')).toMatchObject({
        code: 2,
      });
      const replay = await cli('deadletters', 'replay', '--state-dir', tmp.dir, '--id', String(rows[0]?.id));
      expect(replay).toMatchObject({ code: 0, stdout: 'replayed 1 dead letter\n' });
      expect(store.pending('hook', 10).map((r) => r.recordId)).toEqual(['rec-2', 'rec-3', 'rec-1']);
    } finally {
      store.close();
    }
  });

  it('outbox status --config lists every configured sink, also with nothing pending (issue 31 item 6)', async () => {
    const stateDir = join(tmp.dir, 'state');
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(stateDir)}`,
        'sinks:',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a secret reference the command must not resolve
        '  - { name: hook, type: webhook, url: "${SEF_T_UNSET_URL}" }',
        `  - { name: file, type: file, path: ${JSON.stringify(join(tmp.dir, 'out.jsonl'))} }`,
        '  - { name: spare, type: stdout, enabled: false }',
        '',
      ].join('\n'),
    );
    const zero = (sink: string) => ({
      sink,
      pending: 0,
      pendingBytes: 0,
      oldestCreatedAt: null,
      nextAttemptAt: null,
      headAttempts: 0,
      lastError: null,
      deadLetters: 0,
      deadLettersDropped: 0,
      configured: true,
    });
    // The state directory does not exist yet: every configured sink, at 0, and nothing created.
    let json = await cli('outbox', 'status', '--config', config, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([zero('hook'), zero('file'), zero('spare')]);
    expect(existsSync(stateDir)).toBe(false);
    const text = await cli('outbox', 'status', '--config', config);
    expect(text.stdout).toBe(
      'hook: 0 pending (0 bytes), 0 dead letters\nfile: 0 pending (0 bytes), 0 dead letters\n' +
        'spare: 0 pending (0 bytes), 0 dead letters\nnothing pending\n',
    );

    // file has rows, hook has none, and a sink no longer in the file still has one: listed after, marked.
    const store = openStore({ stateDir, logger: silentLogger() });
    try {
      store.commit({}, [
        { record: makeRecord(1), sinks: ['file', 'old'] },
        { record: makeRecord(2), sinks: ['file'] },
      ]);
    } finally {
      store.close();
    }
    json = await cli('outbox', 'status', '--config', config, '--json');
    const listed = JSON.parse(json.stdout) as Array<{ sink: string; pending: number; configured: boolean }>;
    expect(listed.map((s) => [s.sink, s.pending, s.configured])).toEqual([
      ['hook', 0, true],
      ['file', 2, true],
      ['spare', 0, true],
      ['old', 1, false],
    ]);
    // Without --config: the store's queues only, as before.
    const bare = await cli('outbox', 'status', '--state-dir', stateDir, '--json');
    expect((JSON.parse(bare.stdout) as Array<{ sink: string }>).map((s) => s.sink).sort()).toEqual([
      'file',
      'old',
    ]);
  });
});

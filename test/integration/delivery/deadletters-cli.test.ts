/**
 * The store commands as an operator runs them (issue 15, items 6, 7 and 13), real CLI child processes:
 * --config from an admin shell where the service's secret variables are not set, unknown --id / --sink,
 * a replay that would push a sink over its caps, the list header row and pluralised counts.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const MAIN = join(import.meta.dirname, '../../../src/cli/main.ts');
const SECRET_VARS = ['SEF_TEST_HUB_CONNECTION', 'SEF_TEST_HOOK_URL'];

/** Runs the CLI without the service's secret variables (an admin shell where secrets.env is not loaded). */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  for (const name of SECRET_VARS) delete env[name];
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let tmp: { dir: string; cleanup: () => void };
let store: Store | undefined;
let config: string;
beforeEach(() => {
  tmp = makeTempDir('sef-dl-cli-');
  config = join(tmp.dir, 'forwarder.yaml');
  writeFileSync(
    config,
    [
      `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
      'sinks:',
      '  - name: hub',
      '    type: eventhubs',
      '    connectionString: { env: SEF_TEST_HUB_CONNECTION }',
      '    delivery: { caps: { maxPendingRows: 10 } }',
      '  - name: hook',
      '    type: webhook',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} secret syntax
      '    url: "${SEF_TEST_HOOK_URL}"',
      '',
    ].join('\n'),
  );
  store = openStore({ stateDir: join(tmp.dir, 'state'), logger: silentLogger() });
});
afterEach(() => {
  store?.close();
  tmp.cleanup();
});

/** Commits records from..to for `sink` and dead-letters the first `dead` of them. */
function seed(sink: string, from: number, to: number, dead: number): void {
  const s = store as Store;
  const records = [];
  for (let n = from; n <= to; n++) records.push({ record: makeRecord(n), sinks: [sink] });
  s.commit({}, records);
  const seqs = s.pending(sink, dead).map((r) => r.seq);
  s.deadLetter(sink, seqs, { reason: 'permanent', error: 'http-400: rejected' });
}

describe('store commands with --config and unset secret variables', () => {
  it('outbox status, deadletters list and replay read the state directory without resolving secrets', async () => {
    seed('hub', 1, 3, 1);
    const status = await cli('outbox', 'status', '--config', config);
    expect(status.stderr).toBe('');
    expect(status).toMatchObject({ code: 0 });
    // Every configured sink is listed: hook has nothing pending (issue 31 item 6).
    expect(status.stdout).toMatch(
      /^hub: 2 pending \(\d+ bytes\), oldest \d+s old, next attempt now, 1 dead letter\nhook: 0 pending \(0 bytes\), 0 dead letters\n$/,
    );

    const list = await cli('deadletters', 'list', '--config', config);
    expect(list.code).toBe(0);
    const [header, ...lines] = list.stdout.trimEnd().split('\n');
    expect(header).toBe('ID\tSINK\tRECORD ID\tTRANSITION\tREASON\tDEAD-LETTERED AT\tERROR');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\d+\thub\trec-1\tscheduled\tpermanent\t\S+\thttp-400: rejected$/);

    const replay = await cli('deadletters', 'replay', '--config', config, '--sink', 'hub');
    expect(replay).toMatchObject({ code: 0, stdout: 'replayed 1 dead letter\n' });
    expect(store?.pending('hub', 10).map((r) => r.recordId)).toEqual(['rec-2', 'rec-3', 'rec-1']);
  });

  it('a config file that run would refuse for a bad stateDir is still reported as a config error (exit 2)', async () => {
    writeFileSync(config, 'stateDir: 42\nsinks:\n  - { type: stdout }\n');
    const status = await cli('outbox', 'status', '--config', config);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('stateDir: expected a directory path');
    expect(status.stderr).toContain('sinks[0].name: required');
  });
});

describe('deadletters replay: unknown ids and sinks', () => {
  it('says which id or sink does not exist (exit 2) instead of "nothing to replay"', async () => {
    seed('hub', 1, 2, 1);
    const [row] = (store as Store).listDeadLetters();
    const noId = await cli('deadletters', 'replay', '--config', config, '--id', '99');
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain('--id: no dead letter with id 99');
    const noSink = await cli('deadletters', 'replay', '--config', config, '--sink', 'nosuch');
    expect(noSink.code).toBe(2);
    expect(noSink.stderr).toContain('--sink: no sink named "nosuch"');
    expect(noSink.stderr).toContain('known sinks: hook, hub');
    const listNoSink = await cli(
      'deadletters',
      'list',
      '--state-dir',
      join(tmp.dir, 'state'),
      '--sink',
      'nosuch',
    );
    expect(listNoSink.code).toBe(2);
    expect(listNoSink.stderr).toContain('known sinks: hub');
    const mismatch = await cli(
      'deadletters',
      'replay',
      '--config',
      config,
      '--sink',
      'hook',
      '--id',
      String(row?.id),
    );
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toContain(`dead letter ${row?.id} belongs to sink "hub", not "hook"`);

    // A configured sink without dead letters is not an error.
    expect(await cli('deadletters', 'replay', '--config', config, '--sink', 'hook')).toMatchObject({
      code: 0,
      stdout: 'nothing to replay: sink hook has no dead letters\n',
    });
    expect((store as Store).listDeadLetters()).toHaveLength(1);
  });
});

describe('deadletters replay into a sink over its caps', () => {
  it('refuses with the cap to raise and how many fit, and --limit replays only those', async () => {
    seed('hub', 1, 13, 5); // 8 pending, 5 dead letters, cap 10 rows
    const refused = await cli('deadletters', 'replay', '--config', config);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('refusing to replay');
    expect(refused.stderr).toContain('sink "hub": 8 records pending');
    expect(refused.stderr).toContain('5 dead letters');
    expect(refused.stderr).toContain('maxPendingRows to at least 13 (now 10)');
    expect(refused.stderr).toContain(`in ${config}`);
    expect(refused.stderr).toContain('--sink hub --limit 2');
    expect((store as Store).listDeadLetters()).toHaveLength(5);

    const some = await cli('deadletters', 'replay', '--config', config, '--sink', 'hub', '--limit', '2');
    expect(some).toMatchObject({ code: 0, stdout: 'replayed 2 dead letters\n' });
    expect((store as Store).listDeadLetters().map((d) => d.recordId)).toEqual(['rec-3', 'rec-4', 'rec-5']);
    expect((store as Store).pending('hub', 100)).toHaveLength(10);

    // The queue is at its cap: nothing fits until it drains.
    const full = await cli('deadletters', 'replay', '--config', config, '--id', '3');
    expect(full.code).toBe(1);
    expect(full.stderr).toContain('or wait until the queue drains');
  });
});

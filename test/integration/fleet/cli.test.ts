/** `fleet report` and `fleet run` usage errors, as a real child process. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FleetStore } from '../../../src/fleet/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { freezeLifecycle, record } from '../../unit/fleet/records.ts';

const MAIN = join(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'main.ts');
const tmp = makeTempDir('sef-fleet-cli-');
afterAll(() => tmp.cleanup());

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [MAIN, 'fleet', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const database = join(tmp.dir, 'fleet.db');
const store = new FleetStore({ path: database });
let seq = 0;
store.ingest(
  [
    ...freezeLifecycle('web_1', 'E1'),
    record('scheduled', {
      vm: 'web_2',
      eventId: 'E2',
      eventType: 'Reboot',
      at: 7200,
      firstSeenAt: 7200,
      notBeforeAt: 8100,
    }),
  ].map((body) => ({ body, partitionId: '0', sequenceNumber: seq++, enqueuedAt: new Date(0) })),
);
store.close();

describe('fleet report', () => {
  it('prints a text summary for a time window', () => {
    const r = cli([
      'report',
      '--database',
      database,
      '--since',
      '2025-01-01T00:00:00Z',
      '--until',
      '2025-01-01T01:00:00Z',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('1 events on 1 VMs from 3 records');
    expect(r.stdout).toMatch(/Notice lead time .*median 900/);
    expect(r.stdout).toContain('Pending now: 0');
  });

  it('prints JSON with --json', () => {
    const r = cli(['report', '--database', database, '--json']);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ events: 2, byType: { Freeze: 1, Reboot: 1 }, approvals: { lapsed: 1 } });
    expect(summary.pending.map((e: { eventId: string }) => e.eventId)).toEqual(['E2']);
  });

  it.each([
    [['report', '--database', join(tmp.dir, 'nope.db')], /fleet database .*nope\.db does not exist/],
    [
      ['report', '--database', database, '--since', 'yesterday'],
      /--since: expected an ISO 8601 time or a duration/,
    ],
  ])('%j → exit 2 with a clear message', (args, message) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});

describe('fleet run: configuration errors exit 2 and never print secrets', () => {
  it('names the missing checkpoint store and the unset variable', () => {
    const r = cli(['run', '--connection-string-env', 'SEF_TEST_UNSET_EH'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/eventHubs\.connectionString: environment variable SEF_TEST_UNSET_EH/);
    expect(r.stderr).toMatch(/checkpoints: give exactly one of connectionString or accountUrl/);
  });

  it('rejects a malformed connection string without echoing it', () => {
    const r = cli(
      [
        'run',
        '--connection-string-env',
        'SEF_TEST_EH',
        '--checkpoint-account-url',
        'https://a.blob.core.windows.net',
      ],
      {
        SEF_TEST_EH: 'Endpoint=nonsense;SharedAccessKey=TOPSECRET',
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not a valid Event Hubs connection string/);
    expect(r.stderr).not.toContain('TOPSECRET');
  });
});

/**
 * The `fleet` CLI as real child processes over real stores (a SQLite file; a PostgreSQL database of the run's
 * server, test/support/postgres.ts): `report` (text, --json, every filter, errors), `import` (files, stdin, bad
 * lines, idempotence, against the generator's truth), `dashboard` (read-only, SIGTERM), `migrate` (a history file
 * of the version before schema migrations), and `run` with a password-bearing URL from the environment (the
 * Event Hubs double and Azurite). A URL's password never appears in any output.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { openHistory } from '../../../src/fleet/history/index.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { broadcastReboot, record } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { startAzurite } from './helpers.ts';

const tmp = makeTempDir('sef-fleet-cli-');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(() => tmp.cleanup());

let fileNo = 0;
const tmpFile = (name: string) => join(tmp.dir, `${fileNo++}-${name}`);

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...env, HTTP_PROXY: '', HTTPS_PROXY: '' };
}

/** Runs `node src/cli/main.ts ...args` to its end; `stdin` is written to its standard input. */
async function cli(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: REPO,
    env: childEnv(options.env ?? {}),
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

/** A long-running CLI command (`fleet dashboard`, `fleet run`) whose first stdout line is its JSON status. */
function spawnService(args: string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, [MAIN, ...args], {
    cwd: REPO,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const exited = once(child, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      stdout += `${line}\n`;
      if (stdout === `${line}\n`) resolve(JSON.parse(line) as Record<string, unknown>);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`${args.join(' ')} exited (${code}, ${signal}) before ready: ${stderr.slice(-2000)}`)),
    );
  });
  ready.catch(() => undefined);
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, ready, exited, stdout: () => stdout, stderr: () => stderr };
}

/** A fresh PostgreSQL database of the run's server (dropped after the test); its URL carries the password. */
async function postgresDatabase(): Promise<{ url: string; password: string; description: string }> {
  const db = await createTestDatabase(inject('pgAdminUrl'));
  cleanups.push(() => db.drop());
  const url = new URL(db.url);
  const password = decodeURIComponent(url.password);
  expect(password.length).toBeGreaterThan(8);
  const description = `postgres://${url.username}@${url.host}${url.pathname}`;
  return { url: db.url, password, description };
}

/** Output must never contain the password (raw or URL-encoded). */
function expectNoSecret(result: { stdout: string; stderr: string }, password: string): void {
  for (const text of [result.stdout, result.stderr]) {
    expect(text).not.toContain(password);
    expect(text).not.toContain(encodeURIComponent(password));
  }
}

const jsonLines = (records: readonly unknown[]) => records.map((r) => `${JSON.stringify(r)}\n`).join('');

/**
 * A small fleet (2025-01-01):
 * - R1: a broadcast Reboot in the availability set web_1..web_5 (westeurope, no zone, no scale set) affecting
 *   web_1 and web_2, which started; all five report it (web_3..web_5 as observers). First seen at 00:00:10.
 * - E1: a Freeze on app_1 (northeurope, zone 2, scale set ss-app), completed. First seen at 00:00:00.
 * - E2: a Reboot on app_2 (northeurope, zone 3, ss-app), scheduled. First seen at 02:00:00.
 * - P1: a Preempt of spot_1 (eastus2, zone 1, ss-spot) that started: the VM is deleted. First seen at 01:00:00.
 */
function smallFleet(): LifecycleRecord[] {
  const out: LifecycleRecord[] = broadcastReboot({ zone: '' });
  const app1 = { vm: 'app_1', eventId: 'E1', location: 'northeurope', zone: '2', scaleSet: 'ss-app' };
  out.push(
    record('scheduled', { ...app1, at: 0 }),
    record('started', { ...app1, at: 950, startedAt: 950 }),
    record('completed', { ...app1, at: 960, startedAt: 950 }),
  );
  out.push(
    record('scheduled', {
      vm: 'app_2',
      eventId: 'E2',
      eventType: 'Reboot',
      location: 'northeurope',
      zone: '3',
      scaleSet: 'ss-app',
      at: 7200,
      firstSeenAt: 7200,
      notBeforeAt: 8100,
    }),
  );
  const spot = {
    vm: 'spot_1',
    eventId: 'P1',
    eventType: 'Preempt',
    location: 'eastus2',
    zone: '1',
    scaleSet: 'ss-spot',
    firstSeenAt: 3600,
    notBeforeAt: 3630,
  };
  out.push(
    record('scheduled', { ...spot, at: 3600 }),
    record('started', { ...spot, at: 3640, startedAt: 3640 }),
  );
  return out;
}
const SMALL_RECORDS = smallFleet().length; // 15

interface Summary {
  events: number;
  vms: number;
  affectedVmEvents: number;
  reportingVms: number;
  records: number;
  retention: string | null;
  byStatus: Record<string, number>;
  byType: Record<string, number>;
  ingest: { received: number; accepted: number; duplicates: number; rejected: number };
  pending: Array<{ eventId: string; affectedVms: number; affectedNames: string[]; reportingVms: number }>;
  pendingTotal: number;
  generatedAt: string;
  [key: string]: unknown;
}

describe.each(['sqlite', 'postgres'] as const)('fleet report on %s', (kind) => {
  let database: string;
  let password = '';
  let description: string;
  const dropLater: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    if (kind === 'sqlite') {
      database = tmpFile('small.db');
      description = database;
    } else {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      dropLater.push(() => db.drop());
      database = db.url;
      password = decodeURIComponent(new URL(db.url).password);
      const u = new URL(db.url);
      description = `postgres://${u.username}@${u.host}${u.pathname}`;
    }
    const file = tmpFile('small.jsonl');
    writeFileSync(file, jsonLines(smallFleet()));
    const r = await cli(['fleet', 'import', file, '--database', database]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      files: 1,
      lines: SMALL_RECORDS,
      accepted: SMALL_RECORDS,
      duplicates: 0,
      rejected: 0,
      heartbeats: 0,
    });
  });
  afterAll(async () => {
    for (const d of dropLater) await d();
  });

  async function reportJson(...args: string[]): Promise<Summary> {
    const r = await cli(['fleet', 'report', '--database', database, '--json', ...args]);
    if (kind === 'postgres') expectNoSecret(r, password);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Summary;
  }

  it('counts a broadcast event once, with the VMs it affects (text and --json)', async () => {
    const text = await cli(['fleet', 'report', '--database', database]);
    if (kind === 'postgres') expectNoSecret(text, password);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('Fleet maintenance report, first seen the beginning .. now');
    expect(text.stdout).toContain('Window kept: the history keeps everything (no retention set)');
    expect(text.stdout).toContain(
      `4 maintenance events (each counted once) affecting 5 reporting VMs (5 VM-events); 8 VMs report; ${SMALL_RECORDS} records (ingested ${SMALL_RECORDS}, duplicates ignored 0, rejected 0)`,
    );
    expect(text.stdout).toMatch(/By type:\n {2}Freeze {2,}1\n {2}Preempt {2,}1\n {2}Reboot {2,}2\n/);
    expect(text.stdout).toMatch(/Pending now: 2\n {2}R1 {2}Reboot {2}started .*affects 2 VMs: web_1 web_2\n/);

    const json = await reportJson();
    expect(json).toMatchObject({
      events: 4,
      vms: 5,
      affectedVmEvents: 5,
      reportingVms: 8,
      records: SMALL_RECORDS,
      retention: null,
      byType: { Freeze: 1, Preempt: 1, Reboot: 2 },
      ingest: { received: SMALL_RECORDS, accepted: SMALL_RECORDS, duplicates: 0, rejected: 0 },
      pendingTotal: 2,
    });
    const r1 = json.pending.find((e) => e.eventId === 'R1');
    expect(r1).toMatchObject({ affectedVms: 2, affectedNames: ['web_1', 'web_2'], reportingVms: 5 });
    expect(json.pending.map((e) => e.eventId).sort()).toEqual(['E2', 'R1']);
  });

  it.each([
    // [options, events, affected VMs, VM-events]
    [['--type', 'Reboot'], 2, 3, 3],
    [['--type', 'Freeze'], 1, 1, 1],
    [['--location', 'westeurope'], 1, 2, 2],
    [['--location', 'northeurope'], 2, 2, 2],
    [['--zone', '3'], 1, 1, 1],
    [['--zone', '(none)'], 1, 2, 2],
    [['--scale-set', 'ss-app'], 2, 2, 2],
    [['--scale-set', '(none)'], 1, 2, 2],
    [['--status', 'completed'], 1, 1, 1],
    [['--status', 'scheduled'], 1, 1, 1],
    [['--status', 'vm-deleted'], 1, 1, 1],
    [['--vm', 'web_2'], 1, 2, 2],
    [['--vm', 'web_3'], 0, 0, 0], // an observer of R1, not affected
    [['--vm', 'APP_'], 2, 2, 2],
    [['--since', '2025-01-01T01:00:00Z'], 2, 2, 2],
    [['--until', '2025-01-01T01:00:00Z'], 2, 3, 3],
    [['--since', '2025-01-01T00:00:05Z', '--until', '2025-01-01T01:00:00Z'], 1, 2, 2],
    [['--since', '3650d'], 4, 5, 5],
    [['--since', '1d'], 0, 0, 0],
    [['--until', '1d'], 4, 5, 5],
    [['--until', '3650d'], 0, 0, 0],
    [['--type', 'Reboot', '--location', 'northeurope'], 1, 1, 1],
  ])('%j → %d events affecting %d VMs', async (args, events, vms, vmEvents) => {
    const json = await reportJson(...args);
    expect({ events: json.events, vms: json.vms, affectedVmEvents: json.affectedVmEvents }).toEqual({
      events,
      vms,
      affectedVmEvents: vmEvents,
    });
    // All-time facts stay whatever the filter.
    expect(json.reportingVms).toBe(8);
  });

  it('names the filters in the text report', async () => {
    const r = await cli([
      'fleet',
      'report',
      '--database',
      database,
      '--location',
      'westeurope',
      '--since',
      '2025-01-01T00:00:00Z',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('first seen 2025-01-01T00:00:00.000Z .. now');
    expect(r.stdout).toContain('Filters: location=westeurope');
    expect(r.stdout).toContain(
      '1 maintenance events (each counted once) affecting 2 reporting VMs (2 VM-events); 8 VMs report',
    );
  });

  it('a bad --since is exit 2 with a clear message', async () => {
    const r = await cli(['fleet', 'report', '--database', database, '--since', 'yesterday']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--since: expected an ISO 8601 time or a duration before now .*got yesterday/);
    expect(r.stdout).toBe('');
    if (kind === 'postgres') expectNoSecret(r, password);
  });

  if (kind === 'sqlite') {
    it('a missing database file is exit 2 naming the file (and is not created)', async () => {
      const missing = join(tmp.dir, 'nope', 'missing.db');
      const r = await cli(['fleet', 'report', '--database', missing]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`fleet database ${missing} does not exist`);
      expect(existsSync(missing)).toBe(false);
    });

    it('the "Window kept" line shows the retention the consumers prune to', async () => {
      const file = tmpFile('retention.db');
      const history = await openHistory({ database: file });
      await history.setRetention('90d');
      await history.close();
      const r = await cli(['fleet', 'report', '--database', file]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Window kept: the history keeps 90d\n');
      const imported = await cli(['fleet', 'import', '-', '--database', file], {
        stdin: jsonLines(smallFleet()),
      });
      expect(imported.code).toBe(0);
      const again = await cli(['fleet', 'report', '--database', file]);
      expect(again.stdout).toContain(
        'Window kept: the history keeps 90d, oldest event first seen 2025-01-01T00:00:00.000Z\n',
      );
    });
  } else {
    it('describes the URL without its password; a wrong password fails clearly without echoing it', async () => {
      const wrong = new URL(database);
      const wrongPassword = 'Wr0ng-pa55word-xyzzy';
      wrong.password = wrongPassword;
      for (const args of [
        ['fleet', 'report', '--database', wrong.toString()],
        ['fleet', 'report', '--database', wrong.toString(), '--json'],
        ['fleet', 'import', '-', '--database', wrong.toString()],
      ]) {
        const r = await cli(args, { stdin: args.includes('-') ? '' : undefined });
        expect(r.code).not.toBe(0);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(
          /authentication failed at PostgreSQL at 127\.0\.0\.1:\d+\/t_\w+ as user "postgres"/,
        );
        expectNoSecret(r, wrongPassword);
        expectNoSecret(r, password);
      }
      // The server's own password is not echoed either when the store cannot be read for another reason.
      const noDb = new URL(database);
      noDb.pathname = '/no_such_database';
      const r = await cli(['fleet', 'report', '--database', noDb.toString()]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/database does not exist/);
      expectNoSecret(r, password);
      expect(description).not.toContain(password);
    });
  }
});

describe('fleet import', () => {
  let fleetFile: string;
  /** Lines of the file: records and heartbeats (simulate fleet's default: the last 3 days, hourly). */
  let lines: number;
  let records: number;
  let truth: { maintenanceEvents: number; records: number; heartbeats: number; affectedVmEvents: number };

  beforeAll(async () => {
    fleetFile = tmpFile('fleet.jsonl');
    const r = await cli(['simulate', 'fleet', '--vms', '30', '--days', '20', '--out', fleetFile]);
    expect(r.code).toBe(0);
    truth = JSON.parse(r.stderr.trim().split('\n').at(-1)!);
    lines = readFileSync(fleetFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '').length;
    records = truth.records;
    expect(truth.records + truth.heartbeats).toBe(lines);
    expect(truth.heartbeats).toBeGreaterThan(30 * 3 * 20);
    expect(truth.maintenanceEvents).toBeGreaterThan(10);
  });

  async function importInto(database: string, password = '') {
    const first = await cli(['fleet', 'import', fleetFile, '--database', database]);
    expectNoSecret(first, password || '\u0000none');
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toEqual({
      files: 1,
      lines,
      accepted: records,
      duplicates: 0,
      rejected: 0,
      heartbeats: truth.heartbeats,
    });
    // Again: every record a duplicate; heartbeats change nothing (each VM keeps its latest).
    const again = await cli(['fleet', 'import', fleetFile, '--database', database]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      files: 1,
      lines,
      accepted: 0,
      duplicates: records,
      rejected: 0,
      heartbeats: truth.heartbeats,
    });
    const report = await cli(['fleet', 'report', '--database', database, '--json']);
    expect(report.code).toBe(0);
    const summary = JSON.parse(report.stdout) as Summary;
    expect(summary).toMatchObject({
      events: truth.maintenanceEvents,
      affectedVmEvents: truth.affectedVmEvents,
      records,
      ingest: { accepted: records, duplicates: records, rejected: 0 },
    });
    const coverage = await cli(['fleet', 'report', '--coverage', '--database', database, '--json']);
    expect(coverage.code).toBe(0);
    // Everything but the time it was asked (and so how far behind the import's "partition" is).
    const {
      generatedAt: _g,
      partitions,
      ...covered
    } = JSON.parse(coverage.stdout) as {
      generatedAt: string;
      partitions: Array<{ lagSeconds: number }>;
    };
    return {
      ...summary,
      coverage: { ...covered, partitions: partitions.map(({ lagSeconds: _l, ...p }) => p) },
    };
  }

  it('imports a generated fleet into SQLite and into PostgreSQL: the same history, the generator’s truth', async () => {
    const sqlite = await importInto(tmpFile('import.db'));
    const pg = await postgresDatabase();
    const postgres = await importInto(pg.url, pg.password);
    const { generatedAt: _a, ...fromSqlite } = sqlite;
    const { generatedAt: _b, ...fromPostgres } = postgres;
    expect(fromPostgres).toEqual(fromSqlite);
  });

  it('- reads standard input', async () => {
    const database = tmpFile('stdin.db');
    const r = await cli(['fleet', 'import', '-', '--database', database], {
      stdin: readFileSync(fleetFile, 'utf8'),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      files: 1,
      lines,
      accepted: records,
      duplicates: 0,
      rejected: 0,
      heartbeats: truth.heartbeats,
    });
    const report = JSON.parse((await cli(['fleet', 'report', '--database', database, '--json'])).stdout);
    expect(report.events).toBe(truth.maintenanceEvents);
    // The generated fleet's forwarders: some silent, some unhealthy (simulate fleet's story), by text too.
    const text = await cli(['fleet', 'report', '--coverage', '--database', database]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Fleet coverage \(generated /);
    expect(text.stdout).toMatch(/^Silent now: \d+$/m);
    expect(text.stdout).toMatch(/^Unhealthy now: \d+$/m);
  });

  it('rejects bad lines with their line numbers on stderr and stores the rest', async () => {
    const good = readFileSync(fleetFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    const sample = JSON.parse(good[0]!);
    const bad = new Map<number, string>([
      [3, 'not json at all'],
      [40, JSON.stringify({ ...sample, id: 'bad-1', specversion: '0.3' })],
      [
        100,
        JSON.stringify({
          ...sample,
          id: 'bad-2',
          data: { ...sample.data, vm: { ...sample.data.vm, name: { x: 1 } } },
        }),
      ],
    ]);
    const out: string[] = [];
    for (const line of good) {
      while (bad.has(out.length + 1)) out.push(bad.get(out.length + 1)!);
      out.push(line);
    }
    const file = tmpFile('with-bad-lines.jsonl');
    writeFileSync(file, `${out.join('\n')}\n`);
    const database = tmpFile('bad.db');
    const r = await cli(['fleet', 'import', file, '--database', database]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      files: 1,
      lines: lines + 3,
      accepted: records,
      duplicates: 0,
      rejected: 3,
      heartbeats: truth.heartbeats,
    });
    const name = file.split('/').at(-1);
    const reported = r.stderr.trim().split('\n');
    expect(reported).toHaveLength(3);
    expect(reported[0]).toMatch(new RegExp(`^${name}:3: rejected: .+`));
    expect(reported[1]).toMatch(new RegExp(`^${name}:40: rejected: .*specversion`));
    expect(reported[2]).toMatch(new RegExp(`^${name}:100: rejected: .*data\\.vm\\.name`));
    const again = await cli(['fleet', 'import', file, '--database', database]);
    expect(JSON.parse(again.stdout)).toMatchObject({ accepted: 0, duplicates: records });
    const summary = JSON.parse((await cli(['fleet', 'report', '--database', database, '--json'])).stdout);
    expect(summary).toMatchObject({ events: truth.maintenanceEvents, records });
  });

  it('applies a retention given in --config (or --retention): recorded for the report, older events pruned', async () => {
    // The generated window ends now (simulate fleet's default), so 400d keeps everything and 10d keeps part.
    const database = tmpFile('retention.db');
    const config = tmpFile('fleet.yaml');
    writeFileSync(config, `database: ${JSON.stringify(database)}\nretention: 400d\n`);
    const kept = await cli(['fleet', 'import', fleetFile, '--config', config]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout)).toEqual({
      files: 1,
      lines,
      accepted: records,
      duplicates: 0,
      rejected: 0,
      heartbeats: truth.heartbeats,
      retention: '400d',
      pruned: { events: 0, observations: 0, records: 0, rejected: 0, vms: 0, heartbeats: 0, coverageDays: 0 },
    });
    const report = await cli(['fleet', 'report', '--config', config]);
    expect(report.stdout).toMatch(/^Window kept: the history keeps 400d, oldest event first seen \d{4}-/m);
    expect(report.stdout).not.toContain('keeps everything');

    const shorter = await cli(['fleet', 'import', fleetFile, '--config', config, '--retention', '10d']);
    expect(shorter.code, shorter.stderr).toBe(0);
    const { retention, pruned } = JSON.parse(shorter.stdout) as {
      retention: string;
      pruned: { events: number };
    };
    expect(retention).toBe('10d');
    expect(pruned.events).toBeGreaterThan(0);
    const after = JSON.parse((await cli(['fleet', 'report', '--config', config, '--json'])).stdout) as {
      events: number;
      retention: string;
      oldestEventAt: string;
    };
    expect(after).toMatchObject({ retention: '10d', events: truth.maintenanceEvents - pruned.events });

    // Without a retention, an import leaves the history's settings alone (a backfill of old records keeps them).
    const plain = await cli(['fleet', 'import', '-', '--database', tmpFile('no-retention.db')], {
      stdin: jsonLines(smallFleet()),
    });
    expect(Object.keys(JSON.parse(plain.stdout))).toEqual([
      'files',
      'lines',
      'accepted',
      'duplicates',
      'rejected',
      'heartbeats',
    ]);
  });

  it('creates a new SQLite history readable by its owner only; an existing file keeps its mode', async () => {
    const database = tmpFile('private.db');
    const r = await cli(['fleet', 'import', '-', '--database', database], { stdin: jsonLines(smallFleet()) });
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(database).mode & 0o777).toBe(0o600);
    for (const suffix of ['-wal', '-shm']) {
      if (existsSync(`${database}${suffix}`))
        expect(statSync(`${database}${suffix}`).mode & 0o777).toBe(0o600);
    }
    chmodSync(database, 0o640); // the operator shares it with a group
    const again = await cli(['fleet', 'import', '-', '--database', database], {
      stdin: jsonLines(smallFleet()),
    });
    expect(again.code, again.stderr).toBe(0);
    expect(statSync(database).mode & 0o777).toBe(0o640);
  });

  it('a missing input file is an error naming it', async () => {
    const missing = join(tmp.dir, 'no-such.jsonl');
    const r = await cli(['fleet', 'import', missing, '--database', tmpFile('x.db')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${missing} does not exist`);
  });
});

describe('fleet --help', () => {
  it('fleet --help and fleet run --help name both stores, SQLite and PostgreSQL', async () => {
    for (const args of [
      ['fleet', '--help'],
      ['fleet', 'run', '--help'],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toMatch(/SQLite/);
      expect(r.stdout, args.join(' ')).toMatch(/PostgreSQL/);
    }
  });
});

describe('fleet dashboard', () => {
  const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

  async function importSmall(database: string): Promise<void> {
    const r = await cli(['fleet', 'import', '-', '--database', database], { stdin: jsonLines(smallFleet()) });
    expect(r.code).toBe(0);
  }

  it('serves an existing SQLite history read-only and stops on SIGTERM with exit 0', async () => {
    const database = tmpFile('dash.db');
    await importSmall(database);
    const before = sha(database);
    const dashboard = spawnService(['fleet', 'dashboard', '--database', database, '--port', '0']);
    const line = await dashboard.ready;
    expect(line).toEqual({
      dashboard: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/),
      database,
      consuming: false,
    });
    const base = String(line.dashboard).replace(/\/$/, '');
    const summary = (await (await fetch(`${base}/api/summary`)).json()) as Summary;
    expect(summary).toMatchObject({ events: 4, vms: 5, affectedVmEvents: 5, reportingVms: 8 });
    const filtered = (await (await fetch(`${base}/api/summary?location=westeurope`)).json()) as Summary;
    expect(filtered).toMatchObject({ events: 1, vms: 2 });
    const status = (await (await fetch(`${base}/api/status`)).json()) as { mode: string };
    expect(status.mode).toMatch(/not consuming/);
    dashboard.child.kill('SIGTERM');
    expect(await dashboard.exited).toEqual({ code: 0, signal: null });
    expect(sha(database)).toBe(before);
  });

  it('does not create or migrate: a missing file and a file without the schema are exit 2, left as they were', async () => {
    const missing = join(tmp.dir, 'dash-missing', 'fleet.db');
    const r = await cli(['fleet', 'dashboard', '--database', missing, '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`fleet database ${missing} does not exist`);
    expect(existsSync(missing)).toBe(false);

    const blank = tmpFile('blank.db');
    const db = new DatabaseSync(blank);
    db.exec('CREATE TABLE unrelated (x INTEGER)');
    db.close();
    const before = sha(blank);
    const outdated = await cli(['fleet', 'dashboard', '--database', blank, '--port', '0']);
    expect(outdated.code).toBe(2);
    expect(outdated.stderr).toMatch(/schema version 0, older than this build's/);
    expect(sha(blank)).toBe(before);
    const check = new DatabaseSync(blank, { readOnly: true });
    const tables = check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    check.close();
    expect(tables.map((t) => t.name)).toEqual(['unrelated']);
  });

  it('on PostgreSQL prints the database URL without its password', async () => {
    const pg = await postgresDatabase();
    await importSmall(pg.url);
    const dashboard = spawnService(['fleet', 'dashboard', '--database', pg.url, '--port', '0']);
    const line = await dashboard.ready;
    expect(line).toMatchObject({ database: pg.description, consuming: false });
    const base = String(line.dashboard).replace(/\/$/, '');
    const summary = (await (await fetch(`${base}/api/summary`)).json()) as Summary;
    expect(summary).toMatchObject({ events: 4, vms: 5 });
    dashboard.child.kill('SIGTERM');
    expect((await dashboard.exited).code).toBe(0);
    expectNoSecret({ stdout: dashboard.stdout(), stderr: dashboard.stderr() }, pg.password);
  });
});

/** The SQLite schema of the version before schema migrations (HEAD~1:src/fleet/store.ts). */
const LEGACY_SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  source TEXT NOT NULL,
  id TEXT NOT NULL,
  transition TEXT NOT NULL,
  event_id TEXT NOT NULL,
  occurrence INTEGER NOT NULL,
  time TEXT NOT NULL,
  vm_name TEXT NOT NULL,
  vm_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  partition_id TEXT NOT NULL,
  sequence_number INTEGER NOT NULL,
  enqueued_at TEXT NOT NULL,
  ingested_at TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (source, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_by_event ON records (source, event_id, occurrence);
CREATE INDEX IF NOT EXISTS records_by_time ON records (time);
CREATE TABLE IF NOT EXISTS events (
  source TEXT NOT NULL,
  event_id TEXT NOT NULL,
  occurrence INTEGER NOT NULL,
  vm_name TEXT NOT NULL,
  vm_id TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  location TEXT NOT NULL,
  zone TEXT NOT NULL,
  scale_set TEXT NOT NULL,
  event_type TEXT NOT NULL,
  affects_vm INTEGER NOT NULL,
  resources TEXT NOT NULL,
  description TEXT NOT NULL,
  event_source TEXT NOT NULL,
  status TEXT NOT NULL,
  first_seen_status TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  not_before TEXT,
  notice_seconds INTEGER,
  advertised_seconds INTEGER,
  started_at TEXT,
  ended_at TEXT,
  inferred INTEGER,
  reason TEXT,
  host_rebooted INTEGER,
  downtime_seconds REAL,
  longest_stall_ms REAL,
  observed_seconds REAL,
  approval TEXT,
  approved_at TEXT,
  approval_rule TEXT,
  updates INTEGER NOT NULL,
  missing TEXT NOT NULL,
  vm_deleted INTEGER NOT NULL,
  records INTEGER NOT NULL,
  last_record_at TEXT NOT NULL,
  PRIMARY KEY (source, event_id, occurrence)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_first_seen ON events (first_seen_at);
CREATE INDEX IF NOT EXISTS events_by_status ON events (status);
CREATE TABLE IF NOT EXISTS rejected (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  partition_id TEXT NOT NULL,
  sequence_number INTEGER NOT NULL,
  enqueued_at TEXT NOT NULL,
  received_at TEXT NOT NULL,
  reason TEXT NOT NULL,
  body TEXT NOT NULL,
  UNIQUE (partition_id, sequence_number)
);
CREATE TABLE IF NOT EXISTS ingest_stats (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
`;

const LEGACY_BAD_BODY = '{"specversion":"1.0","truncated';

/** A pre-migration history file holding `records` (partition 0, in order) and one rejected body. */
function writeLegacyHistory(file: string, records: readonly LifecycleRecord[]): void {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode=WAL');
  db.exec(LEGACY_SCHEMA);
  const insert = db.prepare(
    `INSERT INTO records (source, id, transition, event_id, occurrence, time, vm_name, vm_id, event_type,
       partition_id, sequence_number, enqueued_at, ingested_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const event = db.prepare(
    `INSERT OR REPLACE INTO events (source, event_id, occurrence, vm_name, vm_id, resource_id, location, zone,
       scale_set, event_type, affects_vm, resources, description, event_source, status, first_seen_status,
       first_seen_at, updates, missing, vm_deleted, records, last_record_at)
     VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'maintenance', 'Platform', ?, 'Scheduled', ?, 0, '[]', 0, 1, ?)`,
  );
  records.forEach((r, i) => {
    insert.run(
      r.source,
      r.id,
      r.transition,
      r.subject,
      1,
      r.time,
      r.data.vm.name ?? '',
      r.vmid ?? '',
      r.data.EventType,
      '0',
      i,
      '2025-01-02T00:00:00.000Z',
      '2025-01-02T00:00:01.000Z',
      JSON.stringify(r),
    );
    const vm = r.data.vm;
    event.run(
      r.source,
      r.subject,
      vm.name ?? '',
      vm.vmId ?? '',
      vm.resourceId ?? '',
      vm.location ?? '',
      vm.zone ?? '',
      vm.vmScaleSetName ?? '',
      r.data.EventType,
      r.data.affectsThisVm === false ? 0 : 1,
      JSON.stringify(r.data.Resources),
      r.transition,
      r.data.timing.firstSeenAt,
      r.time,
    );
  });
  db.prepare(
    `INSERT INTO rejected (partition_id, sequence_number, enqueued_at, received_at, reason, body)
     VALUES ('0', ?, '2025-01-02T00:00:00.000Z', '2025-01-02T00:00:01.000Z', 'not JSON', ?)`,
  ).run(records.length, LEGACY_BAD_BODY);
  const stats = db.prepare('INSERT INTO ingest_stats (name, value) VALUES (?, ?)');
  stats.run('received', records.length + 1);
  stats.run('accepted', records.length);
  stats.run('rejected', 1);
  db.close();
}

describe('fleet migrate and a pre-migration history file', () => {
  let legacy: string;
  beforeAll(() => {
    legacy = tmpFile('legacy.db');
    writeLegacyHistory(legacy, smallFleet());
  });

  async function reportOf(database: string): Promise<Summary> {
    const r = await cli(['fleet', 'report', '--database', database, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Summary;
  }
  const comparable = ({ generatedAt: _g, ...rest }: Summary) => rest;

  it('copies every record into PostgreSQL: the same history as importing the records; twice changes nothing', async () => {
    const target = await postgresDatabase();
    const first = await cli(['fleet', 'migrate', '--from', legacy, '--to', target.url]);
    expectNoSecret(first, target.password);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      from: legacy,
      to: target.description,
      records: SMALL_RECORDS,
      accepted: SMALL_RECORDS,
      duplicates: 0,
      rejected: 1,
      heartbeats: 0,
    });
    expect(first.stderr).toContain(`copied ${SMALL_RECORDS} records`);
    const migrated = await reportOf(target.url);

    // The same records (and the same bad body) imported directly.
    const direct = await postgresDatabase();
    const imported = await cli(['fleet', 'import', '-', '--database', direct.url], {
      stdin: `${jsonLines(smallFleet())}${LEGACY_BAD_BODY}\n`,
    });
    expect(JSON.parse(imported.stdout)).toMatchObject({ accepted: SMALL_RECORDS, rejected: 1 });
    expect(comparable(migrated)).toEqual(comparable(await reportOf(direct.url)));
    expect(migrated).toMatchObject({ events: 4, vms: 5, affectedVmEvents: 5, records: SMALL_RECORDS });

    const second = await cli(['fleet', 'migrate', '--from', legacy, '--to', target.url]);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      records: SMALL_RECORDS,
      accepted: 0,
      duplicates: SMALL_RECORDS,
    });
    const after = await reportOf(target.url);
    const { ingest: i1, ...rest1 } = comparable(migrated);
    const { ingest: i2, ...rest2 } = comparable(after);
    expect(rest2).toEqual(rest1);
    expect(i2).toMatchObject({ accepted: SMALL_RECORDS, duplicates: SMALL_RECORDS });
  });

  it('copies into a new SQLite file, leaving the old one as it was', async () => {
    const target = tmpFile('migrated.db');
    const r = await cli(['fleet', 'migrate', '--from', legacy, '--to', target]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      to: target,
      records: SMALL_RECORDS,
      accepted: SMALL_RECORDS,
    });
    expect(await reportOf(target)).toMatchObject({ events: 4, vms: 5, affectedVmEvents: 5 });
    const old = new DatabaseSync(legacy, { readOnly: true });
    const tables = old.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    old.close();
    expect(tables.map((t) => t.name)).toEqual([
      'events',
      'ingest_stats',
      'records',
      'rejected',
      'sqlite_sequence',
    ]);
  });

  it('fleet report, import and run on the old file name `fleet migrate`', async () => {
    const report = await cli(['fleet', 'report', '--database', legacy]);
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(
      /written by an earlier version .*`fleet migrate --from OLD\.db --to NEW\.db`/,
    );

    const dashboard = await cli(['fleet', 'dashboard', '--database', legacy, '--port', '0']);
    expect(dashboard.code).toBe(2);
    expect(dashboard.stderr).toMatch(/fleet migrate/);

    const imported = await cli(['fleet', 'import', '-', '--database', legacy], { stdin: '' });
    expect(imported.code).toBe(2);
    expect(imported.stderr).toMatch(/written by an earlier version .*fleet migrate/);

    const run = await cli(
      [
        'fleet',
        'run',
        '--database',
        legacy,
        '--connection-string-env',
        'SEF_TEST_EH',
        '--checkpoint-connection-string-env',
        'SEF_TEST_BLOB',
        '--no-dashboard',
      ],
      {
        env: {
          SEF_TEST_EH:
            'Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5;EntityPath=hub;UseDevelopmentEmulator=true',
          SEF_TEST_BLOB:
            'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;',
        },
      },
    );
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/written by an earlier version .*fleet migrate/);
  });
});

describe('fleet validate', () => {
  // Secrets as `fleet run` reads them: port 1 on loopback, so nothing could be reached even if something tried.
  const env = {
    SEF_TEST_EH:
      'Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5;EntityPath=hub;UseDevelopmentEmulator=true',
    SEF_TEST_BLOB:
      'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;',
  };
  function fleetFile(extra: string): string {
    const file = tmpFile('fleet.yaml');
    writeFileSync(
      file,
      [
        'eventHubs: { connectionString: { env: SEF_TEST_EH }, consumerGroup: fleet }',
        'checkpoints: { connectionString: { env: SEF_TEST_BLOB } }',
        extra,
        '',
      ].join('\n'),
    );
    return file;
  }
  const problemLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('  '));

  it('accepts a valid fleet file and says what it will use', async () => {
    const database = tmpFile('valid.db');
    const file = fleetFile(`database: ${JSON.stringify(database)}\ndashboard: { port: 8481 }`);
    const r = await cli(['fleet', 'validate', file], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `ok: ${file} is a valid fleet configuration; history: SQLite ${database}; consumer group: fleet; dashboard: 127.0.0.1:8481\n`,
    );
    expect(existsSync(database)).toBe(false); // checked, not created
  });

  it.each([
    [
      'a dashboard beyond loopback without a credential',
      () => 'dashboard: { host: 0.0.0.0 }',
      /^ {2}dashboard\.auth: the dashboard listens on 0\.0\.0\.0, which is not a loopback address/,
    ],
    [
      'a history path that is a directory',
      () => `database: ${JSON.stringify(tmp.dir)}`,
      /^ {2}database: .* exists but is not a file$/,
    ],
    [
      'a history file that is not a SQLite database',
      () => {
        const notDb = tmpFile('not-a-db.db');
        writeFileSync(notDb, 'this is text, not SQLite\n'.repeat(100));
        return `database: ${JSON.stringify(notDb)}`;
      },
      /^ {2}database: .* is not a SQLite database/,
    ],
    [
      'a history file written before schema migrations',
      () => {
        const legacy = tmpFile('legacy-validate.db');
        writeLegacyHistory(legacy, smallFleet());
        return `database: ${JSON.stringify(legacy)}\ndashboard: { enabled: false }`;
      },
      /^ {2}database: .*: this fleet database was written by an earlier version .*fleet migrate/,
    ],
  ])(
    'refuses %s, and fleet run refuses it with the same lines before it connects',
    async (_name, extra, problem) => {
      const file = fleetFile(extra());
      const validate = await cli(['fleet', 'validate', file], { env });
      expect(validate.code, validate.stderr).toBe(2);
      expect(validate.stdout).toBe('');
      expect(problemLines(validate.stderr)).toEqual([expect.stringMatching(problem)]);
      const run = await cli(['fleet', 'run', '--config', file], { env });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(problemLines(run.stderr)).toEqual(problemLines(validate.stderr));
      expect(run.stderr).not.toMatch(/ECONNREFUSED|127\.0\.0\.1:1\b/);
    },
  );

  it('names the other command for the other kind of file, both ways', async () => {
    const fleet = fleetFile(`database: ${JSON.stringify(tmpFile('x.db'))}`);
    const asForwarder = await cli(['config', 'validate', fleet], { env });
    expect(asForwarder.code).toBe(2);
    expect(asForwarder.stderr).toContain(
      `hint: ${fleet} looks like a fleet consumer configuration (eventHubs, checkpoints, database): check it with \`scheduled-events-forwarder fleet validate ${fleet}\``,
    );
    const forwarder = join(REPO, 'config', 'forwarder.example.yaml');
    const asFleet = await cli(['fleet', 'validate', forwarder], { env });
    expect(asFleet.code).toBe(2);
    expect(asFleet.stderr).toMatch(
      /hint: .*forwarder\.example\.yaml looks like a forwarder configuration \(.*sinks.*\): check it with `scheduled-events-forwarder config validate /,
    );
    const none = await cli(['fleet', 'validate']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/fleet validate needs a file/);
  });
});

describe('fleet run with database: {env: FLEET_DB}', () => {
  it('prints the PostgreSQL URL without its password, records the retention, stops on SIGTERM', async () => {
    const pg = await postgresDatabase();
    const azurite = await startAzurite(join(tmp.dir, 'azurite'));
    cleanups.push(() => azurite.close());
    const double = await startEventHubsDouble({
      hubs: { lifecycle: 2 },
      consumerGroups: ['$Default', 'fleet'],
    });
    cleanups.push(() => double.close());
    const config = tmpFile('fleet.yaml');
    writeFileSync(
      config,
      [
        'eventHubs:',
        '  connectionString: { env: SEF_FLEET_EH }',
        '  consumerGroup: fleet',
        '  maxWaitTimeMs: 200',
        'checkpoints:',
        '  connectionString: { env: SEF_FLEET_BLOB }',
        'database: { env: FLEET_DB }',
        'retention: 30d',
        'dashboard: { port: 0 }',
        'log: { level: info }',
        '',
      ].join('\n'),
    );
    const env = {
      SEF_FLEET_EH: double.connectionString('lifecycle'),
      SEF_FLEET_BLOB: azurite.connectionString,
      FLEET_DB: pg.url,
    };
    const fleet = spawnService(['fleet', 'run', '--config', config], env);
    const line = await fleet.ready;
    expect(line).toEqual({
      dashboard: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/),
      database: pg.description,
      consumerGroup: 'fleet',
    });
    fleet.child.kill('SIGTERM');
    expect(await fleet.exited).toEqual({ code: 0, signal: null });
    expect(fleet.stderr()).toContain('fleet consumer running');
    // The logs (which pass through the redactor) carry no password either.
    expect(fleet.stderr()).toMatch(/"database":"postgres:\/\/[^"]*127\.0\.0\.1/);
    expectNoSecret({ stdout: fleet.stdout(), stderr: fleet.stderr() }, pg.password);

    // The history config of the same file (no Event Hubs secrets needed) reads what the consumer recorded.
    const report = await cli(['fleet', 'report', '--config', config], { env: { FLEET_DB: pg.url } });
    expect(report.code).toBe(0);
    expect(report.stdout).toContain('Window kept: the history keeps 30d\n');
    expect(report.stdout).toContain('0 maintenance events');
    expectNoSecret(report, pg.password);
  });
});

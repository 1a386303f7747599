/**
 * `run` end to end with real processes against the in-test IMDS simulator: the file sink output format,
 * graceful shutdown, reboot awareness (boot time injected), disk full (in-process, PRAGMA max_page_count),
 * and bad configurations (exit code 2, message naming the key).
 */

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { createLogger } from '../../../src/log.ts';
import { TEST_BOOT_TIME_ENV } from '../../../src/pipeline/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { MAIN, REPO, readFileSinkRecords, spawnCli } from '../../support/child.ts';
import { runArgs, simulatorConfig, startForwarder } from '../../support/forwarder.ts';
import { auditedStream } from '../../support/logs.ts';
import { setPageLimit } from '../../support/store.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-run-');
afterAll(() => tmp.cleanup());
const simulators: RunningSimulator[] = [];
afterEach(async () => {
  await Promise.all(simulators.splice(0).map((s) => s.close()));
});

let counter = 0;
function dir(name: string): string {
  return join(tmp.dir, `${name}-${++counter}`);
}

const transitionsOf = (records: LifecycleRecord[]) => records.map((r) => `${r.subject}:${r.transition}`);

describe('run --sink file:PATH', () => {
  it('writes one valid CloudEvent JSON per line for every transition, and exits 0 on SIGTERM', async () => {
    // timeScale 0: simulated time moves only when the test advances it (10 simulated s per real s).
    const sim = await startSimulator({ scenario: join(REPO, 'config', 'demo.scenario.yaml'), timeScale: 0 });
    simulators.push(sim);
    const out = join(dir('e2e'), 'records.jsonl');
    const fwd = spawnCli(runArgs({ imdsEndpoint: sim.url, stateDir: dir('state'), out }));
    await fwd.ready;
    const ticker = setInterval(() => sim.admin.advance(1000), 100);
    try {
      await waitFor(() => readFileSinkRecords(out).length >= 9, 'nine records in the file', {
        timeoutMs: 40_000,
      });
    } finally {
      clearInterval(ticker);
    }
    fwd.child.kill('SIGTERM');
    expect(await fwd.exited).toEqual({ code: 0, signal: null });

    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    const records = lines.map((l) => JSON.parse(l) as LifecycleRecord);
    for (const record of records) expect(validateRecord(record), record.id).toEqual([]);
    expect(transitionsOf(records).sort()).toEqual(
      [
        '0D3E0000-0001-4000-8000-000000000001:scheduled',
        '0D3E0000-0001-4000-8000-000000000001:started',
        '0D3E0000-0001-4000-8000-000000000001:completed',
        '0D3E0000-0002-4000-8000-000000000002:scheduled',
        '0D3E0000-0002-4000-8000-000000000002:canceled',
        '0D3E0000-0003-4000-8000-000000000003:scheduled',
        '0D3E0000-0003-4000-8000-000000000003:updated',
        '0D3E0000-0003-4000-8000-000000000003:started',
        '0D3E0000-0003-4000-8000-000000000003:completed',
      ].sort(),
    );
    expect(new Set(records.map((r) => r.id)).size).toBe(records.length);
    expect(fwd.stderr()).toContain('"msg":"forwarder stopped"');
  });
});

describe('reboot awareness', () => {
  it('an event that disappears across a host reboot ends Completed (inferred, host-rebooted), not Canceled', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
    const stateDir = dir('reboot-state');
    const out = join(dir('reboot'), 'records.jsonl');
    const args = runArgs({ imdsEndpoint: sim.url, stateDir, out });

    const before = spawnCli(args, { [TEST_BOOT_TIME_ENV]: String(Date.now() - 3_600_000) });
    await before.ready;
    await waitFor(() => readFileSinkRecords(out).length === 1, 'the scheduled record');
    before.child.kill('SIGKILL'); // the host goes down without warning
    await before.exited;

    sim.admin.removeEvent(event.id); // while the VM was down the maintenance happened and ended
    const bootTime = Date.now(); // the host booted after the last observation
    const after = spawnCli(args, { [TEST_BOOT_TIME_ENV]: String(bootTime) });
    await after.ready;
    // At-least-once: the SIGKILL may land between the file write and its acknowledgement, so the scheduled record
    // can arrive twice (with the same id). Compare distinct records.
    const distinct = () => [...new Map(readFileSinkRecords(out).map((r) => [r.id, r])).values()];
    await waitFor(() => distinct().length === 2, 'the terminal record');
    after.child.kill('SIGTERM');
    expect((await after.exited).code).toBe(0);

    const [scheduled, terminal] = distinct();
    expect(scheduled?.transition).toBe('scheduled');
    expect(terminal?.transition).toBe('completed');
    expect(terminal?.data.inferred).toBe(true);
    expect(terminal?.data.reason).toBe('host-rebooted');
    expect(validateRecord(terminal)).toEqual([]);
  });
});

describe('disk full', () => {
  it('keeps polling with a clear error while the store is full and loses no transition once space returns', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const out = join(dir('full'), 'records.jsonl');
    const errors: string[] = [];
    const { forwarder, stop } = startForwarder({
      config: simulatorConfig({ imdsEndpoint: sim.url, stateDir: dir('full-state'), out }),
      observer: { commitFailed: (info) => errors.push(info.message) },
    });
    await waitFor(() => forwarder.stats.commits > 0, 'the first commit');

    // The database may not grow by a single page: every commit that needs space fails with SQLITE_FULL.
    setPageLimit(forwarder.store!, 1);
    const ids = Array.from(
      { length: 20 },
      (_, i) =>
        sim.admin.injectEvent({
          type: 'Freeze',
          noticeSeconds: 900,
          description: `filler ${i} ${'x'.repeat(2000)}`,
        }).id,
    );
    await waitFor(() => forwarder.stats.commitFailures >= 3, 'failed commits while the disk is full');
    expect(errors[0]).toMatch(/full|SQLITE_FULL/i);
    const outcomesWhileFull = forwarder.stats.outcomes;
    await waitFor(() => forwarder.stats.outcomes >= outcomesWhileFull + 3, 'polling continues while full');

    setPageLimit(forwarder.store!, undefined); // space returns
    await waitFor(
      () => readFileSinkRecords(out).length >= ids.length,
      'every scheduled record after space returns',
      {
        timeoutMs: 30_000,
      },
    );
    await stop();
    expect(
      readFileSinkRecords(out)
        .map((r) => r.subject)
        .sort(),
    ).toEqual([...ids].sort());
  });
});

describe('disk full beyond the in-memory bound', () => {
  it('falls back to the committed state and infers conservatively (never canceled) once space returns', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const out = join(dir('bound'), 'records.jsonl');
    const config = simulatorConfig({ imdsEndpoint: sim.url, stateDir: dir('bound-state'), out });
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      pretty: false,
      destination: auditedStream((line) => lines.push(line)),
    });
    const { forwarder, stop } = startForwarder({ config, logger, maxWaitingRecords: 5 });
    const a = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await waitFor(() => readFileSinkRecords(out).length === 1, 'A scheduled');

    setPageLimit(forwarder.store!, 1); // the database may not grow by a single page: the disk is full
    const big = (n: number) =>
      Array.from(
        { length: n },
        (_, i) =>
          sim.admin.injectEvent({
            type: 'Freeze',
            noticeSeconds: 900,
            description: `${i} ${'x'.repeat(4000)}`,
          }).id,
      );
    // One document: A Started plus four large events (5 transitions wait: the bound), then two more (7 > 5).
    sim.admin.setStatus(a.id, 'Started');
    const fillers = big(4);
    await waitFor(() => forwarder.stats.commitFailures >= 1, 'a failed commit');
    expect(lines.join('')).toContain('5 transition(s) wait in memory');
    fillers.push(...big(2));
    await waitFor(() => lines.join('').includes('falling back to the last committed state'), 'the fallback');
    sim.admin.removeEvent(a.id); // A ends while the disk is still full
    const failures = forwarder.stats.commitFailures;
    await waitFor(() => forwarder.stats.commitFailures >= failures + 2, 'polls after the removal');

    setPageLimit(forwarder.store!, undefined); // space returns
    await waitFor(
      () => readFileSinkRecords(out).length >= 2 + fillers.length,
      'the records after space returned',
    );
    await stop();
    const records = readFileSinkRecords(out);
    // A's `started` went with the bound: A ends with an inferred completed (the dropped observations are
    // unwatched time for the committed state), never canceled; every other event is recorded.
    expect(records.filter((r) => r.subject === a.id).map((r) => r.transition)).toEqual([
      'scheduled',
      'completed',
    ]);
    const completed = records.find((r) => r.subject === a.id && r.transition === 'completed')!;
    expect(completed.data.inferred).toBe(true);
    expect(completed.data.reason).toBe('observation-gap');
    expect(
      records
        .filter((r) => r.subject !== a.id)
        .map((r) => r.subject)
        .sort(),
    ).toEqual([...fillers].sort());
  });
});

describe('run --sink stdout whose reader exits', () => {
  it('keeps running, says standard output is closed, and keeps the records in the outbox', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const stateDir = dir('stdout-closed');
    const fwd = spawnCli(runArgs({ imdsEndpoint: sim.url, stateDir })); // no --sink: stdout
    await fwd.ready;
    // The reader goes away (`run | jq` and jq exits): the child's next write to its stdout pipe gets EPIPE.
    fwd.child.stdout?.destroy();
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await waitFor(() => fwd.stderr().includes('standard output is closed'), 'the closed stdout reported', {
      timeoutMs: 20_000,
    });
    expect(fwd.child.exitCode).toBeNull();
    expect(fwd.stderr()).toContain('EPIPE');
    fwd.child.kill('SIGTERM');
    expect(await fwd.exited).toEqual({ code: 0, signal: null });

    const status = spawnSync(
      process.execPath,
      [MAIN, 'outbox', 'status', '--state-dir', stateDir, '--json'],
      {
        encoding: 'utf8',
      },
    );
    expect(status.status, status.stderr).toBe(0);
    const [stdout] = JSON.parse(status.stdout) as {
      sink: string;
      pending: number;
      lastError: string | null;
    }[];
    expect(stdout?.sink).toBe('stdout');
    expect(stdout?.pending).toBe(1);
    expect(stdout?.lastError).toContain('standard output is closed');
  });
});

describe('bad configurations', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['unknown key', 'imds: { pollIntervall: 1000 }\n', /imds\.pollIntervall: unknown key/],
    [
      'poll interval too small',
      'imds: { pollIntervalMs: 10 }\n',
      /imds\.pollIntervalMs: expected a number >= 200/,
    ],
    [
      'unknown sink type',
      'sinks: [{ name: a, type: kafka }]\n',
      /sinks\[0\]\.type: expected one of .*"file".*got "kafka"/,
    ],
    ['file sink without path', 'sinks: [{ name: a, type: file }]\n', /sinks\[0\]\.path: required/],
    [
      'duplicate sink names',
      'sinks: [{ name: a, type: stdout }, { name: a, type: stdout }]\n',
      /sinks\[1\]\.name: duplicate sink name "a"/,
    ],
  ];
  it.each(cases)(
    '%s → exit code 2 naming the key (config validate and run)',
    async (_label, yaml, pattern) => {
      const file = join(tmp.dir, `bad-${++counter}.yaml`);
      writeFileSync(file, yaml);
      const validate = spawnCli(['config', 'validate', file]);
      expect((await validate.exited).code).toBe(2);
      expect(validate.stderr()).toMatch(pattern);
      // A loopback endpoint that refuses: `run` sends its first GET before it validates the file (first poll
      // first, src/cli/first-poll.ts), and a test may never let that go to the default 169.254.169.254.
      const run = spawnCli([
        'run',
        '--config',
        file,
        '--state-dir',
        dir('never'),
        '--imds-endpoint',
        'http://127.0.0.1:9',
      ]);
      expect((await run.exited).code).toBe(2);
      expect(run.stderr()).toMatch(pattern);
      expect(run.stderr()).not.toMatch(/loopback guard/);
    },
  );

  it('a valid file → config validate exits 0', async () => {
    const validate = spawnCli(['config', 'validate', join(REPO, 'config', 'forwarder.example.yaml')]);
    expect((await validate.exited).code).toBe(0);
    expect(validate.stdout()).toMatch(/^ok: .*forwarder\.example\.yaml is valid/);
  });
});

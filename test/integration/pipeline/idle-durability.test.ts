/**
 * The footprint of an idle forwarder and what a restart concludes after idling, with real processes: the CLI
 * `run` as a child process against the project's IMDS simulator, a real SQLite file, SIGKILL / SIGTERM.
 *
 * - An unchanged poll writes nothing: SQLite's `data_version` seen from a second connection (it changes
 *   exactly when another connection commits), the WAL and database files do not change across many polls.
 * - crash after idle (SIGKILL): the restart's gap runs from the last COMMITTED observation, so an event gone
 *   after a quick restart is `completed` (inferred, observation-gap), never `canceled`.
 * - restart after a long idle (SIGTERM): the stop commits the observation time; the terminal record follows
 *   the documented rule computed from that committed time.
 * - reboot after idle: the host booted after the last observation → `completed` (host-rebooted).
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { TEST_BOOT_TIME_ENV } from '../../../src/pipeline/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import type { ForwarderState } from '../../../src/transform/index.ts';
import { type ForwarderChild, readFileSinkRecords, spawnCli } from '../../support/child.ts';
import { simulatorConfig, startForwarder } from '../../support/forwarder.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const POLL_MS = 200;

const tmp = makeTempDir('sef-idle-');
const simulators: RunningSimulator[] = [];
const children: ForwarderChild[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await c.exited;
  }
  await Promise.all(simulators.splice(0).map((s) => s.close()));
});
afterAll(() => tmp.cleanup());

let counter = 0;
function dir(name: string): string {
  return join(tmp.dir, `${name}-${++counter}`);
}

/** Distinct records by id (a SIGKILL between a sink write and its ack may deliver one twice, same id). */
function distinct(file: string): LifecycleRecord[] {
  return [...new Map(readFileSinkRecords(file).map((r) => [r.id, r])).values()];
}

/** A config file: 200 ms polling and the given request timeout (maxGapMs = 2 × 200 + timeout). */
function configFile(requestTimeoutMs: number): string {
  const file = join(tmp.dir, `config-${++counter}.yaml`);
  writeFileSync(file, `imds:\n  pollIntervalMs: ${POLL_MS}\n  requestTimeoutMs: ${requestTimeoutMs}\n`);
  return file;
}

/** Scheduled Events GETs the simulator has answered so far (the request log keeps sequence numbers). */
function gets(sim: RunningSimulator): number {
  return sim.admin.requests().log.filter((e) => e.endpoint === 'scheduledevents').length;
}
async function waitForGets(sim: RunningSimulator, more: number, what: string): Promise<void> {
  const target = gets(sim) + more;
  await waitFor(() => gets(sim) >= target, `${more} more scheduled-events GETs (${what})`);
}

/** The committed state, read through a second (read-only) connection. */
function committedState(stateDir: string): ForwarderState {
  const db = new DatabaseSync(join(stateDir, 'forwarder.db'), { readOnly: true });
  try {
    const row = db.prepare('SELECT json FROM state WHERE id = 1').get() as { json: string };
    return JSON.parse(row.json) as ForwarderState;
  } finally {
    db.close();
  }
}

function start(sim: RunningSimulator, stateDir: string, out: string, config: string, bootMs: number) {
  const child = spawnCli(
    ['run', '--config', config, '--imds-endpoint', sim.url, '--state-dir', stateDir, '--sink', `file:${out}`],
    { [TEST_BOOT_TIME_ENV]: String(bootMs) },
  );
  children.push(child);
  return child;
}

describe('an unchanged poll writes nothing (real process, real SQLite file)', () => {
  it('across many identical polls, with and without a tracked event: no commit, WAL and database untouched', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const stateDir = dir('state');
    const out = join(dir('out'), 'records.jsonl');
    const fwd = start(sim, stateDir, out, configFile(5000), Date.now() - 3_600_000);
    await fwd.ready;
    await waitForGets(sim, 2, 'the first document committed');

    const db = new DatabaseSync(join(stateDir, 'forwarder.db'), { readOnly: true });
    try {
      const dataVersion = () =>
        (db.prepare('PRAGMA data_version').get() as { data_version: number }).data_version;
      const files = () =>
        ['forwarder.db', 'forwarder.db-wal'].map((f) => {
          const path = join(stateDir, f);
          if (!existsSync(path)) return `${f}: absent`;
          const s = statSync(path);
          return `${f}: ${s.size} bytes, mtime ${s.mtimeMs}`;
        });
      const measure = async (what: string) => {
        const before = { version: dataVersion(), files: files() };
        await waitForGets(sim, 25, what); // 25 identical documents (5 s at 200 ms)
        return { before, after: { version: dataVersion(), files: files() } };
      };

      // Idle, no event.
      const idle = await measure('idle without events');
      expect(idle.after).toEqual(idle.before);

      // An event appears (a changed document: committed at once), then the same document again and again.
      sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 3600 });
      await waitFor(() => readFileSinkRecords(out).length === 1, 'the scheduled record');
      // Delivered and acknowledged (the ack and the compaction after it are the delivery engine's writes).
      await waitFor(
        () => (db.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n === 0,
        'the outbox drained',
      );
      await waitForGets(sim, 2, 'the scheduled commit settled');
      const versionAfterChange = dataVersion();
      const tracked = await measure('an event tracked, document unchanged');
      expect(tracked.after).toEqual(tracked.before);
      expect(versionAfterChange).toBe(tracked.before.version);
    } finally {
      db.close();
    }
    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);
  });
});

describe('the observation checkpoint (in process, real SQLite file)', () => {
  it('commits the observation time at the checkpoint interval only while an event is tracked', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const stateDir = dir('checkpoint-state');
    const out = join(dir('checkpoint'), 'records.jsonl');
    const { forwarder, stop } = startForwarder({
      config: simulatorConfig({ imdsEndpoint: sim.url, pollIntervalMs: POLL_MS, stateDir, out }),
      observationCheckpointMs: 1000,
    });
    try {
      await waitFor(() => forwarder.stats.commits === 1, 'the first document committed');
      // Idle without events: no checkpoint, however long (here 15 polls = 3 checkpoint intervals).
      await waitForGets(sim, 15, 'idle polls');
      expect(forwarder.stats.commits).toBe(1);
      expect(forwarder.stats.unchangedPolls).toBeGreaterThanOrEqual(14);

      sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 3600 });
      await waitFor(() => forwarder.stats.commits === 2, 'the changed document committed');
      const committedAt = committedState(stateDir).lastObservedAtMs!;
      // Tracked: the in-memory observation time is committed once the committed one is 1 s old.
      await waitFor(() => forwarder.stats.commits >= 3, 'a checkpoint');
      const checkpointed = committedState(stateDir).lastObservedAtMs!;
      expect(checkpointed - committedAt).toBeGreaterThanOrEqual(1000);
      expect(forwarder.stats.records).toBe(1); // a checkpoint carries no record
    } finally {
      await stop();
    }
  });
});

describe('restart after idle (real process, SIGKILL / SIGTERM)', () => {
  it('crash after idle: the gap runs from the last commit, so a quick restart never yields canceled', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const requestTimeoutMs = 1000;
    const maxGapMs = 2 * POLL_MS + requestTimeoutMs;
    const config = configFile(requestTimeoutMs);
    const stateDir = dir('crash-state');
    const out = join(dir('crash'), 'records.jsonl');
    const boot = Date.now() - 3_600_000; // the same boot for both runs: no reboot
    const before = start(sim, stateDir, out, config, boot);
    await before.ready;
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 3600 });
    await waitFor(() => distinct(out).length === 1, 'the scheduled record');
    const committedAt = committedState(stateDir).lastObservedAtMs!;
    // Idle (the same document) for clearly longer than maxGapMs, all of it watched.
    await waitFor(() => Date.now() - committedAt > 3 * maxGapMs && gets(sim) > 0, 'an idle stretch', {
      timeoutMs: 30_000,
    });
    await waitForGets(sim, 2, 'still polling');
    expect(committedState(stateDir).lastObservedAtMs).toBe(committedAt); // idle polls committed nothing
    before.child.kill('SIGKILL');
    await before.exited;

    sim.admin.removeEvent(event.id);
    const after = start(sim, stateDir, out, config, boot);
    await after.ready;
    await waitFor(() => distinct(out).length === 2, 'the terminal record');
    after.child.kill('SIGTERM');
    expect((await after.exited).code).toBe(0);

    const terminal = distinct(out)[1]!;
    expect(terminal.transition).toBe('completed');
    expect(terminal.data.inferred).toBe(true);
    expect(terminal.data.reason).toBe('observation-gap');
    // The gap the restart used: from the committed observation to the poll that saw the event gone.
    expect(Date.parse(terminal.data.timing.endedAt as string) - committedAt).toBeGreaterThan(maxGapMs);
  });

  it('restart after a long idle (SIGTERM): the stop commits the observation time, and the rule uses it', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const requestTimeoutMs = 30_000; // maxGapMs 30.4 s: a prompt restart is watched continuously
    const maxGapMs = 2 * POLL_MS + requestTimeoutMs;
    const config = configFile(requestTimeoutMs);
    const stateDir = dir('graceful-state');
    const out = join(dir('graceful'), 'records.jsonl');
    const boot = Date.now() - 3_600_000;
    const before = start(sim, stateDir, out, config, boot);
    await before.ready;
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 3600 });
    await waitFor(() => distinct(out).length === 1, 'the scheduled record');
    const committedAt = committedState(stateDir).lastObservedAtMs!;
    await waitForGets(sim, 15, 'idle polls');
    expect(committedState(stateDir).lastObservedAtMs).toBe(committedAt);
    before.child.kill('SIGTERM');
    expect((await before.exited).code).toBe(0);
    const stoppedAt = committedState(stateDir).lastObservedAtMs!;
    // The idle polls after the commit were observed in memory only; the stop made the latest one durable.
    expect(stoppedAt).toBeGreaterThan(committedAt);

    sim.admin.removeEvent(event.id);
    const after = start(sim, stateDir, out, config, boot);
    await after.ready;
    await waitFor(() => distinct(out).length === 2, 'the terminal record');
    after.child.kill('SIGTERM');
    expect((await after.exited).code).toBe(0);

    const terminal = distinct(out)[1]!;
    const gapMs = Date.parse(terminal.data.timing.endedAt as string) - stoppedAt;
    if (gapMs <= maxGapMs) {
      expect(terminal.transition).toBe('canceled');
    } else {
      expect(terminal.transition).toBe('completed');
      expect(terminal.data.reason).toBe('observation-gap');
    }
  });

  it('reboot after idle: the host booted after the last observation → completed (inferred, host-rebooted)', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    simulators.push(sim);
    const config = configFile(5000);
    const stateDir = dir('reboot-state');
    const out = join(dir('reboot'), 'records.jsonl');
    const before = start(sim, stateDir, out, config, Date.now() - 3_600_000);
    await before.ready;
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    await waitFor(() => distinct(out).length === 1, 'the scheduled record');
    const committedAt = committedState(stateDir).lastObservedAtMs!;
    await waitForGets(sim, 10, 'idle polls');
    expect(committedState(stateDir).lastObservedAtMs).toBe(committedAt);
    before.child.kill('SIGKILL'); // the host goes down without warning
    await before.exited;

    sim.admin.removeEvent(event.id);
    const after = start(sim, stateDir, out, config, Date.now()); // booted after every observation
    await after.ready;
    await waitFor(() => distinct(out).length === 2, 'the terminal record');
    after.child.kill('SIGTERM');
    expect((await after.exited).code).toBe(0);
    const terminal = distinct(out)[1]!;
    expect(terminal.transition).toBe('completed');
    expect(terminal.data.inferred).toBe(true);
    expect(terminal.data.reason).toBe('host-rebooted');
  });
});

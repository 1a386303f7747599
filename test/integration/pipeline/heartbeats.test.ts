/**
 * Heartbeats through real `run` processes (issue 33 item 1): the simulator → `node src/cli/main.ts run` with
 * `heartbeat.intervalSeconds: 1` → the Event Hubs sink (the real SDK over AMQP to the Event Hubs double, heartbeats
 * on by default), a file sink that opts in, and a Slack sink (to a recording HTTP server) that never gets one.
 *
 * 1. Heartbeats arrive at start (sequence 1), every interval and at a clean stop, each valid against
 *    schemas/heartbeat.schema.json, on the hub keyed by the vmId like the records; Slack gets the lifecycle
 *    records only.
 * 2. Latest wins: while the hub refuses, heartbeats are lost, not queued: nothing enters the outbox or the dead
 *    letters, the warning is logged once, and the next heartbeat after the hub recovers carries a later
 *    sequence number (the failed ones are never re-sent).
 * 3. A sink whose destination refuses everything (403) pauses: the next heartbeat reports it `paused`, and a fleet
 *    history that ingests that heartbeat counts the VM unhealthy, naming the paused sink.
 * 4. Idle, heartbeats write nothing to the state directory (file sizes and modification times unchanged).
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_TYPE, type HeartbeatRecord, type LifecycleRecord } from '../../../src/domain/index.ts';
import { validateHeartbeat } from '../../../src/domain/record-schema.ts';
import { openHistory } from '../../../src/fleet/history/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, readFileSinkRecords, spawnCli } from '../../support/child.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const CONN_ENV = 'SEF_TEST_EH_CONN';
const tmp = makeTempDir('sef-heartbeats-');
let double: EventHubsDouble;
const children: ForwarderChild[] = [];
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  double = await startEventHubsDouble({ hubs: { beats: 4, lossy: 2, idle: 2 } });
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await c.exited;
  }
  for (const close of closers.splice(0)) await close();
  double.clearFaults();
});
afterAll(async () => {
  await double?.close();
  tmp.cleanup();
});

interface Setup {
  stateDir: string;
  file: string;
  child: ForwarderChild;
}

async function simulator(): Promise<RunningSimulator> {
  const sim = await startSimulator({ timeScale: 0 });
  closers.push(() => sim.close());
  return sim;
}

/** Starts `run` with an Event Hubs sink on `hub`, a file sink with heartbeats on and the extra sink lines. */
function startRun(name: string, sim: RunningSimulator, hub: string, extraSinks: string[] = []): Setup {
  const stateDir = join(tmp.dir, `${name}-state`);
  const file = join(tmp.dir, `${name}.jsonl`);
  const config = join(tmp.dir, `${name}.yaml`);
  writeFileSync(
    config,
    [
      `stateDir: ${JSON.stringify(stateDir)}`,
      `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
      'heartbeat: { intervalSeconds: 1 }',
      'log: { level: info }',
      'sinks:',
      `  - { name: file, type: file, path: ${JSON.stringify(file)}, heartbeats: true }`,
      '  - name: hub',
      '    type: eventhubs',
      `    connectionString: '\${${CONN_ENV}}'`,
      '    retry: { maxRetries: 0, retryDelayMs: 20, maxRetryDelayMs: 100, timeoutMs: 1500 }',
      '    delivery: { backoff: { initialMs: 20, maxMs: 200 } }',
      ...extraSinks,
      '',
    ].join('\n'),
  );
  const child = spawnCli(['run', '--config', config], { [CONN_ENV]: double.connectionString(hub) });
  children.push(child);
  return { stateDir, file, child };
}

const isHeartbeatBody = (body: unknown): body is HeartbeatRecord =>
  (body as { type?: unknown } | null)?.type === HEARTBEAT_TYPE;

function hubHeartbeats(hub: string): HeartbeatRecord[] {
  return double
    .received(hub)
    .map((e) => e.body)
    .filter(isHeartbeatBody);
}

function fileHeartbeats(file: string): HeartbeatRecord[] {
  return readFileSinkRecords<HeartbeatRecord | LifecycleRecord>(file).filter(isHeartbeatBody);
}

async function stopGracefully(child: ForwarderChild): Promise<void> {
  child.child.kill('SIGTERM');
  expect(await child.exited, child.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
}

function countRows(stateDir: string, table: string): number {
  const db = new DatabaseSync(join(stateDir, 'forwarder.db'), { readOnly: true });
  try {
    return Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
  } finally {
    db.close();
  }
}

describe('heartbeats from a real run', () => {
  it('reach the Event Hubs double and the opted-in file sink at start, every interval and at stop; never Slack', async () => {
    const sim = await simulator();
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 600 });
    const slack = await HttpSinkServer.start();
    closers.push(() => slack.close());
    const run = startRun('beats', sim, 'beats', [
      `  - { name: slack, type: slack, url: ${JSON.stringify(slack.url('/slack'))}, minIntervalMs: 0, filter: { scope: all } }`,
    ]);
    await run.child.ready;
    await waitFor(
      () =>
        hubHeartbeats('beats').length >= 3 &&
        fileHeartbeats(run.file).length >= 3 &&
        slack.requests.length >= 1,
      'three heartbeats on the hub and in the file, a record at Slack',
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await stopGracefully(run.child);

    for (const beats of [hubHeartbeats('beats'), fileHeartbeats(run.file)]) {
      for (const beat of beats) expect(validateHeartbeat(beat)).toEqual([]);
      expect(beats[0]!.data).toMatchObject({ trigger: 'start', sequence: 1, intervalSeconds: 1 });
      expect(beats.at(-1)!.data.trigger).toBe('stop');
      expect(beats.slice(1, -1).every((b) => b.data.trigger === 'interval')).toBe(true);
      expect(beats.map((b) => b.data.sequence)).toEqual(beats.map((_, i) => i + 1));
      // The VM is known from the first heartbeat on; every sink is reported, with its type.
      expect(beats[0]!.source).toMatch(/\/virtualMachines\//);
      expect(beats[0]!.data.sinks.map((s) => `${s.name}:${s.type}`)).toEqual([
        'file:file',
        'hub:eventhubs',
        'slack:slack',
      ]);
      expect(beats.at(-1)!.data.imds.ok).toBe(true);
    }
    // On the hub: keyed by the vmId (the partition of the VM's records), with the CloudEvents properties.
    const events = double.received('beats').filter((e) => isHeartbeatBody(e.body));
    const vmId = hubHeartbeats('beats')[0]!.vmid;
    expect(vmId).not.toBe('');
    for (const e of events) {
      expect(e.partitionKey).toBe(vmId);
      expect(e.applicationProperties['cloudEvents:type']).toBe(HEARTBEAT_TYPE);
      expect(e.applicationProperties).not.toHaveProperty('cloudEvents:subject');
    }
    // The hub also got the records, and Slack only records: no request body is a heartbeat.
    expect(double.received('beats').some((e) => !isHeartbeatBody(e.body))).toBe(true);
    expect(slack.requests.length).toBeGreaterThan(0);
    for (const request of slack.requests) expect(request.body).not.toContain(HEARTBEAT_TYPE);
    // Nothing of them in the store: the outbox is drained and there are no dead letters.
    expect(countRows(run.stateDir, 'outbox')).toBe(0);
    expect(countRows(run.stateDir, 'dead_letters')).toBe(0);
  });

  it('latest wins: heartbeats the hub refuses are lost, never queued or dead-lettered; the next one goes through', async () => {
    const sim = await simulator();
    const run = startRun('lossy', sim, 'lossy');
    await run.child.ready;
    await waitFor(() => hubHeartbeats('lossy').length >= 1, 'the start heartbeat', { timeoutMs: 30_000 });
    double.setFault({ kind: 'server-busy', hub: 'lossy' });
    const refusedFrom = fileHeartbeats(run.file).length;
    await waitFor(
      () => fileHeartbeats(run.file).length >= refusedFrom + 3,
      'three heartbeats while refused',
      {
        timeoutMs: 30_000,
      },
    );
    // Refused: nothing waits in the outbox and nothing was dead-lettered for the hub.
    expect(countRows(run.stateDir, 'outbox')).toBe(0);
    expect(countRows(run.stateDir, 'dead_letters')).toBe(0);
    const lastBeforeRecovery = Math.max(...hubHeartbeats('lossy').map((b) => b.data.sequence));
    double.clearFaults();
    await waitFor(
      () => hubHeartbeats('lossy').some((b) => b.data.sequence > lastBeforeRecovery + 2),
      'a heartbeat after the hub recovered',
      { timeoutMs: 30_000 },
    );
    await stopGracefully(run.child);
    // The hub has no heartbeat twice and the refused ones never came later: the sequence jumps over them.
    const sequences = hubHeartbeats('lossy').map((b) => b.data.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    const missing = sequences.at(-1)! - sequences.length;
    expect(missing).toBeGreaterThanOrEqual(2);
    const warnings = run.child
      .stderr()
      .split('\n')
      .filter((line) => line.includes('heartbeat not delivered to sink hub'));
    expect(warnings.filter((l) => l.includes('"level":40'))).toHaveLength(1);
    expect(run.child.stderr()).toContain('heartbeat reached sink hub again after');
    expect(run.child.stderr()).not.toContain(double.sasKey);
  });

  it('a paused sink is in the next heartbeat, and the fleet counts that VM unhealthy with why', async () => {
    const sim = await simulator();
    // The destination refuses everything (403): the webhook sink pauses and keeps its record pending.
    const refusing = await HttpSinkServer.start({ status: 403, body: 'forbidden' });
    closers.push(() => refusing.close());
    const run = startRun('paused', sim, 'beats', [
      `  - { name: hook, type: webhook, url: ${JSON.stringify(refusing.url('/hook'))}, filter: { scope: all } }`,
    ]);
    await run.child.ready;
    sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 900 });
    const paused = await waitFor(
      () =>
        fileHeartbeats(run.file).find((b) => b.data.sinks.find((s) => s.name === 'hook')?.state === 'paused'),
      'a heartbeat reporting the webhook sink paused',
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await stopGracefully(run.child);
    expect(validateHeartbeat(paused)).toEqual([]);
    expect(paused.data.sinks.find((s) => s.name === 'hook')).toMatchObject({
      type: 'webhook',
      state: 'paused',
    });
    // Paused, nothing is lost: the record waits in the outbox, not in the dead letters.
    expect(countRows(run.stateDir, 'dead_letters')).toBe(0);
    // The fleet history (a real SQLite file) takes that heartbeat as the consumer would: the VM is unhealthy.
    const history = await openHistory({ database: join(tmp.dir, 'paused-fleet.db') });
    closers.push(() => history.close());
    await history.ingest([
      { body: paused, partitionId: '0', sequenceNumber: 0, enqueuedAt: new Date(paused.time) },
    ]);
    const report = await history.coverage();
    expect(report.byState).toMatchObject({ reporting: 0, unhealthy: 1, silent: 0 });
    expect(report.unhealthy.items[0]!.problems).toEqual([
      expect.objectContaining({ code: 'sink-paused', sink: 'hook' }),
    ]);
    expect(report.unhealthy.items[0]!.reason).toContain('sink hook paused');
  });

  it('idle, heartbeats write nothing to the state directory', async () => {
    const sim = await simulator();
    const run = startRun('idle', sim, 'idle');
    await run.child.ready;
    await waitFor(() => hubHeartbeats('idle').length >= 2, 'two heartbeats', { timeoutMs: 30_000 });
    const files = ['forwarder.db', 'forwarder.db-wal'].map((f) => join(run.stateDir, f));
    const stamp = () =>
      files.map((f) => statSync(f, { throwIfNoEntry: false })).map((s) => [s?.size, s?.mtimeMs]);
    const before = stamp();
    const count = hubHeartbeats('idle').length;
    await waitFor(() => hubHeartbeats('idle').length >= count + 3, 'three more heartbeats', {
      timeoutMs: 30_000,
    });
    expect(stamp()).toEqual(before);
    await stopGracefully(run.child);
  });
});

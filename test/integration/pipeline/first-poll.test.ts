/**
 * First poll first: the forwarder's first Scheduled Events GET waits neither for the VM identity request nor
 * for the sinks to be built, and nothing is lost or changed by that: the first records still carry the VM
 * identity, and records committed before a sink exists are delivered once it does. In-process Forwarder,
 * real IMDS simulator, real SQLite store and file sink; ordering is forced by faults and gates, never timing.
 */
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { Forwarder } from '../../../src/pipeline/index.ts';
import { DEFAULT_VM_NAME, type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { findSinkFactory } from '../../../src/sinks/registry.ts';
import type { SinkFactory } from '../../../src/sinks/types.ts';
import { jsonLines, spawnCli } from '../../support/child.ts';
import { runArgs } from '../../support/forwarder.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-first-poll-');
afterAll(() => tmp.cleanup());
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let counter = 0;
const dir = (name: string) => join(tmp.dir, `${name}-${++counter}`);

const readRecords = (file: string): LifecycleRecord[] =>
  existsSync(file) ? jsonLines<LifecycleRecord>(readFileSync(file, 'utf8')) : [];

async function simulator(): Promise<RunningSimulator> {
  const sim = await startSimulator({ timeScale: 0 });
  cleanups.push(() => sim.close());
  return sim;
}

/** Starts `forwarder`; the cleanup stops it (and fails the test if run() rejected). */
function start(forwarder: Forwarder): { stop: () => Promise<void> } {
  const controller = new AbortController();
  const running = forwarder.run(controller.signal);
  running.catch(() => {});
  const stop = async () => {
    controller.abort();
    await running;
  };
  cleanups.push(async () => {
    if (!controller.signal.aborted) await stop();
  });
  return { stop };
}

const requests = (sim: RunningSimulator, endpoint: 'scheduledevents' | 'instance') =>
  sim.admin.requests().log.filter((e) => e.endpoint === endpoint);

describe('first poll first', () => {
  it('polls while the VM identity request hangs; the first outcome waits for the identity', async () => {
    const sim = await simulator();
    sim.admin.addFault({ kind: 'hang', endpoint: 'instance', count: 1 });
    const out = join(dir('hang'), 'records.jsonl');
    const config = loadConfig({
      overrides: {
        // The hung identity request fails only after this long: far beyond the wait below.
        imds: { endpoint: sim.url, pollIntervalMs: 200, requestTimeoutMs: 120_000 },
        stateDir: dir('hang-state'),
        sinks: [{ name: 'file', type: 'file', path: out }],
      },
    });
    const forwarder = new Forwarder({ config, logger: silentLogger() });
    const { stop } = start(forwarder);

    await waitFor(() => requests(sim, 'scheduledevents').length > 0, 'a Scheduled Events GET');
    expect(requests(sim, 'instance').length).toBe(1); // the hung one, still unanswered
    // The first outcome (and so every record) waits for the identity request to settle.
    expect(forwarder.stats.outcomes).toBe(0);
    await stop();
  });

  it('the first records carry the VM identity when it arrives after the first poll', async () => {
    const sim = await simulator();
    const eventId = sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 900 }).id;
    sim.admin.addFault({ kind: 'latency', ms: 400, endpoint: 'instance', count: 1 });
    const out = join(dir('identity'), 'records.jsonl');
    const config = loadConfig({
      overrides: {
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        stateDir: dir('identity-state'),
        sinks: [{ name: 'file', type: 'file', path: out }],
      },
    });
    start(new Forwarder({ config, logger: silentLogger() }));

    const [record] = await waitFor(() => {
      const records = readRecords(out);
      return records.length > 0 ? records : undefined;
    }, 'the scheduled record');
    expect(record?.subject).toBe(eventId);
    expect(record?.transition).toBe('scheduled');
    const vm = sim.admin.vms().find((v) => v.identity.name === DEFAULT_VM_NAME);
    expect(record?.source).toBe(vm?.identity.resourceId);
    expect(record?.source).toMatch(/^\/subscriptions\//);
  });

  it('polls and commits before the sinks are built; the records are delivered once they are', async () => {
    const sim = await simulator();
    const eventId = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 }).id;
    const out = join(dir('gate'), 'records.jsonl');
    const config = loadConfig({
      overrides: {
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        stateDir: dir('gate-state'),
        sinks: [{ name: 'file', type: 'file', path: out }],
      },
    });
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let creating = 0;
    const file = findSinkFactory('file') as SinkFactory;
    const gated: SinkFactory = {
      ...file,
      async create(name, options, context) {
        creating++;
        await gate; // e.g. an SDK that takes long to load
        return file.create(name, options, context);
      },
    };
    const forwarder = new Forwarder({
      config,
      logger: silentLogger(),
      findFactory: (type) => (type === 'file' ? gated : undefined),
    });
    start(forwarder);

    await waitFor(() => forwarder.stats.records > 0, 'the scheduled record committed');
    expect(creating).toBe(1); // the sink is still being built
    expect(forwarder.engine).toBeUndefined();
    expect(forwarder.store?.stats().find((q) => q.sink === 'file')?.pending).toBe(1);
    expect(readRecords(out)).toEqual([]);

    open();
    const [record] = await waitFor(() => {
      const records = readRecords(out);
      return records.length > 0 ? records : undefined;
    }, 'the record delivered once the sink exists');
    expect(record?.subject).toBe(eventId);
    expect(record?.transition).toBe('scheduled');
  });
});

describe('the first GET leaves before the program loads (src/cli/first-poll.ts), real child processes', () => {
  it('is the first poll: one GET on the wire, and its answer yields the first records', async () => {
    const sim = await simulator();
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900 });
    const out = join(dir('early'), 'records.jsonl');
    // One poll a minute: within the wait below, every Scheduled Events GET is the first one.
    const fwd = spawnCli(
      runArgs({ imdsEndpoint: sim.url, stateDir: dir('early-state'), out, pollIntervalMs: 60_000 }),
    );
    cleanups.push(async () => {
      fwd.child.kill('SIGKILL');
      await fwd.exited;
    });
    await waitFor(() => readRecords(out).length > 0, 'the first record');
    expect(readRecords(out).map((r) => `${r.subject}:${r.transition}`)).toEqual([`${event.id}:scheduled`]);
    expect(requests(sim, 'scheduledevents')).toHaveLength(1);
  });

  it('does not hold the process when the configuration is invalid and IMDS never answers', async () => {
    const silent = createServer(() => {}); // accepts connections, never answers
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    cleanups.push(async () => {
      await new Promise((r) => silent.close(r));
    });
    let connections = 0;
    silent.on('connection', (socket) => {
      connections++;
      cleanups.push(async () => {
        socket.destroy();
      });
    });
    const file = join(tmp.dir, 'bad-early.yaml');
    writeFileSync(file, 'imds: { pollIntervall: 1000 }\n');
    const port = (silent.address() as { port: number }).port;
    const fwd = spawnCli(['run', '--config', file, '--imds-endpoint', `http://127.0.0.1:${port}`]);
    expect((await fwd.exited).code).toBe(2);
    expect(fwd.stderr()).toMatch(/imds\.pollIntervall: unknown key/);
    expect(connections).toBe(1); // the first GET had left; its open connection did not keep the process
  });
});

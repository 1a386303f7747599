/**
 * SIGHUP reloads `run` (docs/install.md "Reloading the configuration"): real `run` child processes against the IMDS
 * simulator, real signals, file sinks, webhook sinks against recording HTTP servers, and the outbox counted in the
 * real SQLite state (read-only, beside the running forwarder) before and after each reload:
 * - an added sink receives the records committed after the reload, nothing older;
 * - a removed sink's pending rows stay (logged, in `outbox status`), get no new rows, and are delivered once, in
 *   order, when the sink is configured again;
 * - a changed sink is rebuilt and continues from its pending rows; the unchanged sink beside it keeps its position;
 * - an invalid file changes nothing (logged with the problem and the fix; the metric says so);
 * - a reload that changes nothing does nothing; one that changes only restart settings says they need a restart;
 * - the periodic alert re-sends follow the sinks: none to a removed Alertmanager sink, their own to an added one;
 * - heartbeats follow the sinks too: an added sink with `heartbeats: true` gets them, a removed one no more, and the
 *   sink that stays keeps its sequence (no stop heartbeat, no second start);
 * - SIGHUP never ends the process: SIGTERM afterwards still stops it cleanly (exit code 0).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { openStoreForInspection, type SinkQueueStats } from '../../../src/store/index.ts';
import { AlertmanagerDouble } from '../../support/alertmanager-double.ts';
import {
  type ForwarderChild,
  jsonLines,
  readFileSinkRecords,
  runCli,
  startRun,
} from '../../support/child.ts';
import { startForwarder } from '../../support/forwarder.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const VM = 'sim-vm-0';
const tmp = makeTempDir('sef-reload-');
afterAll(() => tmp.cleanup());
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let counter = 0;
const path = (name: string) => join(tmp.dir, `${name}-${++counter}`);

type Log = Record<string, unknown>;

interface Running {
  fwd: ForwarderChild;
  sim: RunningSimulator;
  stateDir: string;
  /** The config file. */
  file: string;
  /** Rewrites the config file (the simulator endpoint and state directory stay). */
  write(config: Record<string, unknown>): void;
  logs(): Log[];
}

async function start(config: Record<string, unknown>): Promise<Running> {
  const sim = await startSimulator({ vmName: VM, timeScale: 0 });
  cleanups.push(() => sim.close());
  const file = path('config.yaml');
  const stateDir = path('state');
  const full = (c: Record<string, unknown>) => ({
    stateDir,
    ...c,
    imds: { endpoint: sim.url, pollIntervalMs: 200, ...(c.imds ?? {}) },
  });
  const write = (c: Record<string, unknown>) => writeFileSync(file, JSON.stringify(full(c)));
  const fwd = await startRun(file, full(config));
  cleanups.push(async () => {
    fwd.child.kill('SIGKILL');
    await fwd.exited;
  });
  return { fwd, sim, stateDir, file, write, logs: () => jsonLines(fwd.stderr()).filter(isLog) };
}

function isLog(line: unknown): line is Log {
  return typeof line === 'object' && line !== null && 'msg' in line;
}

/** Sends SIGHUP and resolves with the reload's outcome line (info, warn or error, from the reload component). */
async function reload(run: Running): Promise<Log> {
  const outcomes = () => run.logs().filter((l) => l.component === 'reload' && 'outcome' in l);
  const before = outcomes().length;
  run.fwd.child.kill('SIGHUP');
  return waitFor(() => outcomes()[before], 'the reload outcome in the log');
}

let eventNumber = 0;
/** A new Scheduled event affecting this VM: one `scheduled` record per sink. Returns its EventId. */
function newEvent(sim: RunningSimulator): string {
  const id = `E-RELOAD-${++eventNumber}`;
  sim.admin.injectEvent({ id, type: 'Freeze', resources: [VM], noticeSeconds: 900 });
  return id;
}

/** The outbox as the state database holds it now (read-only, beside the running forwarder). */
function outbox(stateDir: string): Map<string, SinkQueueStats> {
  const store = openStoreForInspection({ stateDir, logger: silentLogger(), readOnly: true });
  try {
    return new Map((store?.stats() ?? []).map((s) => [s.sink, s]));
  } finally {
    store?.close();
  }
}
const pending = (stateDir: string, sink: string) => outbox(stateDir).get(sink)?.pending ?? 0;

interface EventRecord {
  id: string;
  transition: string;
  data: { EventId: string };
}
const fileEvents = (file: string) => readFileSinkRecords<EventRecord>(file).map((r) => r.data.EventId);
const bodyEvents = (bodies: unknown[]) => (bodies as EventRecord[]).map((r) => r.data.EventId);

const fileSink = (name: string, file: string) => ({ name, type: 'file', path: file });
/** A webhook sink that retries fast (a 503 keeps its rows pending). */
const hookSink = (name: string, server: HttpSinkServer) => ({
  name,
  type: 'webhook',
  url: server.url(),
  filter: { scope: 'all' },
  delivery: { backoff: { initialMs: 50, maxMs: 100 } },
});

async function server(status: number): Promise<HttpSinkServer> {
  const s = await HttpSinkServer.start({ status, body: status === 200 ? 'ok' : 'unavailable' });
  cleanups.push(() => s.close());
  return s;
}

describe('SIGHUP reloads run', () => {
  it('adds a sink: it receives the records committed after the reload, nothing older; the others go on', async () => {
    const a = path('a.jsonl');
    const b = path('b.jsonl');
    const run = await start({ sinks: [fileSink('a', a)] });
    const e1 = newEvent(run.sim);
    await waitFor(() => fileEvents(a).length === 1, 'E1 at a');

    run.write({ sinks: [fileSink('a', a), fileSink('b', b)] });
    const outcome = await reload(run);
    expect(outcome).toMatchObject({ outcome: 'applied', added: ['b'], removed: [], rebuilt: [] });
    expect(outcome.msg).toBe('configuration reloaded: added b');

    const e2 = newEvent(run.sim);
    await waitFor(() => fileEvents(a).length === 2 && fileEvents(b).length === 1, 'E2 at a and b');
    expect(fileEvents(a)).toEqual([e1, e2]); // a kept its position: nothing sent twice
    expect(fileEvents(b)).toEqual([e2]);
    await waitFor(() => pending(run.stateDir, 'a') + pending(run.stateDir, 'b') === 0, 'empty queues');
  });

  it('removes a sink with pending rows: they stay (logged, `outbox status`), get no new rows, and are delivered once when it comes back', async () => {
    const a = path('a.jsonl');
    const down = await server(503);
    const run = await start({ sinks: [fileSink('a', a), hookSink('w', down)] });
    const [e1, e2] = [newEvent(run.sim), newEvent(run.sim)];
    await waitFor(() => fileEvents(a).length === 2, 'E1, E2 at a');
    await waitFor(() => pending(run.stateDir, 'w') === 2 && down.requests.length > 0, 'w retrying E1');

    run.write({ sinks: [fileSink('a', a)] });
    const outcome = await reload(run);
    expect(outcome).toMatchObject({ outcome: 'applied', removed: ['w'], added: [], rebuilt: [] });
    const removed = run.logs().find((l) => l.sink === 'w' && String(l.msg).startsWith('sink removed'));
    expect(removed).toMatchObject({ level: 40, pending: 2 });
    expect(String(removed?.msg)).toContain('stay in the outbox (see `outbox status`)');
    const requestsAtRemoval = down.requests.length; // the worker has ended: nothing is sent to w any more

    const e3 = newEvent(run.sim);
    await waitFor(() => fileEvents(a).length === 3, 'E3 at a');
    expect(fileEvents(a)).toEqual([e1, e2, e3]);
    expect(outbox(run.stateDir).get('w')).toMatchObject({ pending: 2, deadLetters: 0 }); // kept, no new row
    expect(down.requests.length).toBe(requestsAtRemoval);
    const status = await runCli(['outbox', 'status', '--config', run.file]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      /^w: 2 pending .*\n.*\n {2}not in .*config\.yaml-\d+: these records wait here/m,
    );

    // Back again, now reachable: exactly the two kept rows, in order, once (E3 was committed while w was gone).
    down.setDefault({ status: 200, body: 'ok' });
    run.write({ sinks: [fileSink('a', a), hookSink('w', down)] });
    expect(await reload(run)).toMatchObject({ outcome: 'applied', added: ['w'] });
    await waitFor(() => pending(run.stateDir, 'w') === 0, 'w drained');
    expect(bodyEvents(down.jsonBodies().slice(requestsAtRemoval))).toEqual([e1, e2]);
    expect(fileEvents(a)).toEqual([e1, e2, e3]);
  });

  it('changes a sink: rebuilt, it continues from its pending rows; the unchanged sink keeps its position', async () => {
    const a = path('a.jsonl');
    const old = await server(503);
    const fixed = await server(200);
    const run = await start({ sinks: [fileSink('a', a), hookSink('w', old)] });
    const [e1, e2] = [newEvent(run.sim), newEvent(run.sim)];
    await waitFor(() => fileEvents(a).length === 2, 'E1, E2 at a');
    await waitFor(() => pending(run.stateDir, 'w') === 2 && old.requests.length > 0, 'w retrying E1');
    const before = outbox(run.stateDir);

    run.write({ sinks: [fileSink('a', a), hookSink('w', fixed)] }); // a new URL: w is built again
    const outcome = await reload(run);
    expect(outcome).toMatchObject({ outcome: 'applied', rebuilt: ['w'], added: [], removed: [] });
    const oldRequests = old.requests.length;
    await waitFor(() => pending(run.stateDir, 'w') === 0, 'w drained to the new URL');
    const e3 = newEvent(run.sim);
    await waitFor(() => fixed.requests.length === 3 && fileEvents(a).length === 3, 'E3 at both');

    expect(before.get('w')?.pending).toBe(2);
    expect(bodyEvents(fixed.jsonBodies())).toEqual([e1, e2, e3]); // its pending rows first, once, in order
    expect(fileEvents(a)).toEqual([e1, e2, e3]); // a was not rebuilt: no record twice
    expect(old.requests.length).toBe(oldRequests); // the old client is gone
    await waitFor(() => pending(run.stateDir, 'a') + pending(run.stateDir, 'w') === 0, 'empty queues');
    expect(outbox(run.stateDir).get('w')?.deadLetters ?? 0).toBe(0);
  });

  it('refuses an invalid file: the running configuration stays, the log names the problem and the fix, the metric drops to 0', async () => {
    const a = path('a.jsonl');
    const config = { sinks: [fileSink('a', a)], telemetry: { listen: { enabled: true, port: 0 } } };
    const run = await start(config);
    const listen = String(run.logs().find((l) => String(l.msg).startsWith('telemetry listening'))?.listen);
    const metrics = async () => parsePrometheusText(await (await fetch(`${listen}/metrics`)).text());
    expect(sampleValue(await metrics(), 'sef_config_last_reload_successful')).toBe(1);

    run.write({ ...config, sinks: [{ name: 'a', type: 'file' }, fileSink('b', path('b.jsonl'))] }); // no path
    const refused = await reload(run);
    expect(refused).toMatchObject({ outcome: 'invalid', level: 50 });
    expect(refused.problems).toEqual([expect.stringMatching(/^sinks\[0\]\.path: /)]);
    expect(String(refused.msg)).toMatch(
      /^configuration reload refused: invalid configuration \(.*\): sinks\[0\]\.path/,
    );
    expect(String(refused.msg)).toContain('The running configuration stays unchanged');
    expect(String(refused.msg)).toContain('config validate --config');

    const e1 = newEvent(run.sim); // still running, still delivering to the sinks it had
    await waitFor(() => fileEvents(a).length === 1, 'E1 at a');
    expect(fileEvents(a)).toEqual([e1]);
    let samples = await metrics();
    expect(sampleValue(samples, 'sef_config_reloads_total', { outcome: 'invalid' })).toBe(1);
    expect(sampleValue(samples, 'sef_config_last_reload_successful')).toBe(0);

    // Valid by the schema, but `run` would refuse to start with it (the start checks): so does a reload.
    const kubeconfig = path('missing-kubeconfig');
    run.write({ ...config, kubernetes: { enabled: true, nodeName: 'node-1', kubeconfig } });
    const cannotStart = await reload(run);
    expect(cannotStart).toMatchObject({ outcome: 'invalid' });
    expect(cannotStart.problems).toEqual([
      expect.stringContaining(`kubernetes.kubeconfig: the file ${kubeconfig} does not exist`),
    ]);
    expect(String(cannotStart.msg)).toMatch(
      /^configuration reload refused: the forwarder cannot start with this configuration/,
    );

    run.write(config); // fixed: the same as what runs
    expect(await reload(run)).toMatchObject({ outcome: 'unchanged' });
    samples = await metrics();
    expect(sampleValue(samples, 'sef_config_reloads_total', { outcome: 'invalid' })).toBe(2);
    expect(sampleValue(samples, 'sef_config_reloads_total', { outcome: 'unchanged' })).toBe(1);
    expect(sampleValue(samples, 'sef_config_last_reload_successful')).toBe(1);
  });

  it('a reload that changes nothing does nothing; restart-only settings are named and left as they run; SIGTERM still stops cleanly', async () => {
    const a = path('a.jsonl');
    const up = await server(200);
    const config = { sinks: [fileSink('a', a), hookSink('w', up)] };
    const run = await start(config);
    const e1 = newEvent(run.sim);
    await waitFor(() => fileEvents(a).length === 1 && up.requests.length === 1, 'E1 at both');

    const same = await reload(run);
    expect(same).toMatchObject({ outcome: 'unchanged', level: 30 });
    expect(same.msg).toBe('configuration reloaded: nothing changed, nothing done');

    run.write({ ...config, imds: { pollIntervalMs: 400 }, stateDir: path('other-state') });
    const restart = await reload(run);
    expect(restart).toMatchObject({ outcome: 'needs-restart', level: 40 });
    expect(restart.needsRestart).toEqual(expect.arrayContaining(['stateDir', 'imds.pollIntervalMs']));
    expect(String(restart.msg)).toContain('only at the next start');

    const e2 = newEvent(run.sim); // the same state directory and sinks, no record twice
    await waitFor(() => fileEvents(a).length === 2 && up.requests.length === 2, 'E2 at both');
    expect(fileEvents(a)).toEqual([e1, e2]);
    expect(bodyEvents(up.jsonBodies())).toEqual([e1, e2]);
    await waitFor(() => pending(run.stateDir, 'a') + pending(run.stateDir, 'w') === 0, 'empty queues');

    run.fwd.child.kill('SIGTERM');
    expect(await run.fwd.exited).toEqual({ code: 0, signal: null });
    expect(run.logs().some((l) => l.msg === 'forwarder stopped')).toBe(true);
  });

  it('heartbeats follow the sinks: the one that stays keeps its sequence, an added one gets them, a removed one none', async () => {
    const a = path('a.jsonl');
    const b = path('b.jsonl');
    const beat = (name: string, file: string) => ({ ...fileSink(name, file), heartbeats: true });
    const run = await start({ heartbeat: { intervalSeconds: 1 }, sinks: [beat('a', a)] });
    type Beat = {
      type: string;
      data: { trigger: string; sequence: number; forwarder: { configDigest: string } };
    };
    const beats = (file: string) =>
      readFileSinkRecords<Beat>(file).filter((r) => r.type.endsWith('.forwarder.heartbeat'));
    await waitFor(() => beats(a).length >= 2, 'two heartbeats at a');

    run.write({ heartbeat: { intervalSeconds: 1 }, sinks: [beat('a', a), beat('b', b)] });
    expect(await reload(run)).toMatchObject({ outcome: 'applied', added: ['b'] });
    await waitFor(() => beats(b).length >= 2, 'two heartbeats at b');
    // a: one stream, 1, 2, 3, … with no stop and no second start; b: its own from the reload on.
    const atA = beats(a);
    expect(atA.map((h) => h.data.sequence)).toEqual(atA.map((_, i) => i + 1));
    expect(atA.filter((h) => h.data.trigger !== 'interval').map((h) => h.data.trigger)).toEqual(['start']);
    expect(beats(b)[0]!.data.sequence).toBe(1);
    // The new configuration's digest from the reload on.
    expect(beats(b)[0]!.data.forwarder.configDigest).not.toBe(atA[0]!.data.forwarder.configDigest);

    run.write({ heartbeat: { intervalSeconds: 1 }, sinks: [beat('a', a)] });
    expect(await reload(run)).toMatchObject({ outcome: 'applied', removed: ['b'] });
    const atB = beats(b).length;
    const atAfter = beats(a).length;
    await waitFor(() => beats(a).length >= atAfter + 3, 'three more heartbeats at a');
    expect(beats(b).length).toBe(atB);
    run.fwd.child.kill('SIGTERM');
    expect((await run.fwd.exited).code).toBe(0);
    expect(beats(a).at(-1)!.data.trigger).toBe('stop');
  });

  it('the alert re-sends follow the sinks: a removed Alertmanager sink gets none, an added one gets its own', async () => {
    const [a, b] = await Promise.all([AlertmanagerDouble.start(), AlertmanagerDouble.start()]);
    cleanups.push(() => Promise.all([a.close(), b.close()]));
    const am = (name: string, double: AlertmanagerDouble) => ({
      name,
      type: 'alertmanager',
      urls: [double.baseUrl],
      resendIntervalSeconds: 1,
    });
    const run = await start({ sinks: [am('am-a', a)] });
    const eventId = newEvent(run.sim);
    await waitFor(() => a.requests.length >= 2, 'the alert and a re-send at a');

    run.write({ sinks: [am('am-b', b)] });
    expect(await reload(run)).toMatchObject({ outcome: 'applied', added: ['am-b'], removed: ['am-a'] });
    const atRemoval = a.requests.length;
    // b never got the scheduled record (committed before it was added): what it gets are re-sends of the
    // pending event, from the committed state, one a second. Two of them: a's interval has passed twice.
    await waitFor(() => b.requests.length >= 2, 'two re-sends at b');
    expect(b.active().map((alert) => alert.labels.event_id)).toEqual([eventId]);
    expect(a.requests.length).toBe(atRemoval);
    expect(pending(run.stateDir, 'am-b')).toBe(0);
  });

  it('a reload requested while the forwarder starts is applied once it runs; one after it stopped does nothing', async () => {
    const sim = await startSimulator({ vmName: VM, timeScale: 0 });
    cleanups.push(() => sim.close());
    const a = path('a.jsonl');
    const b = path('b.jsonl');
    const raw = (sinks: unknown[]) => ({
      stateDir: path('state'),
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      sinks,
    });
    let ready = false;
    const run = startForwarder({
      config: loadConfig({ overrides: raw([fileSink('a', a)]) }),
      observer: { ready: () => (ready = true) },
    });
    cleanups.push(() => run.stop());
    // Asked before the store is even open: waits for the start, then applies.
    const early = await run.forwarder.reload(async () =>
      loadConfig({ overrides: raw([fileSink('a', a), fileSink('b', b)]) }),
    );
    expect(ready).toBe(true);
    expect(early).toMatchObject({ outcome: 'applied', added: ['b'], sinks: ['a', 'b'] });
    const e1 = newEvent(sim);
    await waitFor(() => fileEvents(b).length === 1, 'E1 at the sink the early reload added');
    expect(fileEvents(b)).toEqual([e1]);
    await run.stop();
    let loads = 0;
    expect(
      await run.forwarder.reload(async () => {
        loads++;
        return loadConfig({ overrides: raw([]) });
      }),
    ).toBeUndefined();
    expect(loads).toBe(0);
  });
});

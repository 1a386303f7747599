/**
 * The linux-x64 single executable, as released, run with no Node.js on PATH (and none needed): --version,
 * `config validate` for every sink type, and `run` with one sink of every type against the project's IMDS
 * simulator and real local receivers (Event Hubs AMQP double, OTLP http/protobuf, http/json and gRPC
 * receivers, an HTTP server for webhook/Slack/Teams, a file, a command) — which proves every lazily loaded
 * sink implementation is inside the executable. Also `simulate`, `events`, `outbox`, `deadletters` and `demo`
 * (its scenario is embedded).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/index.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../support/event-hubs-double/index.ts';
import { HttpSinkServer } from '../support/http-sink-server.ts';
import {
  type OtlpGrpcReceiver,
  type OtlpHttpReceiver,
  startOtlpGrpcReceiver,
  startOtlpHttpReceiver,
} from '../support/otlp-receiver.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { artifact, FILES, pathWithout, start, VERSION, whichIn } from './release.ts';

const tmp = makeTempDir('sef-pkg-x64-');
afterAll(() => tmp.cleanup());
let exe: string;
let env: Record<string, string>;

beforeAll(() => {
  // A copy outside the repository, so nothing can be found in ./node_modules up the tree.
  exe = join(tmp.dir, 'scheduled-events-forwarder');
  copyFileSync(artifact(FILES.executable('linux-x64')), exe);
  chmodSync(exe, 0o755);
  const path = pathWithout(tmp.dir, ['sh', 'cat']);
  env = { PATH: path, HOME: tmp.dir, HTTP_PROXY: '', HTTPS_PROXY: '', NO_PROXY: '' };
});

async function runAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = start(exe, args, env, tmp.dir);
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

const cli = (args: string[], extra: Record<string, string> = {}) =>
  spawnSync(exe, args, { env: { ...env, ...extra }, cwd: tmp.dir, encoding: 'utf8', timeout: 60_000 });

describe('linux-x64 executable without Node.js', () => {
  it('runs with a PATH that has no node', () => {
    expect(whichIn(env.PATH!, 'node')).toBe(false);
    const result = cli(['--version']);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(VERSION);
    expect(result.status).toBe(0);
  });

  it('config validate accepts a config with every sink type, and names a bad key', () => {
    const config = join(tmp.dir, 'every-sink.yaml');
    writeFileSync(
      config,
      [
        'sinks:',
        '  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH } }',
        '  - { name: otel-proto, type: otel, protocol: http/protobuf, endpoint: "http://127.0.0.1:4318" }',
        '  - { name: otel-json, type: otel, protocol: http/json, endpoint: "http://127.0.0.1:4318" }',
        '  - { name: otel-grpc, type: otel, protocol: grpc, endpoint: "http://127.0.0.1:4317" }',
        '  - { name: hook, type: webhook, url: "http://127.0.0.1:9/hook" }',
        '  - { name: slack, type: slack, url: "http://127.0.0.1:9/slack" }',
        '  - { name: teams, type: teams, url: "http://127.0.0.1:9/teams" }',
        '  - { name: file, type: file, path: ./records.jsonl }',
        '  - { name: exec, type: exec, command: /bin/sh, args: ["-c", "cat >/dev/null"] }',
        '  - { name: out, type: stdout }',
        '',
      ].join('\n'),
    );
    const eh =
      'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=x;EntityPath=h';
    const ok = cli(['config', 'validate', config], { SEF_TEST_EH: eh });
    expect(ok.stdout).toContain(
      'sinks: eh (eventhubs), otel-proto (otel), otel-json (otel), otel-grpc (otel), hook (webhook), ' +
        'slack (slack), teams (teams), file (file), exec (exec), out (stdout)',
    );
    expect(ok.status).toBe(0);

    writeFileSync(config, 'sinks:\n  - { name: f, type: file, path: ./x.jsonl, colour: blue }\n');
    const bad = cli(['config', 'validate', config]);
    expect(bad.stderr).toMatch(/colour/);
    expect(bad.status).toBe(2);
  });

  it('the embedded scenarios are there: simulate lists them, demo plays its own', () => {
    const list = cli(['simulate', '--list-scenarios']);
    expect(list.stdout).toMatch(/user-reboot/);
    expect(list.stdout).toMatch(/spot-preempt/);
    expect(list.status).toBe(0);

    // Its help names no path (the demo scenario is embedded in the executable, not a file next to it).
    const demoHelp = cli(['demo', '--help']);
    expect(demoHelp.stdout).toMatch(/default: the built-in demo scenario/);
    expect(demoHelp.stdout).not.toMatch(/demo\.scenario\.yaml|\/config\//);
    const demo = cli(['demo', '--time-scale', '120', '--poll-interval', '200']);
    expect(demo.stderr).toMatch(/scenario finished/);
    const records = demo.stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { specversion: string });
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((r) => r.specversion === '1.0')).toBe(true);
    expect(demo.status).toBe(0);
  });

  it('carries the fleet commands (evaluated only when they run)', () => {
    const help = cli(['fleet', 'run', '--help']);
    expect(help.stdout).toMatch(/Consume lifecycle records from Event Hubs/);
    expect(help.status).toBe(0);
    const report = cli(['fleet', 'report', '--database', join(tmp.dir, 'no-such-fleet.db')]);
    expect(report.stderr).toMatch(/fleet database .*no-such-fleet\.db does not exist/);
  });

  describe('run with one sink of every type', () => {
    let double: EventHubsDouble;
    let otlpProto: OtlpHttpReceiver;
    let otlpJson: OtlpHttpReceiver;
    let otlpGrpc: OtlpGrpcReceiver;
    let hooks: HttpSinkServer;
    beforeAll(async () => {
      [double, otlpProto, otlpJson, otlpGrpc, hooks] = await Promise.all([
        startEventHubsDouble({ hubs: { records: 2 } }),
        startOtlpHttpReceiver(),
        startOtlpHttpReceiver(),
        startOtlpGrpcReceiver(),
        HttpSinkServer.start(),
      ]);
    });
    afterAll(async () => {
      await Promise.all([
        double.close(),
        otlpProto.close(),
        otlpJson.close(),
        otlpGrpc.close(),
        hooks.close(),
      ]);
    });

    it('delivers the scheduled record to every sink, then the CLI tools read the outbox', async () => {
      const sim = await startSimulator({});
      const state = join(tmp.dir, 'run-state');
      const records = join(tmp.dir, 'records.jsonl');
      const execOut = join(tmp.dir, 'exec.jsonl');
      const config = join(tmp.dir, 'run.yaml');
      writeFileSync(
        config,
        [
          `imds: { endpoint: "${sim.url}", pollIntervalMs: 200 }`,
          `stateDir: ${state}`,
          'sinks:',
          '  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH } }',
          `  - { name: otel-proto, type: otel, protocol: http/protobuf, endpoint: "${otlpProto.url}" }`,
          `  - { name: otel-json, type: otel, protocol: http/json, endpoint: "${otlpJson.url}" }`,
          `  - { name: otel-grpc, type: otel, protocol: grpc, endpoint: "${otlpGrpc.url}" }`,
          `  - { name: hook, type: webhook, url: "${hooks.url('/hook')}" }`,
          `  - { name: slack, type: slack, url: "${hooks.url('/slack')}" }`,
          `  - { name: teams, type: teams, url: "${hooks.url('/teams')}" }`,
          `  - { name: file, type: file, path: ${records} }`,
          `  - { name: exec, type: exec, command: /bin/sh, args: ["-c", "cat >> ${execOut}; echo >> ${execOut}"] }`,
          '',
        ].join('\n'),
      );
      const child = start(
        exe,
        ['run', '--config', config],
        { ...env, SEF_TEST_EH: double.connectionString('records') },
        tmp.dir,
      );
      try {
        const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
        const scheduled = (text: string) => text.includes(event.id) && text.includes('scheduled');
        await waitFor(
          () => {
            try {
              return scheduled(readFileSync(records, 'utf8')) && scheduled(readFileSync(execOut, 'utf8'));
            } catch {
              return false;
            }
          },
          'the record in the file and exec sinks',
          { timeoutMs: 60_000 },
        );
        // The record, and the heartbeats the executable sends to Event Hubs by default.
        const onHub = (type: string) =>
          double.received('records').find((e) => (e.body as { type?: string }).type?.endsWith(type));
        await waitFor(
          () => onHub('.scheduled') && onHub('.heartbeat'),
          'the record and a heartbeat at the hub',
          {
            timeoutMs: 60_000,
          },
        );
        await waitFor(() => otlpProto.acceptedRecords().length >= 1, 'OTLP http/protobuf', {
          timeoutMs: 60_000,
        });
        await waitFor(() => otlpJson.acceptedRecords().length >= 1, 'OTLP http/json', { timeoutMs: 60_000 });
        await waitFor(() => otlpGrpc.acceptedRecords().length >= 1, 'OTLP gRPC', { timeoutMs: 60_000 });
        await waitFor(
          () => ['/hook', '/slack', '/teams'].every((p) => hooks.requests.some((r) => r.url.startsWith(p))),
          'webhook, Slack and Teams requests',
          { timeoutMs: 60_000 },
        );
        const fileRecord = JSON.parse(readFileSync(records, 'utf8').split('\n')[0]!) as Record<
          string,
          unknown
        >;
        expect(fileRecord.specversion).toBe('1.0');
        expect(JSON.stringify(onHub('.scheduled'))).toContain(event.id);
        expect(hooks.requests.find((r) => r.url.startsWith('/teams'))?.body).toContain('AdaptiveCard');

        // events and approve talk to the (in-process) simulator: spawned asynchronously.
        const events = await runAsync(['events', '--imds-endpoint', sim.url]);
        expect(events.stdout).toContain(event.id);
        expect(events.code).toBe(0);
        const approve = await runAsync(['approve', '--imds-endpoint', sim.url, event.id]);
        expect(approve.code).toBe(0);
      } finally {
        child.kill('SIGTERM');
        await child.exited;
        await sim.close();
      }
      // The store the executable wrote, read by the executable's own tools.
      // Every record was delivered to every sink: nothing left in the outbox, no dead letters.
      const outbox = cli(['outbox', 'status', '--config', config]);
      expect(outbox.stdout).toMatch(/nothing pending/);
      expect(outbox.status).toBe(0);
      const dead = cli(['deadletters', 'list', '--config', config]);
      expect(dead.stdout).toMatch(/no dead letters/i);
      expect(dead.status).toBe(0);
      expect(child.stderr()).not.toMatch(/SharedAccessKey=/);
    });
  });
});

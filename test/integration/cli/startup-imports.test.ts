/**
 * Start-up footprint guard: the CLI's cheap paths and the `run` path with a stdout sink must not load the SDKs of
 * sinks that are not configured (each costs tens of milliseconds and megabytes on every VM), `run` loads no
 * other command and no YAML parser without a config file, and `run` keeps V8's young generation at its initial
 * size (src/cli/heap.ts). Checked by the packages and modules a real child process resolves and the heap it
 * reports at exit, never by timing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_TYPE } from '../../../src/domain/index.ts';
import { startSimulator } from '../../../src/simulator/index.ts';
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { generateTestCertificate, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { heavyIn } from '../../support/heavy-packages.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const HOOK = join(REPO, 'test', 'support', 'record-packages.mjs');
const tmp = makeTempDir('sef-startup-');
afterAll(() => tmp.cleanup());

let runs = 0;
/** A fresh file for one child's package list. */
const packagesFile = () => join(tmp.dir, `packages-${++runs}.json`);
interface Loaded {
  packages: string[];
  /** The project's own modules, relative to the repository (src/cli/commands/run.ts, ...). */
  modules: string[];
  /** The files of zod's locale folder it loaded (src/cli/zod-locales.ts: English only). */
  zodLocales: string[];
  /** V8 new space size (bytes) when the run command module loaded, the largest after a GC, and at exit. */
  youngGeneration: { atRun?: number; max: number; atExit: number };
}
const readLoaded = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Loaded;
const readPackages = (file: string) => readLoaded(file).packages;
/** The command modules (src/cli/commands/<name>.ts) a child loaded, by name. */
const commandsIn = (modules: string[]) =>
  modules.flatMap((m) => /^src\/cli\/commands\/([^/]+)\.ts$/.exec(m)?.[1] ?? []).sort();

/** Runs the CLI with `args`; returns its exit code, stdout and the npm packages it loaded. */
function cli(
  args: string[],
  env: Record<string, string> = {},
): { status: number | null; stdout: string; packages: string[] } {
  const file = packagesFile();
  const result = spawnSync(process.execPath, ['--import', HOOK, MAIN, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, ...env, SEF_TEST_PACKAGES_FILE: file },
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, packages: readPackages(file) };
}

describe('start-up imports', () => {
  it('--version loads commander only', () => {
    const { status, stdout, packages } = cli(['--version']);
    expect(status).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(packages).toEqual(['commander']);
  });

  it('--help lists every command without loading an SDK', () => {
    const { status, stdout, packages } = cli(['--help']);
    expect(status).toBe(0);
    for (const command of [
      'config',
      'run',
      'demo',
      'simulate',
      'events',
      'approve',
      'outbox',
      'deadletters',
      'fleet',
    ]) {
      expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
    // Every sink type of the registry, in the description (wrapped by commander).
    const description = stdout.slice(0, stdout.indexOf('Options:')).replace(/\s+/g, ' ');
    expect(description).toContain(`(types: ${SINK_FACTORIES.map((f) => f.type).join(', ')};`);
    expect(heavyIn(packages)).toEqual([]);
  });

  const eventHubs =
    'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=x;EntityPath=h';
  /** A config file with every sink type (the Event Hubs connection string from SEF_TEST_EH). */
  function allSinksConfig(): string {
    const config = join(tmp.dir, 'all-sinks.yaml');
    const yaml = [
      'sinks:',
      // Heartbeats off: the start heartbeat is a delivery (it loads the SDK: the test below), and this hub is
      // not on loopback.
      '  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH }, heartbeats: false }',
      '  - { name: azmon, type: azuremonitor, endpoint: "https://127.0.0.1:9", ruleId: dcr-0123456789abcdef0123456789abcdef }',
      '  - { name: otel, type: otel, endpoint: "http://127.0.0.1:4318" }',
      '  - { name: hook, type: webhook, url: "http://127.0.0.1:9/hook" }',
      '  - { name: slack, type: slack, url: "http://127.0.0.1:9/slack" }',
      '  - { name: teams, type: teams, url: "http://127.0.0.1:9/teams" }',
      '  - { name: out, type: stdout }',
      `  - { name: file, type: file, path: ${JSON.stringify(join(tmp.dir, 'all-sinks.jsonl'))} }`,
      '  - { name: exec, type: exec, command: "true" }',
    ].join('\n');
    writeFileSync(config, `${yaml}\n`);
    return config;
  }

  it('config validate of a config with every sink type loads no SDK', () => {
    const config = allSinksConfig();
    const { status, stdout, packages } = cli(['config', 'validate', config], { SEF_TEST_EH: eventHubs });
    expect(stdout).toMatch(/is valid/);
    expect(status).toBe(0);
    expect(heavyIn(packages)).toEqual([]);
  });

  /**
   * Runs `node ...nodeArgs main run --imds-endpoint SIM ...args` until it polled (and `until` holds), stops it;
   * what it loaded.
   */
  async function runUntilPolled(
    args: string[],
    nodeArgs: string[] = [],
    env: Record<string, string> = {},
    until: () => boolean = () => true,
    afterExit?: (sim: Awaited<ReturnType<typeof startSimulator>>) => void,
  ): Promise<Loaded> {
    const sim = await startSimulator({});
    try {
      const file = packagesFile();
      const argv = [...nodeArgs, '--import', HOOK, MAIN, 'run', '--imds-endpoint', sim.url, ...args];
      const child = spawn(process.execPath, [...argv, '--state-dir', join(tmp.dir, `state-${runs}`)], {
        cwd: REPO,
        env: { ...process.env, ...env, SEF_TEST_PACKAGES_FILE: file, HTTP_PROXY: '', HTTPS_PROXY: '' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      const exited = once(child, 'exit');
      const polled = () => sim.admin.requests().log.some((e) => e.endpoint === 'scheduledevents');
      await waitFor(
        () => polled() && stderr.includes('"msg":"forwarder running"') && until(),
        'the forwarder to run and poll the simulator',
      );
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
      afterExit?.(sim);
      return readLoaded(file);
    } finally {
      await sim.close();
    }
  }

  it('run with the stdout sink polls without loading an SDK, prom-client, pino-pretty, yaml or other commands', async () => {
    const { packages, modules, zodLocales, youngGeneration } = await runUntilPolled(['--sink', 'stdout']);
    expect(packages).toContain('pino');
    // zod's ~50 locales are not loaded, English only (src/cli/zod-locales.ts).
    expect(zodLocales).toEqual(['en.js']);
    expect(heavyIn(packages)).toEqual([]);
    expect(packages).not.toContain('yaml'); // no config file: nothing to parse
    // run.ts only: never config, demo, simulate, fleet, ...
    expect(commandsIn(modules)).toEqual(['run']);
    // Without a `kubernetes` section nothing of the node agent loads: only its config schema (part of the one
    // schema); the agent, node hook, reporter, cluster approval and client load with `kubernetes.enabled` only.
    expect(modules.filter((m) => m.startsWith('src/kubernetes/'))).toEqual(['src/kubernetes/config.ts']);
    // src/cli/heap.ts: once `run` is chosen, start-up does not grow the semi-spaces, however much it allocates
    // (V8 defaults return when the pipeline is ready: at most one doubling may follow before this child exits;
    // without the setting, start-up grows them fourfold, see the operator test below).
    expect(youngGeneration.atRun).toBeGreaterThan(0);
    expect(youngGeneration.max).toBeLessThanOrEqual(2 * (youngGeneration.atRun ?? 0));
  });

  it('run with a config file loads the YAML parser, still no other command', async () => {
    const config = join(tmp.dir, 'stdout.yaml');
    writeFileSync(config, 'sinks:\n  - { name: out, type: stdout }\n');
    const { packages, modules } = await runUntilPolled(['--config', config]);
    expect(packages).toContain('yaml');
    expect(heavyIn(packages)).toEqual([]);
    expect(commandsIn(modules)).toEqual(['run']);
  });

  it('run with every sink type configured loads no SDK until a sink has something to deliver', async () => {
    // The simulator has no event: nothing is committed, so no sink delivers. The Azure SDKs, the OpenTelemetry SDK
    // and undici load at a sink's first delivery (tested with deliveries in test/unit/sinks/compliance.test.ts).
    const { packages, zodLocales } = await runUntilPolled(['--config', allSinksConfig()], [], {
      SEF_TEST_EH: eventHubs,
    });
    expect(zodLocales).toEqual(['en.js']);
    // mustache (7 KB) stays: Slack and Teams templates compile when the sink is created, so a broken template
    // is reported at start-up rather than at the first message.
    expect(heavyIn(packages).filter((p) => p !== 'mustache')).toEqual([]);
  });

  it('run with an Event Hubs sink loads its SDK for the start heartbeat (heartbeats are on by default there)', async () => {
    const double = await startEventHubsDouble({ hubs: { beats: 1 } });
    try {
      const config = join(tmp.dir, 'hub.yaml');
      writeFileSync(
        config,
        'sinks:\n  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH } }\n',
      );
      const { packages } = await runUntilPolled(
        ['--config', config],
        [],
        { SEF_TEST_EH: double.connectionString('beats') },
        () => double.received('beats').length > 0, // the start heartbeat
      );
      expect(heavyIn(packages)).toContain('@azure/event-hubs');
    } finally {
      await double.close();
    }
  });

  it('run with an Event Hubs connection string (TLS) sends the start heartbeat over REST without loading the SDK', async () => {
    const cert = generateTestCertificate(tmp.dir);
    const double = await startEventHubsDouble({
      hubs: { beats: 2 },
      tls: { key: cert.key, cert: cert.cert },
    });
    try {
      const config = join(tmp.dir, 'hub-rest.yaml');
      writeFileSync(
        config,
        'sinks:\n  - { name: eh, type: eventhubs, connectionString: { env: SEF_TEST_EH } }\n',
      );
      const { packages } = await runUntilPolled(
        ['--config', config],
        [],
        { SEF_TEST_EH: double.connectionString('beats'), NODE_EXTRA_CA_CERTS: cert.certPath },
        () => double.received('beats').length > 0, // the start heartbeat
      );
      // The start and the stop heartbeat, both over REST; no AMQP connection was opened.
      const beats = double.received('beats');
      expect(beats.map((e) => [e.transport, e.body && (e.body as { type?: string }).type])).toEqual([
        ['rest', HEARTBEAT_TYPE],
        ['rest', HEARTBEAT_TYPE],
      ]);
      expect(double.stats().connectionsOpened).toBe(0);
      expect(heavyIn(packages)).toEqual([]);
    } finally {
      await double.close();
    }
  });

  it('run with an Event Hubs managed identity sends heartbeats over REST with an IMDS token, loading no SDK', async () => {
    const cert = generateTestCertificate(tmp.dir);
    const double = await startEventHubsDouble({
      hubs: { beats: 2 },
      tls: { key: cert.key, cert: cert.cert },
    });
    try {
      const config = join(tmp.dir, 'hub-mi.yaml');
      writeFileSync(
        config,
        [
          'sinks:',
          `  - { name: eh, type: eventhubs, fullyQualifiedNamespace: '${double.namespaceHost}', eventHubName: beats }`,
          '',
        ].join('\n'),
      );
      let tokenRequests = 0;
      const { packages } = await runUntilPolled(
        ['--config', config],
        [],
        { NODE_EXTRA_CA_CERTS: cert.certPath, AZURE_POD_IDENTITY_AUTHORITY_HOST: '' },
        () => double.received('beats').length > 0, // the start heartbeat
        (sim) => {
          tokenRequests = sim.admin.requests().log.filter((e) => e.endpoint === 'token').length;
        },
      );
      // Start and stop heartbeat over REST with the simulator's token (audience https://eventhubs.azure.net/),
      // fetched once from the IMDS endpoint the forwarder polls and reused.
      expect(double.received('beats').map((e) => e.transport)).toEqual(['rest', 'rest']);
      expect(double.restRequests().map((r) => [r.status, r.auth])).toEqual([
        [201, 'jwt'],
        [201, 'jwt'],
      ]);
      expect(tokenRequests).toBe(1);
      expect(double.stats().connectionsOpened).toBe(0);
      expect(heavyIn(packages)).toEqual([]);
    } finally {
      await double.close();
    }
  });

  it('an operator who sizes the young generation keeps their setting (and V8 grows it during start-up)', async () => {
    const { youngGeneration } = await runUntilPolled(['--sink', 'stdout'], ['--max-semi-space-size=16']);
    expect(youngGeneration.max).toBeGreaterThanOrEqual(
      4 * (youngGeneration.atRun ?? Number.POSITIVE_INFINITY),
    );
  });
});

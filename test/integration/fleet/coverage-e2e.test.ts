/**
 * Coverage end to end (issue 33), on both stores: three real `run` processes (one simulator serving each VM's
 * identity; `heartbeat.intervalSeconds: 1`) send records (over AMQP) and heartbeats (over the REST API: a key
 * connection string, docs/sinks-event-hubs.md) through their Event Hubs sinks to the double listening with TLS
 * (the children trust its certificate through NODE_EXTRA_CA_CERTS); a real `fleet run` child (reading with the SDK
 * over AMQP) (Blob checkpoints in Azurite; `coverage.silentMargin: 2s`) keeps the
 * history in a SQLite file or a PostgreSQL database. Through its /api/coverage, /metrics (forwarders by state and
 * by version) and `fleet report --coverage`:
 *
 * - every VM reports at first; the one whose webhook sink refuses its record (HTTP 400: a dead letter) is
 *   unhealthy, with the problem named;
 * - a forwarder SIGKILLed sends nothing more: once its interval and the margin have passed — measured up to how
 *   far the consumer read its partition — it is silent, with when it was last seen; the others are not.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { HEARTBEAT_TYPE } from '../../../src/domain/index.ts';
import type { CoverageReport } from '../../../src/fleet/history/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { readVersion } from '../../../src/version.ts';
import { type ForwarderChild, runCli, spawnCli } from '../../support/child.ts';
import {
  type EventHubsDouble,
  generateTestCertificate,
  startEventHubsDouble,
  type TestCertificate,
} from '../../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../../support/fleet-config.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { type FleetChild, type RunningAzurite, spawnFleet, startAzurite } from './helpers.ts';

const HUB = 'coverage';
const GROUP = 'fleet';
const tmp = makeTempDir('sef-coverage-e2e-');
let double: EventHubsDouble;
let cert: TestCertificate;
let azurite: RunningAzurite;
let sim: RunningSimulator;
let refusing: HttpSinkServer;
const children: Array<ForwarderChild | FleetChild> = [];
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  mkdirSync(join(tmp.dir, 'azurite'));
  azurite = await startAzurite(join(tmp.dir, 'azurite'));
  cert = generateTestCertificate(tmp.dir);
  double = await startEventHubsDouble({
    hubs: { [HUB]: 4 },
    consumerGroups: ['$Default', GROUP],
    tls: { key: cert.key, cert: cert.cert },
  });
  sim = await startSimulator({ timeScale: 0 });
  refusing = await HttpSinkServer.start({ status: 400, body: 'no such thing' });
}, 60_000);

afterEach(async () => {
  for (const c of children.splice(0))
    if (c.child.exitCode === null && c.child.signalCode === null) {
      c.child.kill('SIGKILL');
      await c.exited;
    }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await refusing?.close();
  await sim?.close();
  await double?.close();
  await azurite?.close();
  tmp.cleanup();
});

let runs = 0;

/** `run` for VM `name` of the simulator: Event Hubs sink (heartbeats on by default) and the extra sinks. */
function startForwarder(name: string, extraSinks: string[] = []): ForwarderChild {
  const dir = join(tmp.dir, `run-${runs++}-${name}`);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'forwarder.yaml');
  writeFileSync(
    config,
    [
      `stateDir: ${JSON.stringify(join(dir, 'state'))}`,
      `imds: { endpoint: ${JSON.stringify(sim.vmUrl(name))}, pollIntervalMs: 200 }`,
      'heartbeat: { intervalSeconds: 1 }',
      'log: { level: info }',
      'sinks:',
      '  - name: hub',
      '    type: eventhubs',
      '    connectionString: { env: SEF_COVERAGE_EH }',
      '    retry: { maxRetries: 1, retryDelayMs: 50, maxRetryDelayMs: 200, timeoutMs: 3000 }',
      ...extraSinks,
      '',
    ].join('\n'),
  );
  const child = spawnCli(['run', '--config', config], {
    SEF_COVERAGE_EH: double.connectionString(HUB),
    NODE_EXTRA_CA_CERTS: cert.certPath,
  });
  children.push(child);
  return child;
}

async function coverage(dashboard: string): Promise<CoverageReport> {
  const res = await fetch(`${dashboard}/api/coverage`);
  expect(res.status).toBe(200);
  return (await res.json()) as CoverageReport;
}

const names = (report: CoverageReport, list: 'silent' | 'unhealthy') =>
  report[list].items.map((v) => v.vmName).sort();

describe.each(['sqlite', 'postgres'] as const)('coverage through fleet run (%s)', (kind) => {
  it('shows a SIGKILLed forwarder silent after its interval and one with dead letters unhealthy', async () => {
    const tag = `${kind}-${runs}`;
    const vms = { ok: `vm-ok-${tag}`, killed: `vm-killed-${tag}`, sick: `vm-sick-${tag}` };
    for (const name of Object.values(vms)) sim.admin.addVm(name, { availabilitySet: `set-${name}` });

    let database = join(tmp.dir, `fleet-${tag}.db`);
    const env: Record<string, string> = {
      SEF_FLEET_EH: double.connectionString(HUB),
      SEF_FLEET_BLOB: azurite.connectionString,
      NODE_EXTRA_CA_CERTS: cert.certPath,
    };
    if (kind === 'postgres') {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      cleanups.push(() => db.drop());
      database = db.url;
      env.SEF_FLEET_DB = db.url;
    }
    const cwd = join(tmp.dir, `consumer-${tag}`);
    mkdirSync(cwd, { recursive: true });
    writeFleetConfig(join(cwd, 'fleet.yaml'), {
      group: GROUP,
      database: kind === 'postgres' ? { env: 'SEF_FLEET_DB' } : database,
      extra: ['coverage: { silentMargin: 2s, goneAfter: 1h, backlogAfter: 30m }'],
    });
    const consumer = spawnFleet(['--config', 'fleet.yaml'], env, { cwd });
    children.push(consumer);
    const { dashboard } = await consumer.ready;

    const ok = startForwarder(vms.ok);
    const killed = startForwarder(vms.killed);
    const sick = startForwarder(vms.sick, [
      `  - { name: hook, type: webhook, url: ${JSON.stringify(refusing.url('/hook'))}, filter: { scope: all } }`,
    ]);
    await Promise.all([ok.ready, killed.ready, sick.ready]);
    // The sick VM's record is refused for good (400): a dead letter, reported by its next heartbeats.
    sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 900, resources: [vms.sick] });

    const first = await waitFor(
      async () => {
        const report = await coverage(dashboard!);
        const ours = report.vms === 3 && report.byState.reporting === 2 && report.byState.unhealthy === 1;
        return ours ? report : undefined;
      },
      'three VMs covered, the one with a dead letter unhealthy',
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(names(first, 'unhealthy')).toEqual([vms.sick]);
    expect(first.unhealthy.items[0]!.problems).toEqual([
      { code: 'dead-letters', sink: 'hook', detail: 'sink hook: 1 dead letter' },
    ]);
    expect(first.silent.total).toBe(0);
    // What the consumer ingested came in both ways: heartbeats over REST, the record over AMQP.
    const mine = double
      .received(HUB)
      .filter((e) => Object.values(vms).some((vm) => JSON.stringify(e.body).includes(vm)));
    const isBeat = (e: (typeof mine)[number]) => (e.body as { type?: string }).type === HEARTBEAT_TYPE;
    expect(new Set(mine.filter(isBeat).map((e) => e.transport))).toEqual(new Set(['rest']));
    expect(new Set(mine.filter((e) => !isBeat(e)).map((e) => e.transport))).toEqual(new Set(['amqp']));

    killed.child.kill('SIGKILL');
    await killed.exited;
    const afterKill = await waitFor(
      async () => {
        const report = await coverage(dashboard!);
        return report.byState.silent === 1 ? report : undefined;
      },
      'the SIGKILLed forwarder to show as silent',
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(names(afterKill, 'silent')).toEqual([vms.killed]);
    const silent = afterKill.silent.items[0]!;
    expect(silent.reason).toMatch(/^no heartbeat for \d+ s \(interval 1 s\); last heartbeat /);
    expect(silent.quietSeconds).toBeGreaterThanOrEqual(3);
    expect(afterKill.byState).toMatchObject({ reporting: 1, unhealthy: 1, gone: 0 });

    // The metrics and `fleet report --coverage` say the same.
    const metrics = await (await fetch(`${dashboard}/metrics`)).text();
    expect(metrics).toMatch(/^sef_fleet_forwarders\{state="silent"\} 1$/m);
    expect(metrics).toMatch(/^sef_fleet_forwarders\{state="unhealthy"\} 1$/m);
    expect(metrics).toMatch(/^sef_fleet_heartbeats_total [1-9]\d*$/m);
    // By forwarder version (all three run this build): one per state.
    const version = readVersion().replaceAll('.', '\\.');
    for (const [state, n] of [
      ['reporting', 1],
      ['silent', 1],
      ['unhealthy', 1],
      ['gone', 0],
    ])
      expect(metrics).toMatch(
        new RegExp(`^sef_fleet_forwarders_by_version\\{version="${version}",state="${state}"\\} ${n}$`, 'm'),
      );
    const report = await runCli(['fleet', 'report', '--coverage', '--database', database]);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toMatch(/^Silent now: 1$/m);
    expect(report.stdout).toContain(`  ${vms.killed}  `);
    expect(report.stdout).toMatch(new RegExp(`^  ${vms.sick} .*sink hook: 1 dead letter$`, 'm'));
    if (kind === 'postgres') expect(report.stdout).not.toContain(new URL(database).password);

    for (const child of [ok, sick]) {
      child.child.kill('SIGTERM');
      expect((await child.exited).code).toBe(0);
    }
    consumer.child.kill('SIGTERM');
    expect((await consumer.exited).code).toBe(0);
  }, 180_000);
});

/**
 * Acceptance: 20 simulated VMs (one simulator serving every identity) × scripted scenarios → 20 in-process
 * Forwarder instances (src/pipeline; 20 child processes would be too heavy on 2 cores) with the Event Hubs sink →
 * the AMQP double → the fleet consumer as real child processes (Blob checkpoints in Azurite) → SQLite.
 *
 * Consumer A runs alone, B joins (load balancing splits the partitions), A is SIGKILLed mid-stream and B takes
 * over every partition. Duplicates are injected by re-sending events. Counts and timelines must be exact.
 * Then the dashboard over that database is checked in headless Chromium (playwright-core).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { EventHubProducerClient } from '@azure/event-hubs';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import { FleetStore, listEvents, startDashboard, vmTimeline } from '../../../src/fleet/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { Forwarder } from '../../../src/pipeline/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import type { LifecycleRecord } from '../../../src/transform/record.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { type FleetChild, type RunningAzurite, spawnFleet, startAzurite } from './helpers.ts';

const HUB = 'lifecycle';
const GROUP = 'fleet';
const VM_COUNT = 20;
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, '..', '..', '..', 'test-artifacts', 'fleet');

/** The scripted scenario of each VM and the transitions its timeline must show. */
const VARIANTS = {
  'freeze-completed': ['scheduled', 'started', 'completed'],
  'reboot-canceled': ['scheduled', 'canceled'],
  'redeploy-rescheduled-completed': ['scheduled', 'updated', 'started', 'completed'],
  'hardware-failure': ['started', 'completed'],
  'preempt-vm-deleted': ['scheduled', 'started'],
  'terminate-pending': ['scheduled'],
} as const;
type Variant = keyof typeof VARIANTS;
const NAMES = Object.keys(VARIANTS) as Variant[];

function variantOf(i: number): Variant {
  return i >= 18 ? 'terminate-pending' : NAMES[i % 5]!;
}

interface Vm {
  name: string;
  variant: Variant;
  eventId: string;
  forwarder: Forwarder;
  controller: AbortController;
  running: Promise<unknown>;
  committed: LifecycleRecord[];
}

const tmp = makeTempDir('sef-fleet-');
let azurite: RunningAzurite;
let double: EventHubsDouble;
let sim: RunningSimulator;
const vms: Vm[] = [];
const children: FleetChild[] = [];
const databasePath = join(tmp.dir, 'fleet.db');

function expectedRecords(): number {
  return vms.reduce((n, vm) => n + VARIANTS[vm.variant].length, 0);
}

function dbCount(sql: string): number {
  if (!existsSync(databasePath)) return 0;
  const db = new DatabaseSync(databasePath, { readOnly: true, timeout: 5000 });
  try {
    return Number((db.prepare(sql).get() as { n: number } | undefined)?.n ?? 0);
  } catch {
    return 0; // schema not created yet
  } finally {
    db.close();
  }
}

async function status(child: FleetChild): Promise<{ partitions: string[] }> {
  const { dashboard } = await child.ready;
  const res = await fetch(`${dashboard}/api/status`);
  return (await res.json()) as { partitions: string[] };
}

function fleetConfigFile(name: string): string {
  const file = join(tmp.dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'eventHubs:',
      '  connectionString: { env: SEF_FLEET_EH }',
      `  consumerGroup: ${GROUP}`,
      '  maxWaitTimeMs: 200',
      '  loadBalancing: { updateIntervalMs: 500, ownershipExpirationMs: 3000 }',
      'checkpoints:',
      '  connectionString: { env: SEF_FLEET_BLOB }',
      '  containerName: fleet-checkpoints',
      `database: ${JSON.stringify(databasePath)}`,
      'dashboard: { port: 0 }',
      'log: { level: warn }',
      '',
    ].join('\n'),
  );
  return file;
}

/** Waits until every listed VM's forwarder has committed `count(vm)` records. */
async function forwardersCommitted(list: Vm[], count: (vm: Vm) => number, what: string): Promise<void> {
  await waitFor(() => list.every((vm) => vm.committed.length >= count(vm)), what, { timeoutMs: 30_000 });
}

beforeAll(async () => {
  mkdirSync(join(tmp.dir, 'azurite'));
  azurite = await startAzurite(join(tmp.dir, 'azurite'));
  double = await startEventHubsDouble({ hubs: { [HUB]: 4 }, consumerGroups: ['$Default', GROUP] });
  sim = await startSimulator({ timeScale: 0 });
  // The sink resolves its connection string secret from the process environment, as in production.
  process.env.SEF_FLEET_EH = double.connectionString(HUB);
  for (let i = 0; i < VM_COUNT; i++) {
    const name = i % 2 === 0 ? `web_${i}` : `api-${i}`;
    sim.admin.addVm(name, {
      availabilitySet: `set-${name}`, // each VM sees only its own events
      identity: { location: i < 10 ? 'westeurope' : 'norwayeast', zone: String(1 + (i % 3)) },
    });
    const config = loadConfig({
      overrides: {
        stateDir: join(tmp.dir, 'vms', name),
        imds: { endpoint: sim.vmUrl(name), pollIntervalMs: 200, firstRequestTimeoutMs: 5000 },
        log: { level: 'silent' },
        sinks: [
          {
            name: 'eventhubs',
            type: 'eventhubs',
            connectionString: { env: 'SEF_FLEET_EH' },
            retry: { maxRetries: 1, retryDelayMs: 50, maxRetryDelayMs: 200, timeoutMs: 3000 },
          },
        ],
      },
    });
    const committed: LifecycleRecord[] = [];
    const forwarder = new Forwarder({
      config,
      logger: silentLogger(),
      bootTimeMs: Date.now() - 3_600_000,
      observer: { committed: (info) => committed.push(...info.records) },
    });
    const controller = new AbortController();
    vms.push({
      name,
      variant: variantOf(i),
      eventId: '',
      forwarder,
      controller,
      running: forwarder.run(controller.signal),
      committed,
    });
  }
}, 60_000);

afterAll(async () => {
  delete process.env.SEF_FLEET_EH;
  for (const vm of vms) vm.controller.abort();
  await Promise.allSettled(vms.map((vm) => vm.running));
  for (const c of children)
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await Promise.allSettled(children.map((c) => c.exited));
  await double?.close();
  await sim?.close();
  await azurite?.close();
  tmp.cleanup();
}, 60_000);

describe('fleet end to end', () => {
  it('materializes every record exactly once across a consumer takeover and injected duplicates', async () => {
    const childEnv = { SEF_FLEET_EH: double.connectionString(HUB), SEF_FLEET_BLOB: azurite.connectionString };
    const a = spawnFleet(['--config', fleetConfigFile('a')], childEnv);
    children.push(a);
    await a.ready;

    // Phase 1: every VM gets its maintenance event.
    for (const vm of vms) {
      const base = { resources: [vm.name] };
      const input =
        vm.variant === 'freeze-completed'
          ? { ...base, type: 'Freeze', noticeSeconds: 900, durationInSeconds: 5 }
          : vm.variant === 'reboot-canceled'
            ? { ...base, type: 'Reboot', noticeSeconds: 900 }
            : vm.variant === 'redeploy-rescheduled-completed'
              ? { ...base, type: 'Redeploy', noticeSeconds: 600 }
              : vm.variant === 'hardware-failure'
                ? { ...base, type: 'Reboot', status: 'Started' as const }
                : vm.variant === 'preempt-vm-deleted'
                  ? { ...base, type: 'Preempt', noticeSeconds: 30 }
                  : { ...base, type: 'Terminate', noticeSeconds: 600 };
      vm.eventId = sim.admin.injectEvent(input).id;
    }
    await forwardersCommitted(vms, () => 1, 'every VM to commit its first record');
    await waitFor(
      () => dbCount('SELECT count(*) AS n FROM records') === VM_COUNT,
      'consumer A to ingest phase 1',
      {
        timeoutMs: 30_000,
      },
    );

    // B joins: the SDK's load balancing hands it part of the partitions.
    const b = spawnFleet(['--config', fleetConfigFile('b')], childEnv);
    children.push(b);
    await b.ready;
    await waitFor(async () => (await status(b)).partitions.length > 0, 'consumer B to claim partitions', {
      timeoutMs: 30_000,
    });

    // Phase 2: starts, reschedules, cancellations; A dies without warning while they flow.
    for (const vm of vms) {
      if (vm.variant === 'freeze-completed' || vm.variant === 'preempt-vm-deleted') {
        sim.admin.setStatus(vm.eventId, 'Started');
      } else if (vm.variant === 'reboot-canceled') sim.admin.removeEvent(vm.eventId);
      else if (vm.variant === 'redeploy-rescheduled-completed') {
        sim.admin.reschedule(vm.eventId, sim.admin.now() + 1_200_000);
      }
    }
    a.child.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    const phase2 = (vm: Vm) =>
      vm.variant === 'hardware-failure' || vm.variant === 'terminate-pending' ? 1 : 2;
    await forwardersCommitted(vms, phase2, 'phase 2 records');

    // Preempted VMs are deleted: their forwarders stop, no terminal record ever comes.
    for (const vm of vms.filter((v) => v.variant === 'preempt-vm-deleted')) vm.controller.abort();
    for (const vm of vms.filter((v) => v.variant === 'redeploy-rescheduled-completed')) {
      sim.admin.setStatus(vm.eventId, 'Started');
    }
    await forwardersCommitted(
      vms.filter((v) => v.variant === 'redeploy-rescheduled-completed'),
      () => 3,
      'redeploys started',
    );
    // Phase 3: the started maintenance completes.
    for (const vm of vms) {
      if (['freeze-completed', 'redeploy-rescheduled-completed', 'hardware-failure'].includes(vm.variant)) {
        sim.admin.removeEvent(vm.eventId);
      }
    }
    await forwardersCommitted(vms, (vm) => VARIANTS[vm.variant].length, 'every scripted record');
    for (const vm of vms) expect(vm.committed.map((r) => r.transition)).toEqual([...VARIANTS[vm.variant]]);

    const total = expectedRecords();
    expect(total).toBe(50);
    await waitFor(
      async () => (await status(b)).partitions.length === 4,
      'consumer B to own every partition after A died',
      { timeoutMs: 30_000 },
    );
    await waitFor(() => dbCount('SELECT count(*) AS n FROM records') === total, 'every record in SQLite', {
      timeoutMs: 30_000,
    });

    // Duplicates: re-send 10 already-delivered events (same CloudEvent ids).
    const duplicatesBefore = dbCount("SELECT value AS n FROM ingest_stats WHERE name = 'duplicates'");
    const resend = double.received(HUB).slice(0, 10);
    const producer = new EventHubProducerClient(double.connectionString(HUB));
    try {
      for (const event of resend) {
        await producer.sendBatch(
          [{ body: event.body, contentType: event.contentType, messageId: event.messageId }],
          event.partitionKey === undefined ? {} : { partitionKey: event.partitionKey },
        );
      }
    } finally {
      await producer.close();
    }
    await waitFor(
      () => dbCount("SELECT value AS n FROM ingest_stats WHERE name = 'duplicates'") >= duplicatesBefore + 10,
      'the re-sent duplicates to be seen and ignored',
      { timeoutMs: 30_000 },
    );
    b.child.kill('SIGTERM');
    expect((await b.exited).code).toBe(0);

    // Exact: the database holds each committed record once, no more, no less.
    const store = new FleetStore({ path: databasePath, readOnly: true });
    try {
      const stored = (
        store.db.prepare('SELECT source, id FROM records').all() as Array<{ source: string; id: string }>
      )
        .map((r) => `${r.source}|${r.id}`)
        .sort();
      const produced = vms
        .flatMap((vm) => vm.committed)
        .map((r) => `${r.source}|${r.id}`)
        .sort();
      expect(stored).toEqual(produced);
      const uniqueAtHub = new Set(
        double.received(HUB).map((e) => {
          const r = e.body as LifecycleRecord;
          return `${r.source}|${r.id}`;
        }),
      );
      expect(uniqueAtHub.size).toBe(total);
      const stats = store.stats();
      expect(stats.accepted).toBe(total);
      expect(stats.received).toBe(stats.accepted + stats.duplicates);
      expect(stats.rejected).toBe(0);

      const events = listEvents(store.db);
      expect(events).toHaveLength(VM_COUNT);
      for (const vm of vms) {
        const source = vm.committed[0]!.source;
        expect(vmTimeline(store.db, source).map((t) => t.transition)).toEqual([...VARIANTS[vm.variant]]);
        const event = events.find((e) => e.source === source)!;
        expect(event.eventId).toBe(vm.eventId);
        expect(event.vmName).toBe(vm.name);
        const expectation: Record<Variant, [string, boolean, string[]]> = {
          'freeze-completed': ['completed', false, []],
          'reboot-canceled': ['canceled', false, []],
          'redeploy-rescheduled-completed': ['completed', false, []],
          'hardware-failure': ['completed', false, []],
          'preempt-vm-deleted': ['started', true, []],
          'terminate-pending': ['scheduled', false, []],
        };
        const [status, deleted, missing] = expectation[vm.variant];
        expect({
          vm: vm.name,
          status: event.status,
          deleted: event.vmDeleted,
          missing: event.missing,
        }).toEqual({
          vm: vm.name,
          status,
          deleted,
          missing,
        });
      }
      const count = (p: (e: (typeof events)[number]) => boolean) => events.filter(p).length;
      expect(count((e) => e.eventType === 'Freeze')).toBe(4);
      expect(count((e) => e.approval === 'lapsed')).toBe(4 + 4 + 3); // freeze, redeploy, preempt
      expect(count((e) => e.approval === 'none')).toBe(4 + 3); // canceled, hardware failure (first seen Started)
      expect(count((e) => e.updates === 1)).toBe(4);
      expect(count((e) => e.location === 'westeurope')).toBe(10);
      expect(count((e) => e.scaleSet === 'web')).toBe(10);
      const freeze = events.find((e) => e.eventType === 'Freeze')!;
      expect(freeze.advertisedSeconds).toBe(5);
      expect(freeze.noticeSeconds).toBeGreaterThan(800);
      expect(freeze.noticeSeconds).toBeLessThanOrEqual(900);
      const redeploy = events.find((e) => e.eventType === 'Redeploy')!;
      expect(redeploy.noticeSeconds).toBeGreaterThan(1100); // NotBefore moved: the latest NotBefore counts
    } finally {
      store.close();
    }
  }, 120_000);

  it('dashboard in headless Chromium: renders, filters, exports', async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: the dashboard browser test needs Debian's chromium (apt-get update && apt-get install -y chromium)`,
      );
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    const store = new FleetStore({ path: databasePath, readOnly: true });
    const dashboard = await startDashboard({ db: store.db, logger: silentLogger() });
    const profile = makeTempDir('sef-chromium-');
    // A fresh --user-data-dir: playwright passes the profile directory itself with a persistent context.
    const context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      headless: true,
      acceptDownloads: true,
      viewport: { width: 1400, height: 1000 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    try {
      const page = await context.newPage();
      const failures: string[] = [];
      page.on('pageerror', (e) => failures.push(e.message));
      page.on('requestfailed', (r) => failures.push(`${r.url()} ${r.failure()?.errorText}`));
      page.on('request', (r) => {
        if (!r.url().startsWith(dashboard.url)) failures.push(`external request ${r.url()}`);
      });
      await page.goto(dashboard.url);
      await page.waitForSelector('body[data-ready="true"]');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });

      expect(await page.locator('#events tbody tr').count()).toBe(VM_COUNT);
      expect(await page.textContent('[data-testid="card-events"] b')).toBe(String(VM_COUNT));
      // Pending now: the two Terminate events (Preempted VMs are deleted, not pending).
      expect(await page.locator('#pending tbody tr').count()).toBe(2);
      expect(await page.locator('#pending tbody tr td:nth-child(3)').allTextContents()).toEqual([
        'Terminate',
        'Terminate',
      ]);
      expect(await page.locator('#notice-chart svg rect.bar').count()).toBeGreaterThan(0);
      expect(await page.locator('#impact-chart svg rect.adv').count()).toBe(4); // Freeze advertised 5 s

      // Filter: Freeze events only.
      await page.selectOption('select[name="type"]', 'Freeze');
      await page.click('button[type="submit"]');
      await page.waitForFunction("document.querySelectorAll('#events tbody tr').length === 4");
      expect(await page.locator('#events tbody tr[data-type="Freeze"]').count()).toBe(4);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-freeze.png'), fullPage: true });

      // Export with the filter applied: CSV and JSON.
      const [csvDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
      const csv = readFileSync((await csvDownload.path())!, 'utf8')
        .trim()
        .split('\r\n');
      expect(csv[0]?.startsWith('vmName,eventId,occurrence,eventType,status')).toBe(true);
      expect(csv).toHaveLength(1 + 4);
      expect(csv.slice(1).every((line) => line.includes(',Freeze,completed,'))).toBe(true);
      const [jsonDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
      const exported = JSON.parse(readFileSync((await jsonDownload.path())!, 'utf8')) as Array<{
        eventType: string;
      }>;
      expect(exported.map((e) => e.eventType)).toEqual(['Freeze', 'Freeze', 'Freeze', 'Freeze']);

      // Per-VM timeline: click a VM in the filtered table.
      await page.click('#events tbody tr a.vm');
      await page.waitForFunction("document.querySelectorAll('#timeline tbody tr').length === 3");
      expect(
        await page
          .locator('#timeline tbody tr')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-transition'))),
      ).toEqual(['scheduled', 'started', 'completed']);
      expect(await page.locator('#timeline-chart svg circle').count()).toBe(3);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-timeline.png'), fullPage: true });
      expect(failures).toEqual([]);
    } finally {
      await context.close();
      await dashboard.close();
      store.close();
      profile.cleanup();
    }
  }, 60_000);
});

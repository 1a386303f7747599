/**
 * The fleet's /metrics, /healthz and /readyz (src/fleet/metrics.ts on the dashboard server), with real
 * components:
 *
 * - A real `fleet run` child (the AMQP double with two partitions, Blob checkpoints in Azurite, a SQLite
 *   history): every series exists at 0 from the start; the record counters move after ingest; the partition lag
 *   grows while the consumer is paused (SIGSTOP while records are sent, SIGCONT) and falls after; a store failure
 *   holds the partition (events behind > 0, commit failures counted) until the store is back.
 * - The history gauges, on SQLite and PostgreSQL, equal the history's own summary on a fixture with a broadcast
 *   event (observers that are not affected are not counted), are cached between scrapes, and /readyz of a
 *   dashboard whose history is gone is a 503 with the reason.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningDashboard, startDashboard } from '../../../src/fleet/dashboard/server.ts';
import { type FleetHistory, openHistory } from '../../../src/fleet/history/index.ts';
import { createFleetMetrics, MAINTENANCE_EVENT_TYPES } from '../../../src/fleet/metrics.ts';
import { silentLogger } from '../../../src/log.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { writeFleetConfig } from '../../support/fleet-config.ts';
import { broadcastReboot, freezeLifecycle, record } from '../../support/fleet-records.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';
import { type FleetChild, spawnFleet, startAzurite } from './helpers.ts';

const HUB = 'lifecycle';
const GROUP = 'fleet';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, 60_000);

/** Prometheus text → "name{labels}" → value (labels as written by prom-client, in label order). */
type Samples = Map<string, number>;

function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

async function scrape(base: string): Promise<Samples> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parseMetrics(await res.text());
}

/** The sample's value; fails (naming it) when the series is absent. */
function value(samples: Samples, series: string): number {
  const v = samples.get(series);
  if (v === undefined) throw new Error(`series ${series} is absent; have: ${[...samples.keys()].join(', ')}`);
  return v;
}

async function send(double: EventHubsDouble, partitionId: string, bodies: unknown[]): Promise<void> {
  const producer = new EventHubProducerClient(double.connectionString(HUB));
  try {
    for (const body of bodies) await producer.sendBatch([{ body }], { partitionId });
  } finally {
    await producer.close();
  }
}

/** The enqueue time (ms) of the last event the double received on `partition`. */
function lastEnqueuedAt(double: EventHubsDouble, partition: string): number {
  const events = double.received(HUB).filter((e) => e.partitionId === partition);
  return events.at(-1)!.enqueuedTimeUtc.getTime();
}

describe('fleet run metrics (a real consumer child, the AMQP double, Azurite, SQLite)', () => {
  it('exports every series from the start, counts records, tracks lag and a held partition', async () => {
    const tmp = makeTempDir('sef-fleet-metrics-');
    cleanups.push(() => tmp.cleanup());
    mkdirSync(join(tmp.dir, 'azurite'));
    const azurite = await startAzurite(join(tmp.dir, 'azurite'));
    cleanups.push(() => azurite.close());
    const double = await startEventHubsDouble({ hubs: { [HUB]: 2 }, consumerGroups: ['$Default', GROUP] });
    cleanups.push(() => double.close());
    const database = join(tmp.dir, 'fleet.db');
    // Ownership outlives the pause below: the paused consumer keeps its partitions.
    const config = writeFleetConfig(join(tmp.dir, 'fleet.yaml'), {
      group: GROUP,
      database,
      ownershipExpirationMs: 120_000,
    });
    const consumer: FleetChild = spawnFleet(['--config', config], {
      SEF_FLEET_EH: double.connectionString(HUB),
      SEF_FLEET_BLOB: azurite.connectionString,
    });
    cleanups.push(async () => {
      if (consumer.child.exitCode === null && consumer.child.signalCode === null) {
        consumer.child.kill('SIGCONT');
        consumer.child.kill('SIGKILL');
      }
      await consumer.exited;
    });
    const { dashboard } = await consumer.ready;
    const base = dashboard!;

    // Every series at 0 from the start (partition series for both partitions of the hub, asked at start).
    const first = await scrape(base);
    for (const partition of ['0', '1']) {
      expect(value(first, `sef_fleet_partition_lag_seconds{partition="${partition}"}`)).toBe(0);
      expect(value(first, `sef_fleet_partition_events_behind{partition="${partition}"}`)).toBe(0);
    }
    for (const result of ['accepted', 'duplicate', 'rejected'])
      expect(value(first, `sef_fleet_records_total{result="${result}"}`)).toBe(0);
    expect(value(first, 'sef_fleet_commit_failures_total')).toBe(0);
    expect(value(first, 'sef_fleet_owned_partitions')).toBeGreaterThanOrEqual(0);
    for (const type of MAINTENANCE_EVENT_TYPES)
      expect(value(first, `sef_fleet_pending_events{event_type="${type}"}`)).toBe(0);
    expect(value(first, 'sef_fleet_affected_vms_pending')).toBe(0);
    expect(value(first, 'sef_fleet_blast_radius_threshold')).toBe(10);
    expect(value(first, 'sef_fleet_lapsed_events{window="24h"}')).toBe(0);
    expect(value(first, 'sef_fleet_last_record_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(first, 'sef_fleet_process_resident_memory_bytes')).toBeGreaterThan(0);

    // Probes: alive, and ready once subscribed with the history reachable.
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'alive' });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      history: { ok: true },
      consumer: { subscribed: true },
    });
    await waitFor(
      async () => value(await scrape(base), 'sef_fleet_owned_partitions') === 2,
      'both partitions owned',
    );

    // Counters move after ingest: three accepted, one duplicate (the same record again), one rejected.
    const web1 = freezeLifecycle('web_1', 'E1');
    await send(double, '0', [...web1, web1[0], { specversion: '1.0', id: 'not-a-record' }]);
    const counted = await waitFor(async () => {
      const s = await scrape(base);
      return value(s, 'sef_fleet_records_total{result="rejected"}') === 1 &&
        value(s, 'sef_fleet_records_total{result="duplicate"}') === 1
        ? s
        : undefined;
    }, 'the records counted');
    expect(value(counted, 'sef_fleet_records_total{result="accepted"}')).toBe(3);
    expect(value(counted, 'sef_fleet_partition_events_behind{partition="0"}')).toBe(0);
    expect(value(counted, 'sef_fleet_partition_lag_seconds{partition="0"}')).toBeGreaterThanOrEqual(0);
    expect(value(counted, 'sef_fleet_commit_failures_total')).toBe(0);

    // Paused while records are sent: once resumed, the lag of the partition is at least the pause.
    consumer.child.kill('SIGSTOP');
    await send(double, '1', freezeLifecycle('web_2', 'E2').slice(0, 2));
    const enqueuedDuringPause = lastEnqueuedAt(double, '1');
    await waitFor(() => Date.now() - enqueuedDuringPause >= 3000, 'the records to wait 3 s in the hub');
    const resumedAt = Date.now();
    consumer.child.kill('SIGCONT');
    const paused = await waitFor(async () => {
      const s = await scrape(base);
      return value(s, 'sef_fleet_records_total{result="accepted"}') === 5 ? s : undefined;
    }, 'the records sent during the pause ingested');
    const lagPaused = value(paused, 'sef_fleet_partition_lag_seconds{partition="1"}');
    expect(lagPaused).toBeGreaterThanOrEqual((resumedAt - enqueuedDuringPause) / 1000 - 0.01);
    expect(value(paused, 'sef_fleet_partition_events_behind{partition="1"}')).toBe(0);

    // Caught up: the next record's lag is what it waited, far less than the pause.
    await send(double, '1', freezeLifecycle('web_2', 'E2').slice(2));
    const sentAt = lastEnqueuedAt(double, '1');
    const after = await waitFor(async () => {
      const s = await scrape(base);
      return value(s, 'sef_fleet_records_total{result="accepted"}') === 6 ? s : undefined;
    }, 'the record sent after the pause ingested');
    const observedAt = Date.now();
    const lagAfter = value(after, 'sef_fleet_partition_lag_seconds{partition="1"}');
    expect(lagAfter).toBeLessThanOrEqual((observedAt - sentAt) / 1000 + 0.01);
    expect(lagAfter).toBeLessThan(lagPaused);
    expect(value(after, 'sef_fleet_last_record_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(after, 'sef_fleet_last_record_age_seconds')).toBeLessThanOrEqual(
      (Date.now() - sentAt) / 1000 + 0.01,
    );

    // A store failure holds the partition: the records table is renamed away, so every commit fails.
    const sqlite = new DatabaseSync(database, { timeout: 10_000 });
    cleanups.push(() => sqlite.close());
    sqlite.exec('ALTER TABLE records RENAME TO records_held');
    await send(double, '0', freezeLifecycle('web_3', 'E3').slice(0, 1));
    const held = await waitFor(async () => {
      const s = await scrape(base);
      return value(s, 'sef_fleet_commit_failures_total') >= 1 &&
        value(s, 'sef_fleet_partition_events_behind{partition="0"}') === 1
        ? s
        : undefined;
    }, 'the partition held with one event behind');
    expect(value(held, 'sef_fleet_records_total{result="accepted"}')).toBe(6);
    expect(value(held, 'sef_fleet_partition_events_behind{partition="1"}')).toBe(0);
    sqlite.exec('ALTER TABLE records_held RENAME TO records');
    const released = await waitFor(async () => {
      const s = await scrape(base);
      return value(s, 'sef_fleet_records_total{result="accepted"}') === 7 ? s : undefined;
    }, 'the held record committed once the store is back');
    expect(value(released, 'sef_fleet_partition_events_behind{partition="0"}')).toBe(0);
    expect(value(released, 'sef_fleet_commit_failures_total')).toBeGreaterThanOrEqual(
      value(held, 'sef_fleet_commit_failures_total'),
    );

    consumer.child.kill('SIGTERM');
    expect((await consumer.exited).code).toBe(0);
  });
});

const DAY2 = 2 * 24 * 3600;

/**
 * The fixture: the broadcast (started: its approval lapsed), a pending Freeze in scale set ss-db (zone 2), two
 * completed Freezes whose approval lapsed (one two days old).
 */
function fixture(): LifecycleRecord[] {
  return [
    ...broadcastReboot(),
    record('scheduled', { vm: 'db_1', eventId: 'F1', at: 20, firstSeenAt: 20, zone: '2', scaleSet: 'ss-db' }),
    ...freezeLifecycle('web_1', 'E1'),
    // Lapsed too, but first seen two days before: outside the 24 h window.
    ...[-DAY2, -DAY2 + 960].map((at, i) =>
      record(i === 0 ? 'scheduled' : 'completed', {
        vm: 'app_9',
        eventId: 'E9',
        at,
        firstSeenAt: -DAY2,
        startedAt: i === 0 ? null : -DAY2 + 950,
        location: 'northeurope',
        zone: '3',
      }),
    ),
  ];
}

describe.each(['sqlite', 'postgres'] as const)('fleet history gauges (%s)', (kind) => {
  it('equal the summary on a fixture with a broadcast event, cached between scrapes', async () => {
    const tmp = makeTempDir('sef-fleet-gauges-');
    cleanups.push(() => tmp.cleanup());
    let database = join(tmp.dir, 'fleet.db');
    if (kind === 'postgres') {
      const db = await createTestDatabase(inject('pgAdminUrl'));
      cleanups.push(() => db.drop());
      database = db.url;
    }
    const now = Date.parse('2025-01-01T12:00:00Z');
    let clock = now;
    const history: FleetHistory = await openHistory({ database, now: () => new Date(clock) });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await history.close();
    });
    let sequence = 0;
    const ingest = async (records: LifecycleRecord[]) => {
      const result = await history.ingest(
        records.map((body) => ({
          body,
          partitionId: '0',
          sequenceNumber: sequence++,
          enqueuedAt: new Date(0),
        })),
      );
      expect(result.rejections).toEqual([]);
    };
    await ingest(fixture());

    const metrics = createFleetMetrics({
      history,
      blastRadiusThreshold: 3,
      logger: silentLogger(),
      now: () => clock,
      processMetrics: false,
    });
    const dashboard: RunningDashboard = await startDashboard({
      history,
      logger: silentLogger(),
      metrics: metrics.registry,
    });
    cleanups.push(() => dashboard.close());

    const samples = await scrape(dashboard.url);
    const summary = await history.summary();
    // Pending events per type, as the summary's pending list.
    const byType: Record<string, number> = Object.fromEntries(MAINTENANCE_EVENT_TYPES.map((t) => [t, 0]));
    for (const e of summary.pending) byType[e.eventType] = (byType[e.eventType] ?? 0) + 1;
    for (const [type, n] of Object.entries(byType))
      expect(value(samples, `sef_fleet_pending_events{event_type="${type}"}`), type).toBe(n);
    expect(byType).toMatchObject({ Reboot: 1, Freeze: 1 });
    // Affected VMs: the broadcast counts its two affected VMs, not its five observers.
    const affected = summary.pending.reduce((sum, e) => sum + e.affectedVms, 0);
    expect(affected).toBe(3);
    expect(value(samples, 'sef_fleet_affected_vms_pending')).toBe(affected);
    // Per scope: each pending event lies in one location / zone / scale set, so the sums per scope are the VMs.
    const perScope = (pick: (e: (typeof summary.pending)[number]) => string, empty: string) => {
      const out: Record<string, number> = {};
      for (const e of summary.pending) {
        const key = pick(e) || empty;
        out[key] = (out[key] ?? 0) + e.affectedVms;
      }
      return out;
    };
    const expected = {
      location: { northeurope: 0, ...perScope((e) => e.location, '(unknown)') },
      zone: { '3': 0, ...perScope((e) => e.zone, '(none)') },
      scale_set: perScope((e) => e.scaleSet, '(none)'),
    };
    expect(expected).toEqual({
      location: { northeurope: 0, westeurope: 3 },
      zone: { '1': 2, '2': 1, '3': 0 },
      scale_set: { '(none)': 2, 'ss-db': 1 },
    });
    const scraped: Record<string, Record<string, number>> = { location: {}, zone: {}, scale_set: {} };
    for (const [series, n] of samples) {
      const m = /^sef_fleet_pending_vms\{scope="([^"]+)",name="([^"]*)"\}$/.exec(series);
      if (m) scraped[m[1]!]![m[2]!] = n;
    }
    expect(scraped).toEqual(expected);
    // Lapsed approvals of the last 24 h, as the summary of that window.
    const lapsed = (await history.summary({ since: new Date(now - 24 * 3600_000).toISOString() })).approvals
      .lapsed;
    expect(lapsed).toBe(2); // R1 and E1; E9 is older than the window
    expect(value(samples, 'sef_fleet_lapsed_events{window="24h"}')).toBe(lapsed);
    expect(value(samples, 'sef_fleet_blast_radius_threshold')).toBe(3);
    // No consumer (a dashboard-only process): no consumer series.
    expect([...samples.keys()].some((k) => k.startsWith('sef_fleet_records_total'))).toBe(false);

    // Cached: a new pending Redeploy shows only once the cache period has passed.
    await ingest([
      record('scheduled', { vm: 'db_2', eventId: 'D1', eventType: 'Redeploy', at: 30, zone: '2' }),
    ]);
    expect(value(await scrape(dashboard.url), 'sef_fleet_pending_events{event_type="Redeploy"}')).toBe(0);
    clock += 10_000;
    const later = await scrape(dashboard.url);
    expect(value(later, 'sef_fleet_pending_events{event_type="Redeploy"}')).toBe(1);
    expect(value(later, 'sef_fleet_affected_vms_pending')).toBe(4);
    expect(value(later, 'sef_fleet_pending_vms{scope="zone",name="2"}')).toBe(2);

    // /readyz: ready with the history reachable, 503 with the reason once it is gone; /healthz stays 200.
    expect((await fetch(`${dashboard.url}/readyz`)).status).toBe(200);
    await history.close();
    closed = true;
    const gone = await fetch(`${dashboard.url}/readyz`);
    expect(gone.status).toBe(503);
    expect(await gone.json()).toMatchObject({
      ready: false,
      reason: expect.stringMatching(/^history unreachable: /),
    });
    expect((await fetch(`${dashboard.url}/healthz`)).status).toBe(200);
  });
});

/**
 * Acceptance: 20 simulated VMs (one simulator serving every identity) × scripted scenarios → 20 in-process
 * Forwarder instances (src/pipeline; 20 child processes would be too heavy on 2 cores) with the Event Hubs sink →
 * the AMQP double → the fleet consumer as real child processes (Blob checkpoints in Azurite) → SQLite.
 *
 * Consumer A runs alone, B joins (load balancing splits the partitions), A is SIGKILLed mid-stream and B takes
 * over every partition. Duplicates are injected by re-sending events. Counts and timelines must be exact.
 * The world and the scenario live in fleet-world.ts, shared with the dashboard browser test
 * (test/browser/fleet-dashboard.test.ts, `npm run test:browser`), which checks the dashboard over the same data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { FleetStore, listEvents, vmTimeline } from '../../../src/fleet/index.ts';
import {
  type FleetWorld,
  HUB,
  runFleetScenario,
  startFleetWorld,
  VARIANTS,
  type Variant,
  VM_COUNT,
} from './fleet-world.ts';

let world: FleetWorld;

beforeAll(async () => {
  world = await startFleetWorld();
}, 60_000);

afterAll(async () => {
  await world?.close();
}, 60_000);

describe('fleet end to end', () => {
  it('materializes every record exactly once across a consumer takeover and injected duplicates', async () => {
    const { vms, double, databasePath } = world;
    const { consumerAExit, consumerBExit } = await runFleetScenario(world);
    expect(consumerAExit.signal).toBe('SIGKILL');
    for (const vm of vms) expect(vm.committed.map((r) => r.transition)).toEqual([...VARIANTS[vm.variant]]);

    const total = world.expectedRecords();
    expect(total).toBe(50);
    expect(consumerBExit.code).toBe(0);

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
});

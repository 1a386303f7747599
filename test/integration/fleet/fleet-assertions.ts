/**
 * What the fleet e2e tests expect of a history after the scripted scenarios of fleet-world.ts (either store):
 * each committed record stored exactly once, every VM's timeline and observation, the maintenance events
 * counted once, and the same history a single consumer folding the same records would have.
 */
import { expect } from 'vitest';
import type { FleetHistory, RawFleetEvent } from '../../../src/fleet/history/index.ts';
import { type FleetWorld, HUB, VARIANTS, type Variant, VM_COUNT } from './fleet-world.ts';

const ALL = { limit: 1000 };

const key = (r: { source?: unknown; id?: unknown }) => `${String(r.source)}|${String(r.id)}`;

/** Every committed record once (no more, no less), and the ingest counters agree. */
export async function expectEachRecordOnce(world: FleetWorld, history: FleetHistory): Promise<void> {
  const total = world.expectedRecords();
  const produced = world.committedRecords().map(key).sort();
  expect(produced).toHaveLength(total);
  expect(new Set(produced).size).toBe(total);
  const stored = (await history.db.all('SELECT source, id FROM records')).map(key).sort();
  expect(stored).toEqual(produced);
  const uniqueAtHub = new Set(
    world.double.received(HUB).map((e) => key(e.body as { source?: unknown; id?: unknown })),
  );
  expect(uniqueAtHub.size).toBe(total);
  const stats = await history.stats();
  expect(stats.accepted).toBe(total);
  expect(stats.received).toBe(stats.accepted + stats.duplicates);
  expect(stats.duplicates).toBeGreaterThanOrEqual(10); // the re-sent events, plus any re-delivery after a kill
  expect(stats.rejected).toBe(0);
}

/** The scripted scenarios' outcome: per-VM timelines and observations, maintenance events counted once. */
export async function expectScriptedHistory(world: FleetWorld, history: FleetHistory): Promise<void> {
  const { vms } = world;
  const events = (await history.events({}, ALL)).items;
  const observations = (await history.observations({}, ALL)).items;
  expect(events).toHaveLength(VM_COUNT);
  expect(observations).toHaveLength(VM_COUNT); // each VM reported only its own event
  const expectation: Record<Variant, [string, boolean]> = {
    'freeze-completed': ['completed', false],
    'reboot-canceled': ['canceled', false],
    'redeploy-rescheduled-completed': ['completed', false],
    'hardware-failure': ['completed', false],
    'preempt-vm-deleted': ['started', true],
    'terminate-pending': ['scheduled', false],
  };
  for (const vm of vms) {
    const source = vm.committed[0]!.source;
    expect((await history.timeline(source)).map((t) => t.transition)).toEqual([...VARIANTS[vm.variant]]);
    const [status, deleted] = expectation[vm.variant];
    const event = events.find((e) => e.eventId === vm.eventId);
    expect({
      vm: vm.name,
      affected: event?.affectedNames,
      records: event?.records,
      status: event?.status,
      deleted: event?.vmDeleted,
      missing: event?.missing,
    }).toEqual({
      vm: vm.name,
      affected: [vm.name],
      records: VARIANTS[vm.variant].length,
      status,
      deleted,
      missing: [], // no false "missing": every transition the VM went through arrived
    });
    const observation = observations.find((o) => o.source === source);
    expect({
      vm: observation?.vmName,
      eventId: observation?.eventId,
      affectsVm: observation?.affectsVm,
      status: observation?.status,
      deleted: observation?.vmDeleted,
      missing: observation?.missing,
    }).toEqual({ vm: vm.name, eventId: vm.eventId, affectsVm: true, status, deleted, missing: [] });
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
  const summary = await history.summary();
  expect(summary.events).toBe(VM_COUNT);
  expect(summary.missingTransitions).toBe(0);
  expect(summary.records).toBe(world.expectedRecords());
}

/**
 * The history equals a single consumer's fold of the same records: every record the forwarders committed,
 * ingested once in one batch into `reference` (a fresh history), gives the same maintenance events,
 * observations and VMs, event for event.
 */
export async function expectSingleConsumerFold(
  world: FleetWorld,
  history: FleetHistory,
  reference: FleetHistory,
): Promise<void> {
  const batch: RawFleetEvent[] = world
    .committedRecords()
    .map((body, i) => ({ body, partitionId: '0', sequenceNumber: i, enqueuedAt: new Date() }));
  const result = await reference.ingest(batch);
  expect(result).toMatchObject({ accepted: world.expectedRecords(), duplicates: 0, rejected: 0 });
  const events = (await history.events({}, ALL)).items;
  const expected = (await reference.events({}, ALL)).items;
  expect(events.map((e) => e.eventId)).toEqual(expected.map((e) => e.eventId));
  expected.forEach((e, i) => {
    expect(events[i]).toEqual(e);
  });
  const observations = (await history.observations({}, ALL)).items;
  const expectedObservations = (await reference.observations({}, ALL)).items;
  expect(observations.map((o) => `${o.eventId}|${o.source}`)).toEqual(
    expectedObservations.map((o) => `${o.eventId}|${o.source}`),
  );
  expectedObservations.forEach((o, i) => {
    expect(observations[i]).toEqual(o);
  });
  expect((await history.vms(ALL)).items).toEqual((await reference.vms(ALL)).items);
}

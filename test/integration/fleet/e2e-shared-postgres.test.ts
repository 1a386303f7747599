/**
 * Acceptance, several hosts on one PostgreSQL history: the fleet world of fleet-world.ts (20 simulated VMs and
 * their forwarders → the AMQP double) read by THREE `fleet run` child processes of one consumer group, each in
 * its own working directory as on its own host, with Blob checkpoints in Azurite and ONE PostgreSQL database
 * (the real server of test/support/postgres.ts), whose URL reaches them only through an env secret
 * (`database: { env: SEF_FLEET_DB }`), never a command line.
 *
 * One consumer is SIGKILLed mid-stream and another restarted (SIGTERM, then started again); 10 events are
 * re-sent. The history must hold each committed record exactly once (0 lost, 0 counted twice), show no false
 * "missing" transition, and equal a single consumer's fold of the same records, event for event.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openHistory } from '../../../src/fleet/history/index.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { expectEachRecordOnce, expectScriptedHistory, expectSingleConsumerFold } from './fleet-assertions.ts';
import { type FleetWorld, GROUP, runSharedScenario, startFleetWorld, VARIANTS } from './fleet-world.ts';

let world: FleetWorld;
const drops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  const db = await createTestDatabase(inject('pgAdminUrl'));
  drops.push(() => db.drop());
  world = await startFleetWorld({ database: db.url });
}, 60_000);

afterAll(async () => {
  await world?.close();
  for (const drop of drops) await drop();
}, 60_000);

describe('fleet end to end (three consumers, one PostgreSQL history)', () => {
  it('folds every record exactly once across a SIGKILL, a restart and duplicates, as one consumer would', async () => {
    const outcome = await runSharedScenario(world);
    expect(outcome.killed.signal).toBe('SIGKILL');
    expect(outcome.restarted.code).toBe(0);
    expect(outcome.final.map((e) => e.code)).toEqual([0, 0]);
    for (const vm of world.vms)
      expect(vm.committed.map((r) => r.transition)).toEqual([...VARIANTS[vm.variant]]);
    expect(world.expectedRecords()).toBe(50);

    // The URL came from the environment: each consumer reports the database without its password, and the
    // password is in none of their logs.
    const password = decodeURIComponent(new URL(world.database).password);
    expect(password.length).toBeGreaterThan(0);
    for (const [run, ready] of Object.entries(outcome.ready)) {
      expect({ run, database: ready.database, group: ready.consumerGroup }).toEqual({
        run,
        database: expect.stringMatching(/^postgres(ql)?:\/\//),
        group: GROUP,
      });
      expect(ready.database).not.toContain(password);
    }
    for (const log of Object.values(outcome.logs)) {
      expect(log).not.toContain(password);
      expect(log).not.toContain('cannot commit the batch');
    }

    const history = await world.history();
    await expectEachRecordOnce(world, history);
    await expectScriptedHistory(world, history);
    const fresh = await createTestDatabase(inject('pgAdminUrl'));
    drops.push(() => fresh.drop());
    const reference = await openHistory({ database: fresh.url });
    try {
      await expectSingleConsumerFold(world, history, reference);
    } finally {
      await reference.close();
    }
  }, 180_000);
});

/**
 * Acceptance: 20 simulated VMs (one simulator serving every identity) × scripted scenarios → 20 in-process
 * Forwarder instances (src/pipeline; 20 child processes would be too heavy on 2 cores) with the Event Hubs sink →
 * the AMQP double → the fleet consumer as real child processes (Blob checkpoints in Azurite) → a SQLite history.
 *
 * Consumer A runs alone, B joins (load balancing splits the partitions), A is SIGKILLed mid-stream and B takes
 * over every partition. Duplicates are injected by re-sending events. Counts and timelines must be exact, and
 * the history must equal a single consumer's fold of the same records. The world and the scenario live in
 * fleet-world.ts; the same world on PostgreSQL with three consumers is e2e-shared-postgres.test.ts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHistory } from '../../../src/fleet/history/index.ts';
import { expectEachRecordOnce, expectScriptedHistory, expectSingleConsumerFold } from './fleet-assertions.ts';
import { type FleetWorld, runFleetScenario, startFleetWorld, VARIANTS } from './fleet-world.ts';

let world: FleetWorld;

beforeAll(async () => {
  world = await startFleetWorld();
}, 60_000);

afterAll(async () => {
  await world?.close();
}, 60_000);

describe('fleet end to end (SQLite)', () => {
  it('materializes every record exactly once across a consumer takeover and injected duplicates', async () => {
    const { consumerAExit, consumerBExit } = await runFleetScenario(world);
    expect(consumerAExit.signal).toBe('SIGKILL');
    expect(consumerBExit.code).toBe(0);
    for (const vm of world.vms)
      expect(vm.committed.map((r) => r.transition)).toEqual([...VARIANTS[vm.variant]]);
    expect(world.expectedRecords()).toBe(50);

    const history = await world.history();
    await expectEachRecordOnce(world, history);
    await expectScriptedHistory(world, history);
    const reference = await openHistory({ database: join(world.tmpDir, 'reference.db') });
    try {
      await expectSingleConsumerFold(world, history, reference);
    } finally {
      await reference.close();
    }
  }, 120_000);
});

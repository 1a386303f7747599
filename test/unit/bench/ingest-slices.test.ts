/**
 * The fleet benchmark's load in slices (bench/fleet.ts ingestFleet): the two sizes of a store take turns slice by
 * slice, so each load stops at a gate before every slice. Against a real SQLite history: exactly the number of
 * gates asked for, each at its share of the records with no batch in flight, and the time waited at them left out
 * of the load's time.
 */

import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ingestFleet } from '../../../bench/fleet.ts';
import type { ForwarderEvent } from '../../../src/domain/index.ts';
import { type FleetHistory, openHistory } from '../../../src/fleet/history/index.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-ingest-slices-');
afterAll(() => tmp.cleanup());

/** Loads `records` into a fresh SQLite history in `count` slices; what each gate saw. */
async function load(name: string, records: readonly ForwarderEvent[], count: number, waitMs: number) {
  const fleetEnd = new Date(Math.max(...records.map((r) => Date.parse(r.time))));
  const history = await openHistory({ database: join(tmp.dir, `${name}.db`), now: () => fleetEnd });
  try {
    let inFlight = 0;
    const counted: FleetHistory = Object.create(history, {
      ingest: {
        value: (batch: Parameters<FleetHistory['ingest']>[0]) => {
          inFlight++;
          return history.ingest(batch).finally(() => inFlight--);
        },
      },
    });
    let yielded = 0;
    function* source() {
      for (const record of records) {
        yielded++;
        yield record;
      }
    }
    const gates: Array<{ yielded: number; inFlight: number }> = [];
    let waitedMs = 0;
    const t0 = performance.now();
    const result = await ingestFleet(counted, source(), 1, {
      count,
      total: records.length,
      gate: async () => {
        gates.push({ yielded, inFlight });
        const tw = performance.now();
        await sleep(waitMs);
        waitedMs += performance.now() - tw;
      },
    });
    const wallMs = performance.now() - t0;
    return { result, gates, waitedMs, wallMs };
  } finally {
    await history.close();
  }
}

describe('the fleet benchmark load in slices', () => {
  const fleet = generateFleet({ vms: 200, days: 20, heartbeatIntervalSeconds: 0, heartbeatDays: 0 });
  const records = [...fleet.events()] as ForwarderEvent[];

  it('stops at every gate asked for, each at its share of the records with nothing in flight', async () => {
    expect(records.length).toBeGreaterThan(300);
    const count = 7;
    const { result, gates, waitedMs, wallMs } = await load('seven', records, count, 30);
    expect(gates.map((g) => g.yielded)).toEqual(
      Array.from({ length: count }, (_, k) => Math.floor((k * records.length) / count)),
    );
    expect(gates.every((g) => g.inFlight === 0)).toBe(true);
    expect(result.records).toBe(records.length);
    expect(result.accepted + result.duplicates + result.rejected).toBe(records.length);
    // The load's time leaves out the time waited at the gates (and the reading of the records).
    expect(waitedMs).toBeGreaterThanOrEqual(count * 25);
    expect(result.seconds * 1000).toBeLessThanOrEqual(wallMs - waitedMs);
  });

  it('passes exactly as many gates as asked when there are fewer records than slices', async () => {
    const few = records.slice(0, 12);
    const { result, gates } = await load('few', few, 40, 0);
    expect(gates).toHaveLength(40);
    expect(gates.map((g) => g.yielded)).toEqual(
      Array.from({ length: 40 }, (_, k) => Math.floor((k * 12) / 40)),
    );
    expect(result.records).toBe(12);
  });
});

/**
 * The fleet benchmark's spool (bench/lib/spool.ts): what is written comes back record for record, in order, each
 * parsed from its JSON (as the consumer gets a body from the Event Hubs SDK), across the reader's chunks and with a
 * line longer than a chunk; a file cut inside a line is an error that says so, not a record lost in silence.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSpool, writeSpool } from '../../../bench/lib/spool.ts';
import { generateFleet } from '../../../src/simulator/fleet.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-spool-');
afterAll(() => tmp.cleanup());

describe('spool', () => {
  it('gives back every record of a synthetic fleet as its JSON, in order', () => {
    const fleet = generateFleet({ vms: 60, days: 20, heartbeatIntervalSeconds: 3600, heartbeatDays: 2 });
    const path = join(tmp.dir, 'fleet.jsonl');
    const written = writeSpool(path, fleet.events());
    const expected = [...fleet.events()].map((r) => JSON.parse(JSON.stringify(r)));
    expect(written).toBe(expected.length);
    expect(written).toBeGreaterThan(1000);
    expect([...readSpool(path)]).toEqual(expected);
  });

  it('reads lines across its chunks, one longer than a chunk included', () => {
    const path = join(tmp.dir, 'long.jsonl');
    // 4 MiB is the reader's chunk: a line of 9 MiB makes it grow twice; the small ones around it straddle chunks.
    const records = [
      ...Array.from({ length: 30_000 }, (_, i) => ({ i, text: 'x'.repeat(i % 300) })),
      { i: -1, text: 'y'.repeat(9 * 1024 * 1024) },
      ...Array.from({ length: 1000 }, (_, i) => ({ i, text: 'é'.repeat(i % 50) })),
    ];
    expect(writeSpool(path, records)).toBe(records.length);
    expect(statSync(path).size).toBeGreaterThan(3 * 4 * 1024 * 1024);
    let n = 0;
    for (const r of readSpool<{ i: number; text: string }>(path)) {
      expect(r).toEqual(records[n]);
      n++;
    }
    expect(n).toBe(records.length);
  });

  it('an empty spool has no records; one cut inside a line is an error naming the file', () => {
    const empty = join(tmp.dir, 'empty.jsonl');
    expect(writeSpool(empty, [])).toBe(0);
    expect([...readSpool(empty)]).toEqual([]);
    const cut = join(tmp.dir, 'cut.jsonl');
    writeSpool(cut, [{ a: 1 }, { b: 2 }]);
    writeFileSync(cut, readFileSync(cut, 'utf8').slice(0, -3));
    expect(() => [...readSpool(cut)]).toThrow(`spool ${cut} ends inside a line (5 bytes)`);
    appendFileSync(cut, '}\n');
    expect(() => [...readSpool(cut)]).toThrow(SyntaxError);
  });
});

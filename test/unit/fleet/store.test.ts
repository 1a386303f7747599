import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import {
  eventsToCsv,
  FleetStore,
  listEvents,
  pendingEvents,
  type RawFleetEvent,
  summarize,
  vmTimeline,
} from '../../../src/fleet/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { freezeLifecycle, record } from './records.ts';

const tmp = makeTempDir('sef-fleet-store-');
const stores: FleetStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});
afterAll(() => tmp.cleanup());

function open(name: string): FleetStore {
  const store = new FleetStore({ path: join(tmp.dir, name, 'fleet.db') });
  stores.push(store);
  return store;
}

let seq = 0;
function raw(body: unknown, partitionId = '0'): RawFleetEvent {
  return { body, partitionId, sequenceNumber: seq++, enqueuedAt: new Date(0) };
}

describe('FleetStore.ingest', () => {
  it('stores each (source, id) once: re-deliveries and re-sends are counted as duplicates', () => {
    const store = open('dedupe');
    const records = freezeLifecycle();
    expect(store.ingest(records.map((r) => raw(r)))).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(store.ingest([raw(records[1]), raw(JSON.stringify(records[2]))])).toMatchObject({
      accepted: 0,
      duplicates: 2,
      eventsTouched: 0,
    });
    expect(store.stats()).toEqual({ received: 5, accepted: 3, duplicates: 2, rejected: 0 });
    const [event] = listEvents(store.db);
    expect(event).toMatchObject({ status: 'completed', records: 3 });
  });

  it('gives the same history whatever the arrival order and batch split', () => {
    const a = open('order-a');
    const b = open('order-b');
    const records: LifecycleRecord[] = [...freezeLifecycle('web_1', 'E1'), ...freezeLifecycle('web_2', 'E2')];
    a.ingest(records.map((r) => raw(r)));
    for (const r of [...records].reverse()) b.ingest([raw(r, '1')]);
    expect(listEvents(b.db)).toEqual(listEvents(a.db));
    expect(vmTimeline(b.db, 'web_1').map((t) => t.transition)).toEqual(['scheduled', 'started', 'completed']);
  });

  it('keeps bodies that are not lifecycle records in the rejected table, never silently dropped', () => {
    const store = open('rejected');
    expect(store.ingest([raw('garbage'), raw({ hello: 'world' })])).toMatchObject({
      rejected: 2,
      accepted: 0,
    });
    const rows = store.db.prepare('SELECT reason, body FROM rejected ORDER BY seq').all();
    expect(rows).toEqual([
      { reason: 'body is not JSON', body: 'garbage' },
      { reason: 'missing CloudEvents attribute id', body: '{"hello":"world"}' },
    ]);
  });

  it('rolls back the whole batch when the transaction fails (nothing half-stored)', () => {
    const store = open('rollback');
    store.db.exec('CREATE TRIGGER fail BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, "boom"); END');
    expect(() => store.ingest(freezeLifecycle().map((r) => raw(r)))).toThrow(/boom/);
    expect(store.db.prepare('SELECT count(*) AS n FROM records').get()).toEqual({ n: 0 });
    expect(store.stats().received).toBe(0);
  });
});

describe('queries', () => {
  it('summarizes by type / region / zone / scale set with notice, impact, approvals and pending', () => {
    const store = open('summary');
    store.ingest(
      [
        ...freezeLifecycle('web_1', 'E1'),
        record('scheduled', {
          vm: 'web_2',
          eventId: 'E2',
          eventType: 'Reboot',
          at: 100,
          firstSeenAt: 100,
          notBeforeAt: 700,
          location: 'norwayeast',
          zone: '2',
          scaleSet: 'web',
        }),
      ].map((r) => raw(r)),
    );
    const s = summarize(store.db, {}, new Date(0));
    expect(s).toMatchObject({
      events: 2,
      vms: 2,
      records: 4,
      byStatus: { completed: 1, scheduled: 1 },
      byType: { Freeze: 1, Reboot: 1 },
      byLocation: { norwayeast: 1, westeurope: 1 },
      byZone: { '1': 1, '2': 1 },
      byScaleSet: { '(none)': 1, web: 1 },
      byTransition: { completed: 1, scheduled: 2, started: 1 },
      impactVsAdvertised: { compared: 1, exceeded: 0 },
      approvals: { lapsed: 1 },
    });
    expect(s.noticeSeconds).toMatchObject({ count: 2, min: 600, max: 900 });
    expect(s.pending.map((e) => e.eventId)).toEqual(['E2']);
    expect(pendingEvents(store.db, { location: 'westeurope' })).toEqual([]);
    expect(summarize(store.db, { eventType: 'Reboot' }).byTransition).toEqual({ scheduled: 1 });
    expect(listEvents(store.db, { since: '2025-01-01T00:01:00Z' }).map((e) => e.eventId)).toEqual(['E2']);
    expect(listEvents(store.db, { vm: 'WEB_1' }).map((e) => e.eventId)).toEqual(['E1']);
  });

  it('exports CSV with quoting and formula-safe cells', () => {
    const csv = eventsToCsv([
      { ...baseView(), description: 'x', vmName: 'a,b', eventId: '=cmd', missing: ['started'] },
    ]);
    const [header, line] = csv.split('\r\n');
    expect(header?.split(',')[0]).toBe('vmName');
    expect(line?.startsWith('"a,b","=cmd",')).toBe(true);
    expect(line).toContain(',started,');
  });
});

function baseView() {
  const store = open('view');
  store.ingest(freezeLifecycle().map((r) => raw(r)));
  return listEvents(store.db)[0]!;
}

/**
 * The alert re-sends (src/pipeline/alert-refresh.ts over src/transform pendingEventRecords): one periodic send
 * per sink that re-sends, none for the others; each pending event of the committed state as the very record the
 * transform produced for its current status (same id, same data), filtered by the sink's filter, read when the
 * sink calls for it (nothing built before, nothing at all when no event is pending).
 */
import { describe, expect, it } from 'vitest';
import type { SinkConfig } from '../../../src/config/index.ts';
import type { LifecycleRecord, ScheduledEvent } from '../../../src/domain/index.ts';
import {
  ALERT_REFRESH_KIND,
  alertRefreshSends,
  pendingRecords,
} from '../../../src/pipeline/alert-refresh.ts';
import type { RefreshPending, Sink, SinkFilter } from '../../../src/sinks/types.ts';
import { type ForwarderState, initialState, transform } from '../../../src/transform/index.ts';
import { FIXTURE_VM } from '../../support/records.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');

function event(id: string, status: string, resources: string[]): ScheduledEvent {
  const notBefore = status === 'Scheduled' ? 'Sun, 01 Mar 2026 10:15:00 GMT' : '';
  return {
    EventId: id,
    EventType: 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: resources,
    EventStatus: status,
    NotBefore: notBefore,
    notBeforeUtc: notBefore === '' ? null : new Date(Date.parse(notBefore)).toISOString(),
    Description: 'Host server is undergoing maintenance.',
    EventSource: 'Platform',
    DurationInSeconds: -1,
  };
}

/** Plays the documents through the real transform; the final state and every record it produced. */
function play(documents: ScheduledEvent[][]): { state: ForwarderState; records: LifecycleRecord[] } {
  let state = initialState();
  const records: LifecycleRecord[] = [];
  documents.forEach((events, i) => {
    const result = transform(state, {
      outcome: {
        kind: 'document',
        document: { DocumentIncarnation: i + 1, Events: events },
        observed: { wallMs: T0 + i * 1000, monotonicMs: i * 1000 },
        changed: true,
      },
      vm: FIXTURE_VM,
      maxGapMs: 3000,
    });
    state = result.state;
    records.push(...result.records);
  });
  return { state, records };
}

const ALL = { transitions: ['scheduled', 'started', 'completed', 'canceled', 'updated', 'approved'] };

const filter = (scope: 'this-vm' | 'all', eventTypes: string[] = []): SinkFilter => ({
  ...ALL,
  eventTypes,
  scope,
});

describe('pendingRecords', () => {
  it("gives each pending event as the transform's record of its status, filtered per sink", () => {
    const own = 'E0000001-0000-4000-8000-000000000000';
    const other = 'E0000002-0000-4000-8000-000000000000';
    const { state, records } = play([
      [event(own, 'Scheduled', ['vm-web-01']), event(other, 'Scheduled', ['vm-web-02'])],
      [event(own, 'Started', ['vm-web-01']), event(other, 'Scheduled', ['vm-web-02'])],
    ]);
    const parts = { committedState: () => state, identity: () => FIXTURE_VM, kubernetes: () => undefined };
    const started = records.find((r) => r.subject === own && r.transition === 'started')!;
    const scheduledOther = records.find((r) => r.subject === other && r.transition === 'scheduled')!;
    expect(pendingRecords(parts, filter('this-vm'))).toEqual([started]);
    // The other event as of the last document that showed it: same id and data, later time and incarnation.
    expect(pendingRecords(parts, filter('all'))).toEqual([
      started,
      {
        ...scheduledOther,
        time: new Date(T0 + 1000).toISOString(),
        data: { ...scheduledOther.data, DocumentIncarnation: 2 },
      },
    ]);
    expect(pendingRecords(parts, filter('all', ['Freeze']))).toEqual([]);
  });
});

/** A sink whose re-send records what `pending()` gave, when it was called. */
function refreshingSink(name: string): Sink & { pendingSeen: string[][] } {
  const pendingSeen: string[][] = [];
  const refreshPending: RefreshPending = {
    intervalMs: 30_000,
    send: async (pending) => {
      pendingSeen.push(pending().map((r) => r.subject));
    },
  };
  return { name, maxBatch: 1, deliver: async () => {}, refreshPending, pendingSeen };
}

describe('alertRefreshSends', () => {
  it('one send per sink that re-sends, reading the committed state when the sink calls for it; none otherwise', async () => {
    let state = play([[event('E3', 'Scheduled', ['vm-web-01'])], []]).state;
    let identityReads = 0;
    const am = refreshingSink('am');
    const plain: Sink = { name: 'file', maxBatch: 10, deliver: async () => {} };
    const config = (name: string, scope: 'this-vm' | 'all') =>
      ({ name, filter: filter(scope) }) as SinkConfig;
    const parts = {
      sinks: [
        { config: config('file', 'all'), sink: plain },
        { config: config('am', 'this-vm'), sink: am },
      ],
      committedState: () => state,
      identity: () => {
        identityReads++;
        return FIXTURE_VM;
      },
      kubernetes: () => undefined,
    };
    const sends = alertRefreshSends(parts);
    expect(sends.map((s) => [s.kind, s.sink, s.intervalMs])).toEqual([[ALERT_REFRESH_KIND, 'am', 30_000]]);
    expect(alertRefreshSends({ ...parts, sinks: [parts.sinks[0]!] })).toEqual([]);

    await sends[0]!.send('interval', new AbortController().signal);
    expect(am.pendingSeen).toEqual([[]]);
    expect(identityReads).toBe(0); // nothing pending: nothing built
    state = play([[event('E4', 'Scheduled', ['vm-web-01']), event('E5', 'Scheduled', ['vm-web-09'])]]).state;
    await sends[0]!.send('interval', new AbortController().signal);
    expect(am.pendingSeen).toEqual([[], ['E4']]); // E5 is another VM's event: not this sink's filter
  });
});

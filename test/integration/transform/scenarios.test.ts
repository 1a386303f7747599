/**
 * Every bundled simulator scenario (config/scenarios/*.yaml) replayed through the lifecycle transform:
 * the simulator serves it over real HTTP on 127.0.0.1, the real ImdsClient reads each VM's identity and
 * its document after every step of virtual time (timeScale 0, fixed start, so records are deterministic),
 * and each document goes into transform() as a PollOutcome, state carried from step to step.
 *
 * The expected lifecycles below were written by reading each YAML file; they are deliberately not derived
 * from the scenario files, so a change in the simulator, a scenario or the transform shows up here.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  LifecycleRecord,
  PollOutcome,
  ScheduledEventsDocument,
  Transition,
  VmIdentity,
} from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import {
  listScenarios,
  loadScenario,
  type RunningSimulator,
  startSimulator,
  VirtualClock,
} from '../../../src/simulator/index.ts';
import { ImdsClient } from '../../../src/sources/imds/client.ts';
import {
  type ApprovalInput,
  type ForwarderState,
  initialState,
  transform,
} from '../../../src/transform/index.ts';

/** Simulated start of every replay (a whole second, so NotBefore in RFC 1123 loses nothing). */
const T0 = Date.parse('2024-03-04T05:06:00Z');
/** Stepping from transition to transition can leave days between polls; none of it is an observation gap. */
const NO_GAP_MS = 7 * 24 * 60 * 60 * 1000;
const MIN = 60;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** One expected record of an event: transition, seconds after T0, DocumentIncarnation it carries. */
type Expected = readonly [transition: Transition, atSeconds: number, incarnation: number];

interface ExpectedEvent {
  lifecycle: readonly Expected[];
  /** The observers for which `affectsThisVm` is true (the event's Resources). */
  affects: readonly string[];
  /** NotBefore − first seen, in seconds, as the final record reports it (null: never had a NotBefore). */
  noticeSeconds: number | null;
}

interface Row {
  /** VMs whose view is replayed; the first is the primary VM (served at the root), others at vmUrl(name). */
  observers: readonly string[];
  events: Readonly<Record<string, ExpectedEvent>>;
  /** EventIds the primary observer approves with ImdsClient.approve() as soon as it sees them Scheduled. */
  approveOnSight?: readonly string[];
  /** Further per-scenario assertions on one observer's records. */
  check?: (records: readonly LifecycleRecord[], observer: string) => void;
}

const E = (n: number): string =>
  `5B8C6D3E-00${String(n).padStart(2, '0')}-4C1A-9E2B-0000000000${String(n).padStart(2, '0')}`;
const LIVE_MIGRATION = 'C7061BAC-AFDC-4513-B24B-AA5F13A16123';

/** RFC 1123 form (as IMDS sends NotBefore) of T0 + seconds. */
const rfc1123 = (seconds: number): string => new Date(T0 + seconds * 1000).toUTCString();

function only(records: readonly LifecycleRecord[], subject: string, transition: Transition): LifecycleRecord {
  const matching = records.filter((r) => r.subject === subject && r.transition === transition);
  expect(matching, `${subject} ${transition}`).toHaveLength(1);
  return matching[0]!;
}

/** One row per file in config/scenarios/, keyed by file name without extension. */
const EXPECTED: Readonly<Record<string, Row>> = {
  'broadcast-availability-set': {
    observers: ['web-1', 'web-2', 'web-3'],
    events: {
      // Reboot for web-2 only: 15 min notice, started at NotBefore, removed 5 min later.
      [E(9)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 10 + 15 * MIN, 3],
          ['completed', 10 + 20 * MIN, 4],
        ],
        affects: ['web-2'],
        noticeSeconds: 15 * MIN,
      },
      // Reboot for web-1 and web-3 at 20m30s.
      [E(10)]: {
        lifecycle: [
          ['scheduled', 20 * MIN + 30, 5],
          ['started', 35 * MIN + 30, 6],
          ['completed', 40 * MIN + 30, 7],
        ],
        affects: ['web-1', 'web-3'],
        noticeSeconds: 15 * MIN,
      },
    },
  },
  cancellation: {
    observers: ['sim-vm-0'],
    events: {
      // Removed at 5m10s while Scheduled, NotBefore (15m10s) still ahead, watched continuously.
      [E(5)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['canceled', 5 * MIN + 10, 3],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: 15 * MIN,
      },
    },
    check: (records) => {
      const canceled = only(records, E(5), 'canceled');
      expect(canceled.data.reason).toBeUndefined();
      expect(canceled.data.timing.startedAt).toBeNull();
      expect(canceled.data.timing.endedAt).toBe(new Date(T0 + (5 * MIN + 10) * 1000).toISOString());
    },
  },
  'hardware-failure': {
    observers: ['sim-vm-0'],
    events: {
      // Appears already Started (no Scheduled invented), removed after 10 min.
      [E(4)]: {
        lifecycle: [
          ['started', 10, 2],
          ['completed', 10 + 10 * MIN, 3],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: null,
      },
    },
    check: (records) => {
      for (const record of records) expect(record.data.firstSeenStatus).toBe('Started');
      expect(only(records, E(4), 'started').data.NotBefore).toBe('');
    },
  },
  'incarnation-reset-after-move': {
    observers: ['sim-vm-0'],
    events: {
      // Redeploy on the old host (incarnations 280-282), then the move resets the counter to 1.
      [E(13)]: {
        lifecycle: [
          ['scheduled', 10, 280],
          ['started', 10 + 10 * MIN, 281],
          ['completed', 10 + 12 * MIN, 282],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: 10 * MIN,
      },
      // Freeze on the new host at 13m: 1 min notice, Started 30 s (incarnations 2-4).
      [E(14)]: {
        lifecycle: [
          ['scheduled', 13 * MIN, 2],
          ['started', 14 * MIN, 3],
          ['completed', 14 * MIN + 30, 4],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: MIN,
      },
    },
  },
  'live-migration-freeze': {
    observers: ['WestNO_0', 'WestNO_1'],
    events: {
      [LIVE_MIGRATION]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 10 + 15 * MIN, 3],
          ['completed', 10 + 20 * MIN, 4],
        ],
        affects: ['WestNO_0', 'WestNO_1'],
        noticeSeconds: 15 * MIN,
      },
    },
    check: (records) => {
      const completed = only(records, LIVE_MIGRATION, 'completed');
      expect(completed.maintenancetype).toBe('Freeze');
      expect(completed.data.DurationInSeconds).toBe(5);
      expect(completed.data.observedImpact).toMatchObject({
        expectedDurationSeconds: 5,
        hostRebooted: false,
      });
      expect(only(records, LIVE_MIGRATION, 'scheduled').data.NotBefore).toBe(rfc1123(10 + 15 * MIN));
    },
  },
  'platform-reboot-approval': {
    observers: ['sim-vm-0'],
    // The scenario waits for an approval: this VM approves at first sight and the event starts at once.
    approveOnSight: [E(3)],
    events: {
      [E(3)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['approved', 10, 2],
          ['started', 10, 3],
          ['completed', 10 + 10 * MIN, 4],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: 15 * MIN,
      },
    },
    check: (records) => {
      const approved = only(records, E(3), 'approved');
      expect(approved.data.approval).toMatchObject({ posted: true, leader: true, rule: 'manual' });
      const started = only(records, E(3), 'started');
      expect(Date.parse(started.time)).toBeLessThan(T0 + (10 + 15 * MIN) * 1000);
    },
  },
  'predicted-hardware-failure-rescheduled': {
    observers: ['sim-vm-0'],
    events: {
      // 3 days notice; after 1 h NotBefore moves to 2 days from then.
      [E(8)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['updated', HOUR, 3],
          ['started', HOUR + 2 * DAY, 4],
          ['completed', HOUR + 2 * DAY + 10 * MIN, 5],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: HOUR + 2 * DAY - 10,
      },
    },
    check: (records) => {
      expect(only(records, E(8), 'scheduled').data.NotBefore).toBe(rfc1123(10 + 3 * DAY));
      const updated = only(records, E(8), 'updated');
      expect(updated.data.changed).toEqual(['NotBefore']);
      expect(updated.data.previous).toMatchObject({ NotBefore: rfc1123(10 + 3 * DAY) });
      expect(updated.data.NotBefore).toBe(rfc1123(HOUR + 2 * DAY));
      expect(updated.data.EventStatus).toBe('Scheduled');
    },
  },
  'scale-set-terminate': {
    observers: ['myvmss_1', 'myvmss_2'],
    events: {
      [E(7)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 10 + 10 * MIN, 3],
          ['completed', 10 + 11 * MIN, 4],
        ],
        affects: ['myvmss_1', 'myvmss_2'],
        noticeSeconds: 10 * MIN,
      },
    },
    check: (records) => {
      for (const record of records) {
        expect(record.maintenancetype).toBe('Terminate');
        expect(record.data.vm.vmScaleSetName).toBe('myvmss');
        expect(record.data.EventSource).toBe('User');
      }
    },
  },
  'spot-preempt': {
    observers: ['spotvmss_3'],
    events: {
      // 30 s notice, Started 30 s.
      [E(6)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 40, 3],
          ['completed', 70, 4],
        ],
        affects: ['spotvmss_3'],
        noticeSeconds: 30,
      },
    },
    check: (records) => {
      for (const record of records) expect(record.maintenancetype).toBe('Preempt');
    },
  },
  'two-simultaneous-events': {
    observers: ['sample_1', 'sample_4'],
    events: {
      // Both injected at 10 s (incarnation 1 → 3). sample_4's agent approves the Freeze at 2m10s.
      [E(11)]: {
        lifecycle: [
          ['scheduled', 10, 3],
          ['started', 2 * MIN + 10, 4],
          ['completed', 3 * MIN + 10, 5],
        ],
        affects: ['sample_1'],
        noticeSeconds: 15 * MIN,
      },
      // The Reboot waits for its own NotBefore.
      [E(12)]: {
        lifecycle: [
          ['scheduled', 10, 3],
          ['started', 15 * MIN + 10, 6],
          ['completed', 25 * MIN + 10, 7],
        ],
        affects: ['sample_4'],
        noticeSeconds: 15 * MIN,
      },
    },
  },
  'user-reboot': {
    observers: ['sim-vm-0'],
    events: {
      // Nobody approves: starts at NotBefore, Started 2 min.
      [E(1)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 10 + 15 * MIN, 3],
          ['completed', 10 + 17 * MIN, 4],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: 15 * MIN,
      },
    },
    check: (records) => {
      for (const record of records) expect(record.data.EventSource).toBe('User');
    },
  },
  'user-redeploy': {
    observers: ['sim-vm-0'],
    events: {
      [E(2)]: {
        lifecycle: [
          ['scheduled', 10, 2],
          ['started', 10 + 10 * MIN, 3],
          ['completed', 10 + 20 * MIN, 4],
        ],
        affects: ['sim-vm-0'],
        noticeSeconds: 10 * MIN,
      },
    },
    check: (records) => {
      for (const record of records) expect(record.maintenancetype).toBe('Redeploy');
    },
  },
};

/** One VM's view: its client, identity, transform state and records. */
interface Observer {
  name: string;
  client: ImdsClient;
  identity: VmIdentity;
  state: ForwarderState;
  records: LifecycleRecord[];
  lastBody: string | undefined;
}

let sim: RunningSimulator | undefined;
const clients: ImdsClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await sim?.close();
  sim = undefined;
});

/** GETs the observer's document and feeds it to transform at the simulator's virtual now. */
async function poll(
  running: RunningSimulator,
  observer: Observer,
  approvals: ApprovalInput[] = [],
): Promise<{ records: LifecycleRecord[]; document: ScheduledEventsDocument }> {
  const { document, body } = await observer.client.getScheduledEvents();
  const wallMs = running.admin.now();
  const outcome: PollOutcome = {
    kind: 'document',
    document,
    observed: { wallMs, monotonicMs: wallMs - T0 },
    changed: body !== observer.lastBody,
  };
  observer.lastBody = body;
  const result = transform(observer.state, {
    outcome,
    vm: observer.identity,
    maxGapMs: NO_GAP_MS,
    ...(approvals.length > 0 ? { approvals } : {}),
  });
  for (const record of result.records) {
    const errors = validateRecord(record);
    expect(errors, `${observer.name} ${record.subject} ${record.transition} validates`).toEqual([]);
  }
  observer.state = result.state;
  observer.records.push(...result.records);
  return { records: result.records, document };
}

/**
 * Plays a scenario: at the start and at every transition time, each observer polls (twice: the second,
 * unchanged document must produce nothing). Returns each observer's records.
 */
async function replay(file: string, row: Row): Promise<Map<string, LifecycleRecord[]>> {
  const running = await startSimulator({
    scenario: loadScenario(file),
    clock: new VirtualClock({ startMs: T0, timeScale: 0 }),
  });
  sim = running;
  const observers: Observer[] = [];
  for (const [index, name] of row.observers.entries()) {
    const client = new ImdsClient({ endpoint: index === 0 ? running.url : running.vmUrl(name) });
    clients.push(client);
    const identity = await client.getInstanceMetadata();
    expect(identity.name, `identity served for observer ${name}`).toBe(name);
    observers.push({ name, client, identity, state: initialState(), records: [], lastBody: undefined });
  }
  const approved = new Set<string>();
  for (let step = 0; step < 200; step++) {
    for (const observer of observers) {
      const { document } = await poll(running, observer);
      expect((await poll(running, observer)).records, `${observer.name}: unchanged document`).toEqual([]);
      if (observer !== observers[0]) continue;
      const toApprove = document.Events.filter(
        (event) =>
          event.EventStatus === 'Scheduled' &&
          row.approveOnSight?.includes(event.EventId) === true &&
          !approved.has(event.EventId),
      ).map((event) => event.EventId);
      if (toApprove.length === 0) continue;
      await observer.client.approve(toApprove);
      for (const id of toApprove) approved.add(id);
      const approvals = toApprove.map(
        (eventId): ApprovalInput => ({
          eventId,
          approvedAtMs: running.admin.now(),
          rule: 'manual',
          leader: true,
          hooks: [],
        }),
      );
      await poll(running, observer, approvals);
    }
    const next = running.admin.nextTransitionAt();
    if (next === null) break;
    running.admin.advance(Math.max(0, next - running.admin.now()));
  }
  expect(running.admin.scenarioDone(), 'scenario ran to its end').toBe(true);
  for (const client of clients.splice(0)) client.close();
  await running.close();
  sim = undefined;
  return new Map(observers.map((observer) => [observer.name, observer.records]));
}

function assertLifecycles(row: Row, observer: string, records: readonly LifecycleRecord[]): void {
  const subjects = [...new Set(records.map((record) => record.subject))].sort();
  expect(subjects, `${observer}: EventIds with records`).toEqual(Object.keys(row.events).sort());
  for (const [eventId, expected] of Object.entries(row.events)) {
    const own = records.filter((record) => record.subject === eventId);
    const actual = own.map(
      (record): Expected => [
        record.transition,
        (Date.parse(record.time) - T0) / 1000,
        record.data.DocumentIncarnation,
      ],
    );
    expect(actual, `${observer}: lifecycle of ${eventId}`).toEqual(expected.lifecycle);
    const affects = expected.affects.includes(observer);
    for (const record of own) {
      expect(record.data.affectsThisVm, `${observer}: affectsThisVm of ${eventId} ${record.transition}`).toBe(
        affects,
      );
      expect(record.data.occurrence).toBe(1);
      expect(record.data.vm.name).toBe(observer);
    }
    const last = own.at(-1);
    expect(last?.data.timing.noticeSeconds, `${observer}: noticeSeconds of ${eventId}`).toBe(
      expected.noticeSeconds,
    );
    for (const terminal of own.filter((r) => r.transition === 'completed' || r.transition === 'canceled')) {
      expect(terminal.data.inferred, `${observer}: ${eventId} ${terminal.transition} observed`).toBe(false);
    }
    const first = own[0];
    const startedFirst = expected.lifecycle[0]?.[0] === 'started';
    expect(first?.data.firstSeenStatus).toBe(startedFirst ? 'Started' : 'Scheduled');
  }
  const keys = records.map(
    (record) =>
      `${record.subject}|${String(record.data.occurrence)}|${record.transition}|${String(record.data.updateSequence ?? '')}`,
  );
  expect(new Set(keys).size, `${observer}: each (EventId, occurrence, transition) at most once`).toBe(
    keys.length,
  );
}

describe('transform x simulator: every bundled scenario', () => {
  it('has an expected-lifecycle row for every scenario file (add one to EXPECTED for a new scenario)', () => {
    const files = listScenarios().map((scenario) => scenario.name);
    const missing = files.filter((name) => !(name in EXPECTED));
    expect(missing, `scenario files without a row in EXPECTED: ${missing.join(', ')}`).toEqual([]);
    const stale = Object.keys(EXPECTED).filter((name) => !files.includes(name));
    expect(stale, `rows in EXPECTED without a scenario file: ${stale.join(', ')}`).toEqual([]);
  });

  for (const scenario of listScenarios()) {
    const row = EXPECTED[scenario.name];
    if (row === undefined) continue; // reported by the coverage test above
    it(`${scenario.name}: expected lifecycle per EventId, valid and deterministic records`, async () => {
      const first = await replay(scenario.file, row);
      const ids = new Set<string>();
      let total = 0;
      for (const observer of row.observers) {
        const records = first.get(observer) ?? [];
        assertLifecycles(row, observer, records);
        row.check?.(records, observer);
        for (const record of records) {
          expect(record.source).toBe(records[0]?.source);
          ids.add(record.id);
        }
        total += records.length;
      }
      expect(ids.size, 'record ids are unique across events, transitions and VMs').toBe(total);

      const second = await replay(scenario.file, row);
      for (const observer of row.observers) {
        expect(second.get(observer), `${observer}: replaying gives identical records and ids`).toEqual(
          first.get(observer),
        );
      }
    });
  }

  it('platform-reboot-approval without an approval: starts when NotBefore passes', async () => {
    const file = listScenarios().find((s) => s.name === 'platform-reboot-approval')?.file;
    expect(file).toBeDefined();
    const row: Row = {
      observers: ['sim-vm-0'],
      events: {
        [E(3)]: {
          lifecycle: [
            ['scheduled', 10, 2],
            ['started', 10 + 15 * MIN, 3],
            ['completed', 10 + 25 * MIN, 4],
          ],
          affects: ['sim-vm-0'],
          noticeSeconds: 15 * MIN,
        },
      },
    };
    const records = (await replay(file!, row)).get('sim-vm-0') ?? [];
    assertLifecycles(row, 'sim-vm-0', records);
  });
});

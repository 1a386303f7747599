/**
 * Contract: helper A's ImdsClient against the IMDS simulator over real HTTP on 127.0.0.1 — every bundled
 * scenario (documents parse, events go through the expected transitions) and every fault (each becomes the
 * client's typed ImdsError with the right reason). Time is stepped deterministically (timeScale 0) to each
 * transition, so every document is observed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ScheduledEventsDocument } from '../../src/domain/index.ts';
import { listScenarios, type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { ImdsClient, type ImdsClientOptions, ImdsError } from '../../src/sources/imds/index.ts';
import { FakeClock } from '../support/fake-clock.ts';

let sim: RunningSimulator | undefined;
let client: ImdsClient | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await sim?.close();
  sim = undefined;
});

function summary(doc: ScheduledEventsDocument): string {
  return `${doc.DocumentIncarnation}:${doc.Events.map((e) => `${e.EventType}/${e.EventStatus}/${e.Resources.join('+')}`).join(',')}`;
}

/** Every distinct document of a scenario, stepping simulated time to each transition. */
async function walk(
  running: RunningSimulator,
  imds: ImdsClient,
  onDocument: (doc: ScheduledEventsDocument) => Promise<void> | void = () => {},
): Promise<string[]> {
  const seen: string[] = [];
  let last: number | undefined;
  for (let i = 0; i < 100; i++) {
    const { document } = await imds.getScheduledEvents();
    for (const event of document.Events) {
      // NotBefore: RFC 1123 parsed while Scheduled, "" (null) once Started.
      if (event.EventStatus === 'Scheduled') expect(event.notBeforeUtc).not.toBeNull();
      else expect([event.NotBefore, event.notBeforeUtc]).toEqual(['', null]);
      expect(event.EventId).not.toBe('');
    }
    if (document.DocumentIncarnation !== last) {
      last = document.DocumentIncarnation;
      seen.push(summary(document));
      await onDocument(document);
    }
    const next = running.admin.nextTransitionAt();
    if (next === null) break;
    running.admin.advance(Math.max(0, next - running.admin.now()));
  }
  expect(running.admin.scenarioDone()).toBe(true);
  return seen;
}

const EXPECTED: Record<string, string[]> = {
  'live-migration-freeze': [
    '1:',
    '2:Freeze/Scheduled/WestNO_0+WestNO_1',
    '3:Freeze/Started/WestNO_0+WestNO_1',
    '4:',
  ],
  'user-reboot': ['1:', '2:Reboot/Scheduled/sim-vm-0', '3:Reboot/Started/sim-vm-0', '4:'],
  'user-redeploy': ['1:', '2:Redeploy/Scheduled/sim-vm-0', '3:Redeploy/Started/sim-vm-0', '4:'],
  'platform-reboot-approval': ['1:', '2:Reboot/Scheduled/sim-vm-0', '3:Reboot/Started/sim-vm-0', '4:'],
  'hardware-failure': ['1:', '2:Reboot/Started/sim-vm-0', '3:'],
  cancellation: ['1:', '2:Reboot/Scheduled/sim-vm-0', '3:'],
  'spot-preempt': ['1:', '2:Preempt/Scheduled/spotvmss_3', '3:Preempt/Started/spotvmss_3', '4:'],
  'scale-set-terminate': [
    '1:',
    '2:Terminate/Scheduled/myvmss_1+myvmss_2',
    '3:Terminate/Started/myvmss_1+myvmss_2',
    '4:',
  ],
  'predicted-hardware-failure-rescheduled': [
    '1:',
    '2:Redeploy/Scheduled/sim-vm-0',
    '3:Redeploy/Scheduled/sim-vm-0',
    '4:Redeploy/Started/sim-vm-0',
    '5:',
  ],
  'broadcast-availability-set': [
    '1:',
    '2:Reboot/Scheduled/web-2',
    '3:Reboot/Started/web-2',
    '4:',
    '5:Reboot/Scheduled/web-1+web-3',
    '6:Reboot/Started/web-1+web-3',
    '7:',
  ],
  // Both events are injected at the same instant: the poller sees incarnation 3 straight after 1.
  'two-simultaneous-events': [
    '1:',
    '3:Freeze/Scheduled/sample_1,Reboot/Scheduled/sample_4',
    '4:Freeze/Started/sample_1,Reboot/Scheduled/sample_4',
    '5:Reboot/Scheduled/sample_4',
    '6:Reboot/Started/sample_4',
    '7:',
  ],
  'incarnation-reset-after-move': [
    '279:',
    '280:Redeploy/Scheduled/sim-vm-0',
    '281:Redeploy/Started/sim-vm-0',
    '282:',
    '1:',
    '2:Freeze/Scheduled/sim-vm-0',
    '3:Freeze/Started/sim-vm-0',
    '4:',
  ],
};

describe('client x simulator: scenarios', () => {
  it('covers every bundled scenario', () => {
    expect(
      listScenarios()
        .map((s) => s.name)
        .sort(),
    ).toEqual(Object.keys(EXPECTED).sort());
  });

  for (const scenario of listScenarios()) {
    it(`${scenario.name}: documents parse and events transition as expected`, async () => {
      sim = await startSimulator({ scenario: scenario.file, timeScale: 0 });
      client = new ImdsClient({ endpoint: sim.url });
      const identity = await client.getInstanceMetadata();
      expect(identity.name).toBe(sim.admin.vms()[0]?.identity.name);
      expect(await walk(sim, client)).toEqual(EXPECTED[scenario.name]);
    });
  }

  it('platform-reboot-approval: approving through the client starts the event before NotBefore', async () => {
    sim = await startSimulator({ scenario: 'platform-reboot-approval', timeScale: 0 });
    const running = sim;
    const imds = new ImdsClient({ endpoint: sim.url });
    client = imds;
    const seen = await walk(sim, imds, async (doc) => {
      const event = doc.Events[0];
      if (event?.EventStatus !== 'Scheduled') return;
      expect(Date.parse(event.notBeforeUtc!)).toBeGreaterThan(running.admin.now());
      await imds.approve([event.EventId]);
      const after = (await imds.getScheduledEvents()).document;
      expect(after.Events[0]?.EventStatus).toBe('Started');
      expect(Date.parse(event.notBeforeUtc!)).toBeGreaterThan(running.admin.now());
    });
    // Incarnation 3 (Started) was read inside the callback, right after the approval.
    expect(seen).toEqual(['1:', '2:Reboot/Scheduled/sim-vm-0', '4:']);
    expect(sim.admin.approvals()).toEqual([
      { eventId: '5B8C6D3E-0003-4C1A-9E2B-000000000003', at: expect.any(String), vm: 'sim-vm-0' },
    ]);
  });

  it('broadcast: each VM of the set polls its own endpoint and sees the same events', async () => {
    sim = await startSimulator({ scenario: 'broadcast-availability-set', timeScale: 0 });
    sim.admin.advance(11_000);
    for (const vm of ['web-1', 'web-2', 'web-3']) {
      const imds = new ImdsClient({ endpoint: sim.vmUrl(vm) });
      try {
        expect((await imds.getInstanceMetadata()).name).toBe(vm);
        const { document } = await imds.getScheduledEvents();
        expect(document.Events.map((e) => e.Resources)).toEqual([['web-2']]);
      } finally {
        imds.close();
      }
    }
  });

  it('older api-versions parse with defaults for missing fields', async () => {
    sim = await startSimulator({ scenario: 'live-migration-freeze', timeScale: 0 });
    sim.admin.advance(11_000);
    client = new ImdsClient({ endpoint: sim.url, apiVersion: '2019-01-01' });
    const { document } = await client.getScheduledEvents();
    expect(document.Events[0]).toMatchObject({
      EventType: 'Freeze',
      Description: '',
      EventSource: '',
      DurationInSeconds: -1,
    });
  });

  it('plays a scenario in real time with a time scale (30 s Preempt notice in milliseconds)', async () => {
    sim = await startSimulator({ scenario: 'spot-preempt', timeScale: 500 });
    client = new ImdsClient({ endpoint: sim.url });
    await sim.admin.scenarioEnded();
    expect(sim.admin.scenarioDone()).toBe(true);
    expect((await client.getScheduledEvents()).document).toEqual({ DocumentIncarnation: 4, Events: [] });
  });
});

type FaultCase = {
  name: string;
  fault: Parameters<RunningSimulator['admin']['addFault']>[0];
  reason: ImdsError['reason'];
  client?: ImdsClientOptions;
  check?: (error: ImdsError) => void;
};

const FAULT_CASES: FaultCase[] = [
  {
    name: '429 with Retry-After',
    fault: { kind: 'status', status: 429, retryAfterSeconds: 2 },
    reason: 'throttled',
    check: (e) => {
      expect(e.httpStatus).toBe(429);
      expect(e.retryAfterMs).toBe(2000);
      expect(e.retryable).toBe(true);
    },
  },
  { name: '500', fault: { kind: 'status', status: 500 }, reason: 'server-error' },
  { name: '503', fault: { kind: 'status', status: 503 }, reason: 'server-error' },
  { name: '410', fault: { kind: 'status', status: 410 }, reason: 'gone' },
  { name: 'connection reset', fault: { kind: 'reset' }, reason: 'network' },
  { name: 'hang', fault: { kind: 'hang' }, reason: 'timeout', client: { firstRequestTimeoutMs: 300 } },
  {
    name: 'latency beyond the timeout',
    fault: { kind: 'latency', ms: 2000 },
    reason: 'timeout',
    client: { firstRequestTimeoutMs: 200 },
  },
  {
    name: 'HTML body from a proxy',
    fault: { kind: 'html' },
    reason: 'invalid-response',
    check: (e) => expect(e.excerpt).toContain('<html>'),
  },
  { name: 'truncated JSON', fault: { kind: 'truncated-json' }, reason: 'invalid-response' },
  { name: 'empty body', fault: { kind: 'empty-body' }, reason: 'invalid-response' },
];

async function expectImdsError(promise: Promise<unknown>): Promise<ImdsError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ImdsError);
  return error as ImdsError;
}

describe('client x simulator: faults', () => {
  for (const c of FAULT_CASES) {
    it(`${c.name} -> ImdsError(${c.reason}), and the next poll succeeds once the fault is gone`, async () => {
      sim = await startSimulator({ timeScale: 0 });
      client = new ImdsClient({ endpoint: sim.url, ...c.client });
      sim.admin.addFault(c.fault);
      const error = await expectImdsError(client.getScheduledEvents());
      expect(error.reason).toBe(c.reason);
      c.check?.(error);
      sim.admin.clearFaults();
      expect((await client.getScheduledEvents()).document).toEqual({ DocumentIncarnation: 1, Events: [] });
    });
  }

  it('added latency below the timeout still yields the document', async () => {
    sim = await startSimulator({ timeScale: 0, faults: [{ kind: 'latency', ms: 100 }] });
    client = new ImdsClient({ endpoint: sim.url });
    expect((await client.getScheduledEvents()).document.DocumentIncarnation).toBe(1);
    expect(sim.admin.requests().log[0]?.faults).toEqual(['latency']);
  });

  it('slow first call: the first request waits (120 s budget), later ones are fast', async () => {
    sim = await startSimulator({ timeScale: 0, faults: [{ kind: 'slow-first-call', ms: 300 }] });
    client = new ImdsClient({ endpoint: sim.url, requestTimeoutMs: 100 });
    expect((await client.getScheduledEvents()).document.DocumentIncarnation).toBe(1);
    expect((await client.getScheduledEvents()).document.DocumentIncarnation).toBe(1);
    expect(sim.admin.requests().log.map((r) => r.faults)).toEqual([['slow-first-call'], []]);
  });

  it('slow first call beyond the first-request timeout is a timeout, not an empty document', async () => {
    sim = await startSimulator({ timeScale: 0, faults: [{ kind: 'slow-first-call', ms: 1500 }] });
    client = new ImdsClient({ endpoint: sim.url, firstRequestTimeoutMs: 200 });
    expect((await expectImdsError(client.getScheduledEvents())).reason).toBe('timeout');
  });

  it('rate limiting at 5 requests/s -> throttled after five', async () => {
    sim = await startSimulator({
      timeScale: 0,
      realClock: new FakeClock(),
      faults: [{ kind: 'rate-limit' }],
    });
    client = new ImdsClient({ endpoint: sim.url });
    for (let i = 0; i < 5; i++) await client.getScheduledEvents();
    const error = await expectImdsError(client.getScheduledEvents());
    expect([error.reason, error.httpStatus, error.retryAfterMs]).toEqual(['throttled', 429, 1000]);
  });

  it('a fault for N requests ends by itself', async () => {
    sim = await startSimulator({ timeScale: 0, faults: [{ kind: 'status', status: 503, count: 2 }] });
    client = new ImdsClient({ endpoint: sim.url });
    await expectImdsError(client.getScheduledEvents());
    await expectImdsError(client.getScheduledEvents());
    expect((await client.getScheduledEvents()).document.DocumentIncarnation).toBe(1);
  });

  it('approvals under faults fail with the typed error and are not recorded', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const event = sim.admin.injectEvent({ type: 'Reboot' });
    client = new ImdsClient({ endpoint: sim.url });
    sim.admin.addFault({ kind: 'status', status: 500, method: 'POST', count: 1 });
    expect((await expectImdsError(client.approve([event.id]))).reason).toBe('server-error');
    expect(sim.admin.approvals()).toEqual([]);
    await client.approve([event.id]);
    expect(sim.admin.approvals().map((a) => a.eventId)).toEqual([event.id]);
  });

  it('IMDS 400s (bad api-version, unknown EventId) and 404 are configuration errors', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const bad = new ImdsClient({ endpoint: sim.url, apiVersion: '2021-13-01' });
    const notFound = new ImdsClient({ endpoint: `${sim.url}/nothing-here` });
    client = new ImdsClient({ endpoint: sim.url });
    try {
      const badVersion = await expectImdsError(bad.getScheduledEvents());
      expect([badVersion.reason, badVersion.retryable]).toEqual(['bad-request', false]);
      expect(badVersion.message).toContain('api-version');
      expect((await expectImdsError(notFound.getScheduledEvents())).reason).toBe('not-found');
      expect((await expectImdsError(client.approve(['no-such-event']))).reason).toBe('bad-request');
    } finally {
      bad.close();
      notFound.close();
    }
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import {
  type RunningSimulator,
  SCHEDULED_EVENTS_API_VERSIONS,
  startSimulator,
} from '../../../src/simulator/index.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { API, getDocument, http, MD, postApproval } from './helpers.ts';

let sim: RunningSimulator;
afterEach(async () => {
  await sim?.close();
});

const MIN = 60_000;

describe('IMDS request rules', () => {
  it('requires Metadata: true and a known api-version, with IMDS-like JSON errors', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const url = `${sim.url}/metadata/scheduledevents`;
    const noHeader = await http(`${url}?${API}`);
    expect(noHeader.status).toBe(400);
    expect(noHeader.json()).toEqual({ error: 'Bad request. Required metadata header not specified' });
    expect((await http(`${url}?${API}`, { headers: { Metadata: 'false' } })).status).toBe(400);
    const noVersion = await http(url, { headers: MD });
    expect(noVersion.status).toBe(400);
    expect(noVersion.json()).toMatchObject({
      error: expect.stringContaining('api-version was not specified'),
    });
    const badVersion = await http(`${url}?api-version=2020-07-02`, { headers: MD });
    expect(badVersion.status).toBe(400);
    expect(badVersion.json()).toMatchObject({
      'newest-versions': ['2020-07-01', '2019-08-01', '2019-04-01'],
    });
    expect((await http(`${url}?api-version=latest`, { headers: MD })).status).toBe(400);
    const proxied = await http(`${url}?${API}`, { headers: { ...MD, 'X-Forwarded-For': '10.0.0.1' } });
    expect(proxied.status).toBe(400);
    expect((await http(`${sim.url}/metadata/nothing?${API}`, { headers: MD })).status).toBe(404);
    for (const version of SCHEDULED_EVENTS_API_VERSIONS) {
      expect((await http(`${url}?api-version=${version}`, { headers: MD })).status).toBe(200);
    }
  });

  it('shapes fields and event types by api-version', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.injectEvent({
      id: 'R',
      type: 'Reboot',
      durationInSeconds: 30,
      description: 'Host server is undergoing maintenance.',
    });
    sim.admin.injectEvent({ id: 'P', type: 'Preempt' });
    sim.admin.injectEvent({ id: 'T', type: 'Terminate' });
    const newest = await getDocument(sim.url, '2020-07-01');
    expect(newest.Events.map((e) => e.EventId)).toEqual(['R', 'P', 'T']);
    expect(Object.keys(newest.Events[0]!)).toEqual([
      'EventId',
      'EventStatus',
      'EventType',
      'ResourceType',
      'Resources',
      'NotBefore',
      'Description',
      'EventSource',
      'DurationInSeconds',
    ]);
    const v2019_08 = await getDocument(sim.url, '2019-08-01');
    expect(v2019_08.Events[0]).not.toHaveProperty('DurationInSeconds');
    expect(v2019_08.Events[0]).toHaveProperty('EventSource', 'Platform');
    const v2019_04 = await getDocument(sim.url, '2019-04-01');
    expect(v2019_04.Events[0]).not.toHaveProperty('EventSource');
    expect(v2019_04.Events[0]).toHaveProperty('Description', 'Host server is undergoing maintenance.');
    const v2019_01 = await getDocument(sim.url, '2019-01-01');
    expect(v2019_01.Events[0]).not.toHaveProperty('Description');
    expect(v2019_01.Events.map((e) => e.EventId)).toEqual(['R', 'P', 'T']);
    expect((await getDocument(sim.url, '2017-11-01')).Events.map((e) => e.EventId)).toEqual(['R', 'P']);
    expect((await getDocument(sim.url, '2017-08-01')).Events.map((e) => e.EventId)).toEqual(['R']);
    const preview = await getDocument(sim.url, '2017-03-01');
    expect(preview.Events[0]?.Resources).toEqual(['_sim-vm-0']);
    expect(newest.DocumentIncarnation).toBe(preview.DocumentIncarnation);
  });
});

describe('event state machine', () => {
  it('plays Scheduled -> Started (NotBefore passed) -> removed with NotBefore RFC 1123 then ""', async () => {
    sim = await startSimulator({ timeScale: 0, vmName: 'WestNO_0' });
    const t0 = sim.admin.now();
    expect(await getDocument(sim.url)).toEqual({ DocumentIncarnation: 1, Events: [] });
    sim.admin.injectEvent({
      id: 'F',
      type: 'Freeze',
      notBefore: t0 + 15 * MIN,
      durationInSeconds: 5,
      startedFor: '5m',
    });
    const scheduled = await getDocument(sim.url);
    expect(scheduled.DocumentIncarnation).toBe(2);
    expect(scheduled.Events[0]).toMatchObject({
      EventStatus: 'Scheduled',
      EventType: 'Freeze',
      DurationInSeconds: 5,
    });
    expect(scheduled.Events[0]?.NotBefore).toMatch(
      /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    );
    expect(Date.parse(scheduled.Events[0]!.NotBefore)).toBe(Math.floor((t0 + 15 * MIN) / 1000) * 1000);
    // Reading does not change anything: same incarnation.
    expect((await getDocument(sim.url)).DocumentIncarnation).toBe(2);
    sim.admin.advance(15 * MIN - 1000);
    expect((await getDocument(sim.url)).Events[0]?.EventStatus).toBe('Scheduled');
    sim.admin.advance(1000);
    const started = await getDocument(sim.url);
    expect(started.DocumentIncarnation).toBe(3);
    expect(started.Events[0]).toMatchObject({ EventStatus: 'Started', NotBefore: '' });
    sim.admin.advance(5 * MIN);
    expect(await getDocument(sim.url)).toEqual({ DocumentIncarnation: 4, Events: [] });
  });

  it('skips incarnations a slow poller did not see, and only changes bump the incarnation', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.injectEvent({ id: 'A', type: 'Reboot', noticeSeconds: 60, startedFor: 60 });
    expect((await getDocument(sim.url)).DocumentIncarnation).toBe(2);
    sim.admin.setStatus('A', 'Scheduled'); // no change
    expect((await getDocument(sim.url)).DocumentIncarnation).toBe(2);
    sim.admin.advance(10 * MIN); // started (3) and removed (4) in between two polls
    expect(await getDocument(sim.url)).toEqual({ DocumentIncarnation: 4, Events: [] });
  });

  it('approval by POST starts a Scheduled event at once; a hardware failure appears as Started; cancel removes', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.injectEvent({ id: 'U', type: 'Reboot', eventSource: 'User' });
    const approved = await postApproval(sim.url, JSON.stringify({ StartRequests: [{ EventId: 'U' }] }));
    expect(approved.status).toBe(200);
    expect((await getDocument(sim.url)).Events[0]).toMatchObject({
      EventId: 'U',
      EventStatus: 'Started',
      NotBefore: '',
    });
    // Approving again (or an already started event) is still 200 and changes nothing.
    const incarnation = (await getDocument(sim.url)).DocumentIncarnation;
    expect((await postApproval(sim.url, JSON.stringify({ StartRequests: [{ EventId: 'U' }] }))).status).toBe(
      200,
    );
    expect((await getDocument(sim.url)).DocumentIncarnation).toBe(incarnation);
    expect(sim.admin.approvals()).toEqual([
      { eventId: 'U', at: expect.any(String), vm: 'sim-vm-0' },
      { eventId: 'U', at: expect.any(String), vm: 'sim-vm-0' },
    ]);

    sim.admin.injectEvent({ id: 'HW', type: 'Reboot', status: 'Started' });
    expect((await getDocument(sim.url)).Events.find((e) => e.EventId === 'HW')).toMatchObject({
      EventStatus: 'Started',
      NotBefore: '',
    });
    sim.admin.injectEvent({ id: 'C', type: 'Redeploy' });
    sim.admin.removeEvent('C');
    expect((await getDocument(sim.url)).Events.map((e) => e.EventId)).toEqual(['U', 'HW']);
    // Removed events stay known: approving them is 200 (a race with NotBefore is not an error).
    expect((await postApproval(sim.url, JSON.stringify({ StartRequests: [{ EventId: 'C' }] }))).status).toBe(
      200,
    );
  });

  it('answers 400 to malformed approvals', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.injectEvent({ id: 'X' });
    expect((await postApproval(sim.url, '{"StartRequests": [')).status).toBe(400);
    expect((await postApproval(sim.url, '{}')).status).toBe(400);
    expect((await postApproval(sim.url, '{"StartRequests": [{"Id": "X"}]}')).status).toBe(400);
    expect((await postApproval(sim.url, '{"StartRequests": [{"EventId": "X"}]}', {})).status).toBe(400);
    const unknown = await postApproval(sim.url, '{"StartRequests": [{"EventId": "nope"}]}');
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('nope');
    expect(sim.admin.approvals()).toEqual([]);
    expect((await getDocument(sim.url)).Events[0]?.EventStatus).toBe('Scheduled');
  });

  it('moves NotBefore when rescheduled, with a new incarnation', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const now = sim.admin.now();
    sim.admin.injectEvent({ id: 'PHF', type: 'Redeploy', noticeSeconds: '3d' });
    const before = await getDocument(sim.url);
    sim.admin.reschedule('PHF', now + 2 * 86_400_000);
    const after = await getDocument(sim.url);
    expect(after.DocumentIncarnation).toBe(before.DocumentIncarnation + 1);
    expect(Date.parse(after.Events[0]!.NotBefore)).toBeLessThan(Date.parse(before.Events[0]!.NotBefore));
  });
});

describe('many VM identities', () => {
  it('serves each VM its own identity and incarnation, and broadcasts events to the availability set', async () => {
    sim = await startSimulator({ timeScale: 0, vmName: 'web-1', initialIncarnation: 10 });
    sim.admin.addVm('web-2');
    sim.admin.addVm('db-1', { availabilitySet: 'db-avset', incarnation: 190 });
    for (let i = 0; i < 20; i++) sim.admin.addVm(`fleet_${i}`, { availabilitySet: `fleet-${i % 4}` });
    expect(sim.vmUrl('web-2')).toBe(`${sim.url}/vms/web-2`);

    sim.admin.injectEvent({ id: 'W2', type: 'Reboot', resources: ['web-2'] });
    expect((await getDocument(sim.url)).Events.map((e) => [e.EventId, e.Resources])).toEqual([
      ['W2', ['web-2']],
    ]);
    expect((await getDocument(sim.vmUrl('web-2'))).DocumentIncarnation).toBe(11);
    expect(await getDocument(sim.vmUrl('db-1'))).toEqual({ DocumentIncarnation: 190, Events: [] });

    sim.admin.injectEvent({ id: 'F1', type: 'Freeze', resources: ['fleet_1'] });
    expect((await getDocument(sim.vmUrl('fleet_5'))).Events.map((e) => e.EventId)).toEqual(['F1']);
    expect((await getDocument(sim.vmUrl('fleet_2'))).Events).toEqual([]);
    expect((await getDocument(sim.url)).Events.map((e) => e.EventId)).toEqual(['W2']);

    // Approval by one VM releases the event for all; the approval records who posted it.
    expect((await postApproval(sim.vmUrl('fleet_9'), '{"StartRequests":[{"EventId":"F1"}]}')).status).toBe(
      200,
    );
    expect((await getDocument(sim.vmUrl('fleet_1'))).Events[0]?.EventStatus).toBe('Started');
    expect(sim.admin.approvals().map((a) => a.vm)).toEqual(['fleet_9']);

    const instance = await http(`${sim.vmUrl('fleet_3')}/metadata/instance?api-version=2021-02-01`, {
      headers: MD,
    });
    const compute = (instance.json() as { compute: Record<string, unknown> }).compute;
    expect(compute).toMatchObject({
      name: 'fleet_3',
      vmScaleSetName: 'fleet',
      osProfile: { computerName: 'fleet000003' },
      resourceId: expect.stringMatching(/\/virtualMachineScaleSets\/fleet\/virtualMachines\/3$/),
    });
    const again = await http(`${sim.vmUrl('fleet_3')}/metadata/instance?api-version=2021-02-01`, {
      headers: MD,
    });
    expect((again.json() as { compute: { vmId: string } }).compute.vmId).toBe(compute.vmId);
    const other = await http(`${sim.url}/metadata/instance/compute?api-version=2021-02-01`, { headers: MD });
    expect(other.json()).toMatchObject({
      name: 'web-1',
      vmScaleSetName: '',
      osProfile: { computerName: 'web-1' },
    });
    expect((other.json() as { vmId: string }).vmId).not.toBe(compute.vmId);
    expect((await http(`${sim.url}/metadata/instance?api-version=2099-01-01`, { headers: MD })).status).toBe(
      400,
    );
  });

  it("restarts a VM's DocumentIncarnation after a move to another host", async () => {
    sim = await startSimulator({ timeScale: 0, initialIncarnation: 279 });
    sim.admin.injectEvent({ id: 'RD', type: 'Redeploy', status: 'Started', startedFor: 60 });
    sim.admin.advance(MIN);
    expect(await getDocument(sim.url)).toEqual({ DocumentIncarnation: 281, Events: [] });
    sim.admin.moveVm('sim-vm-0');
    expect(await getDocument(sim.url)).toEqual({ DocumentIncarnation: 1, Events: [] });
  });
});

describe('admin HTTP API', () => {
  it('injects, advances, sets status, reschedules, removes, lists approvals and faults', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const admin = (path: string, method = 'GET', body?: unknown) =>
      http(`${sim.url}/admin${path}`, {
        method,
        headers: { 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const injected = await admin('/events', 'POST', {
      EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      EventType: 'Freeze',
      Resources: ['WestNO_0', 'WestNO_1'],
      DurationInSeconds: 5,
      noticeSeconds: '15m',
    });
    expect(injected.status).toBe(201);
    expect((await admin('/document?vm=WestNO_1')).json()).toMatchObject({
      Events: [{ EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123', EventStatus: 'Scheduled' }],
    });
    expect((await admin('/events', 'POST', { type: 'Reboot', bogus: 1 })).status).toBe(400);
    expect((await admin('/events', 'POST', { type: 'Reboot', bogus: 1 })).text).toContain('bogus');
    expect((await admin('/events/nope/status', 'POST', { status: 'Started' })).status).toBe(404);
    expect(
      (
        await admin('/events/C7061BAC-AFDC-4513-B24B-AA5F13A16123/reschedule', 'POST', {
          noticeSeconds: '20m',
        })
      ).status,
    ).toBe(200);
    expect((await admin('/advance', 'POST', { by: '20m' })).status).toBe(200);
    expect((await getDocument(sim.vmUrl('WestNO_0'))).Events[0]?.EventStatus).toBe('Started');
    expect((await admin('/events/C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'DELETE')).status).toBe(200);
    expect((await getDocument(sim.vmUrl('WestNO_0'))).Events).toEqual([]);

    expect((await admin('/faults', 'PUT', [{ kind: 'status', status: 503, count: 1 }])).status).toBe(200);
    expect((await admin('/faults')).json()).toEqual([
      expect.objectContaining({ kind: 'status', status: 503, remaining: 1 }),
    ]);
    expect((await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD })).status).toBe(503);
    expect((await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD })).status).toBe(200);
    expect((await admin('/faults', 'POST', { kind: 'nonsense' })).status).toBe(400);

    expect((await admin('/vms', 'POST', { name: 'db-1', availabilitySet: 'db' })).status).toBe(201);
    expect((await admin('/vms/db-1/move', 'POST', { incarnation: 7 })).status).toBe(200);
    expect((await getDocument(sim.vmUrl('db-1'))).DocumentIncarnation).toBe(7);
    const state = (await admin('/state')).json() as { vms: unknown[]; approvals: unknown[] };
    expect(state.vms.length).toBeGreaterThanOrEqual(4);
    expect((await admin('/approvals')).json()).toEqual([]);
    const requests = (await admin('/requests')).json() as { count: number; log: Array<{ endpoint: string }> };
    expect(requests.log.filter((r) => r.endpoint === 'scheduledevents').length).toBe(5);
    expect((await admin('/nope')).status).toBe(404);
  });
});

describe('faults', () => {
  it('rate limits at 5 requests per second per VM (429 with Retry-After beyond)', async () => {
    // Real time only moves when the test says: the one-second window never elapses (deterministic).
    sim = await startSimulator({
      timeScale: 0,
      realClock: new FakeClock(),
      faults: [{ kind: 'rate-limit' }],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const throttled = await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD });
    expect(throttled.headers.get('retry-after')).toBe('1');
    // Another VM has its own budget.
    expect(
      (await http(`${sim.vmUrl('other')}/metadata/scheduledevents?${API}`, { headers: MD })).status,
    ).toBe(200);
  });

  it('applies faults per VM and per endpoint, for N requests', async () => {
    sim = await startSimulator({ timeScale: 0 });
    sim.admin.setFaults([
      { kind: 'html', vm: 'vm-b', count: 2 },
      { kind: 'empty-body', endpoint: 'instance' },
    ]);
    const a = await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD });
    expect(a.json()).toEqual({ DocumentIncarnation: 1, Events: [] });
    const b1 = await http(`${sim.vmUrl('vm-b')}/metadata/scheduledevents?${API}`, { headers: MD });
    expect(b1.headers.get('content-type')).toContain('text/html');
    await http(`${sim.vmUrl('vm-b')}/metadata/scheduledevents?${API}`, { headers: MD });
    const b3 = await http(`${sim.vmUrl('vm-b')}/metadata/scheduledevents?${API}`, { headers: MD });
    expect(b3.json()).toEqual({ DocumentIncarnation: 1, Events: [] });
    const instance = await http(`${sim.url}/metadata/instance?api-version=2021-02-01`, { headers: MD });
    expect([instance.status, instance.text]).toEqual([200, '']);
    sim.admin.setFaults([{ kind: 'truncated-json' }]);
    const truncated = await http(`${sim.url}/metadata/scheduledevents?${API}`, { headers: MD });
    expect(() => truncated.json()).toThrow();
    expect(truncated.text.startsWith('{"Document')).toBe(true);
    sim.admin.clearFaults();
    expect(sim.admin.requests().log.at(-1)?.faults).toEqual(['truncated-json']);
  });
});

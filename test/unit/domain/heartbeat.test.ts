import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  HEARTBEAT_TYPE,
  type HeartbeatRecord,
  heartbeatProblems,
  isHeartbeat,
  type VmIdentity,
} from '../../../src/domain/index.ts';
import { validateHeartbeat, validateRecord } from '../../../src/domain/record-schema.ts';
import { buildHeartbeat, type HeartbeatInput, uuidV5 } from '../../../src/transform/index.ts';

const DOC = new URL('../../../docs/record-format.md', import.meta.url);

const VM: VmIdentity = {
  name: 'web-1',
  vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
  resourceId:
    '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-web-prod/providers/Microsoft.Compute/virtualMachines/web-1',
  subscriptionId: '11111111-2222-3333-4444-555555555555',
  resourceGroupName: 'rg-web-prod',
  location: 'westeurope',
  zone: '2',
  vmScaleSetName: '',
  vmSize: 'Standard_D2s_v5',
  osType: 'Linux',
  computerName: 'web1',
};

function input(overrides: Partial<HeartbeatInput> = {}): HeartbeatInput {
  return {
    trigger: 'interval',
    sequence: 2,
    intervalSeconds: 3600,
    timeMs: Date.parse('2026-03-01T10:00:00Z'),
    vm: VM,
    forwarder: {
      version: '0.1.0',
      configDigest: 'sha256:0123456789abcdef',
      startedAtMs: Date.parse('2026-03-01T09:00:00Z'),
      platform: 'linux',
      source: 'imds',
    },
    imds: { ok: true, lastSuccessAt: '2026-03-01T09:59:59.500Z', consecutiveFailures: 0 },
    store: { ok: true },
    sinks: [
      { name: 'hub', type: 'eventhubs', state: 'ok', pending: 0, oldestPendingAgeSeconds: 0, deadLetters: 0 },
    ],
    approval: { policy: false, rules: 0, dryRun: false, leader: 'first', hooks: 0 },
    ...overrides,
  };
}

/** The heartbeat example(s) of docs/record-format.md. */
function documentedHeartbeats(): HeartbeatRecord[] {
  const text = readFileSync(DOC, 'utf8');
  return [...text.matchAll(/```json\n([\s\S]*?)\n```/g)]
    .map((match) => JSON.parse(match[1]!) as { type?: string })
    .filter((value): value is HeartbeatRecord => value.type === HEARTBEAT_TYPE);
}

describe('heartbeat', () => {
  it('builds a CloudEvent of its own type that validates against schemas/heartbeat.schema.json, not as a record', () => {
    const heartbeat = buildHeartbeat(input());
    expect(validateHeartbeat(heartbeat)).toEqual([]);
    expect(validateRecord(heartbeat).length).toBeGreaterThan(0);
    expect(isHeartbeat(heartbeat)).toBe(true);
    expect(heartbeat).toMatchObject({
      specversion: '1.0',
      type: HEARTBEAT_TYPE,
      source: VM.resourceId,
      vmid: VM.vmId,
      time: '2026-03-01T10:00:00.000Z',
      data: {
        trigger: 'interval',
        sequence: 2,
        vm: { name: 'web-1', location: 'westeurope', zone: '2', resourceGroup: 'rg-web-prod' },
        forwarder: { startedAt: '2026-03-01T09:00:00.000Z', configDigest: 'sha256:0123456789abcdef' },
      },
    });
    expect(heartbeat.data).not.toHaveProperty('kubernetes');
  });

  it('has a deterministic id of source|heartbeat|startedAt|sequence', () => {
    const a = buildHeartbeat(input());
    const b = buildHeartbeat(input({ timeMs: Date.parse('2026-03-01T10:00:05Z') }));
    expect(a.id).toBe(b.id);
    expect(a.id).toBe(uuidV5(`${VM.resourceId}|heartbeat|2026-03-01T09:00:00.000Z|2`));
    expect(buildHeartbeat(input({ sequence: 3 })).id).not.toBe(a.id);
  });

  it('names an unknown VM as records do, carries the node name (not the labels) and every failure field', () => {
    const heartbeat = buildHeartbeat(
      input({
        trigger: 'start',
        sequence: 1,
        vm: undefined,
        kubernetes: { nodeName: 'aks-1', clusterName: 'prod', labels: { a: 'b' } },
        imds: {
          ok: false,
          lastSuccessAt: null,
          consecutiveFailures: 12,
          lastFailure: { reason: 'timeout', at: '2026-03-01T09:59:59.000Z' },
        },
        store: { ok: false },
        sinks: [
          {
            name: 'hub',
            type: 'eventhubs',
            state: 'failing',
            pending: 3,
            oldestPendingAgeSeconds: 4000,
            deadLetters: 2,
            lastError: 'Unauthorized: token expired',
          },
        ],
      }),
    );
    expect(validateHeartbeat(heartbeat)).toEqual([]);
    expect(heartbeat.source).toBe('urn:azure:vm:unknown');
    expect(heartbeat.vmid).toBe('');
    expect(heartbeat.data.kubernetes).toEqual({ nodeName: 'aks-1', clusterName: 'prod' });
    expect(heartbeatProblems(heartbeat.data, { backlogSeconds: 1800 }).map((p) => p.code)).toEqual([
      'imds',
      'store',
      'dead-letters',
      'backlog',
      'sink-failing',
    ]);
  });

  it('judges health: a healthy heartbeat has no problem; a young backlog is no problem; paused is one', () => {
    expect(heartbeatProblems(buildHeartbeat(input()).data, { backlogSeconds: 1800 })).toEqual([]);
    const young = input({
      sinks: [
        {
          name: 'hub',
          type: 'eventhubs',
          state: 'retrying',
          pending: 5,
          oldestPendingAgeSeconds: 60,
          deadLetters: 0,
        },
      ],
    });
    expect(heartbeatProblems(buildHeartbeat(young).data, { backlogSeconds: 1800 })).toEqual([]);
    const paused = input({
      sinks: [
        {
          name: 'hub',
          type: 'eventhubs',
          state: 'paused',
          pending: 1,
          oldestPendingAgeSeconds: 5,
          deadLetters: 0,
        },
      ],
    });
    expect(heartbeatProblems(buildHeartbeat(paused).data, { backlogSeconds: 1800 })).toEqual([
      { code: 'sink-paused', sink: 'hub', detail: 'sink hub paused' },
    ]);
  });

  it('the schema names what is wrong with a bad heartbeat', () => {
    const bad = structuredClone(buildHeartbeat(input())) as unknown as Record<string, unknown>;
    (bad.data as Record<string, unknown>).trigger = 'sometimes';
    (bad.data as { forwarder: Record<string, unknown> }).forwarder.configDigest = 'plain text';
    const errors = validateHeartbeat(bad);
    expect(errors.some((e) => e.startsWith('/data/trigger'))).toBe(true);
    expect(errors.some((e) => e.startsWith('/data/forwarder/configDigest'))).toBe(true);
  });

  it('the example in docs/record-format.md validates and is what buildHeartbeat makes of its fields', () => {
    const [example, ...more] = documentedHeartbeats();
    expect(example).toBeDefined();
    expect(more).toEqual([]);
    expect(validateHeartbeat(example)).toEqual([]);
    const { data } = example!;
    const rebuilt = buildHeartbeat({
      trigger: data.trigger,
      sequence: data.sequence,
      intervalSeconds: data.intervalSeconds,
      timeMs: Date.parse(example!.time),
      vm: {
        name: data.vm.name,
        vmId: data.vm.vmId,
        resourceId: data.vm.resourceId,
        subscriptionId: data.vm.subscriptionId,
        resourceGroupName: data.vm.resourceGroup,
        location: data.vm.location,
        zone: data.vm.zone,
        vmScaleSetName: data.vm.vmScaleSetName,
        vmSize: data.vm.vmSize,
        osType: 'Linux',
        computerName: data.vm.computerName,
      },
      forwarder: {
        version: data.forwarder.version,
        configDigest: data.forwarder.configDigest,
        startedAtMs: Date.parse(data.forwarder.startedAt),
        platform: data.forwarder.platform,
        source: data.forwarder.source,
      },
      imds: data.imds,
      store: data.store,
      sinks: data.sinks,
      approval: data.approval,
    });
    expect(rebuilt).toEqual(example);
  });
});

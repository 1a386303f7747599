/**
 * Realistic lifecycle records for the delivery benchmarks, produced by the real transform from synthetic
 * Scheduled Events documents (one new Reboot per document → one `scheduled` record of ~1 KiB).
 */
import { randomUUID } from 'node:crypto';
import type { LifecycleRecord, VmIdentity } from '../../src/domain/index.ts';
import { initialState, transform } from '../../src/transform/index.ts';

/** The VM identity the benchmark records and sinks use. */
export const BENCH_VM: VmIdentity = {
  name: 'bench-vm-0',
  vmId: '6c2f4a0e-1b7d-4e55-9d0a-5b8f3c1e2a77',
  resourceId:
    '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/bench-rg/providers/Microsoft.Compute/virtualMachines/bench-vm-0',
  subscriptionId: '11111111-2222-3333-4444-555555555555',
  resourceGroupName: 'bench-rg',
  location: 'westeurope',
  zone: '1',
  vmScaleSetName: '',
  vmSize: 'Standard_D2s_v5',
  osType: 'Linux',
  computerName: 'bench-vm-0',
};

/** One `scheduled` record for a fresh Reboot event (unique id each call). */
export function makeRecord(n: number): LifecycleRecord {
  const now = Date.now();
  const notBefore = new Date(now + 15 * 60_000);
  const { records } = transform(initialState(), {
    outcome: {
      kind: 'document',
      changed: true,
      observed: { wallMs: now, monotonicMs: performance.now() },
      document: {
        DocumentIncarnation: n + 1,
        Events: [
          {
            EventId: randomUUID().toUpperCase(),
            EventType: 'Reboot',
            ResourceType: 'VirtualMachine',
            Resources: [BENCH_VM.name],
            EventStatus: 'Scheduled',
            NotBefore: notBefore.toUTCString(),
            notBeforeUtc: new Date(Math.floor(notBefore.getTime() / 1000) * 1000).toISOString(),
            Description: 'Host server is undergoing maintenance.',
            EventSource: 'Platform',
            DurationInSeconds: -1,
          },
        ],
      },
    },
    vm: BENCH_VM,
  });
  const record = records[0];
  if (record === undefined) throw new Error('the transform produced no record for a new event');
  return record;
}

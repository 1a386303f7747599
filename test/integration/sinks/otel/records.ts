/** Lifecycle records and a SinkContext for the otel sink tests. */

import {
  type LifecycleRecord,
  recordType,
  type Transition,
  type VmIdentity,
} from '../../../../src/domain/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import type { SinkContext } from '../../../../src/sinks/types.ts';

export const VM = {
  name: 'vm-web-01',
  vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
  resourceId:
    '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-web-prod/providers/Microsoft.Compute/virtualMachines/vm-web-01',
  subscriptionId: '11111111-2222-3333-4444-555555555555',
  resourceGroup: 'rg-web-prod',
  location: 'westeurope',
  zone: '2',
  vmScaleSetName: '',
  vmSize: 'Standard_D4s_v5',
  computerName: 'vm-web-01',
};

export function makeRecord(
  transition: Transition,
  overrides: { eventType?: string; eventId?: string; time?: string } = {},
): LifecycleRecord {
  const eventId = overrides.eventId ?? '3DA1B9AA-1111-2222-3333-444455556666';
  const eventType = overrides.eventType ?? 'Reboot';
  return {
    specversion: '1.0',
    id: `${eventId}:${transition}`,
    source: VM.resourceId,
    type: recordType(transition),
    subject: eventId,
    time: overrides.time ?? '2025-09-19T18:14:47.123Z',
    datacontenttype: 'application/json',
    transition,
    maintenancetype: eventType,
    vmid: VM.vmId,
    data: {
      EventId: eventId,
      EventType: eventType,
      EventStatus: transition === 'started' ? 'Started' : 'Scheduled',
      ResourceType: 'VirtualMachine',
      Resources: ['vm-web-01'],
      NotBefore: 'Fri, 19 Sep 2025 18:29:47 GMT',
      Description: 'Host server is undergoing maintenance.',
      EventSource: 'Platform',
      DurationInSeconds: -1,
      DocumentIncarnation: 7,
      notBeforeUtc: '2025-09-19T18:29:47.000Z',
      affectsThisVm: true,
      vm: { ...VM },
      timing: { firstSeenAt: '2025-09-19T18:14:47.123Z', startedAt: null, endedAt: null, noticeSeconds: 900 },
    },
  };
}

export function makeContext(vm?: VmIdentity): SinkContext {
  return { logger: silentLogger(), vm: () => vm, stateDir: '.' };
}

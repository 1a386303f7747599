/** Lifecycle record fixtures for the Event Hubs tests (shape of src/domain/record.ts). */
import { createHash } from 'node:crypto';
import { type LifecycleRecord, recordType, type Transition } from '../../../../src/domain/index.ts';

function guid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface RecordOptions {
  vm?: string;
  scaleSet?: string;
  eventId?: string;
  transition?: Transition;
  /** Extra characters in Description, to make a record big. */
  padding?: number;
}

/** A lifecycle record for VM `vm` (default vm-0), numbered `n`. */
export function makeRecord(n: number, options: RecordOptions = {}): LifecycleRecord {
  const vm = options.vm ?? 'vm-0';
  const vmId = guid(`vm:${vm}`);
  const eventId = options.eventId ?? guid(`event:${vm}:${n}`);
  const transition = options.transition ?? 'scheduled';
  const resourceId = `/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/${vm}`;
  const time = new Date(Date.UTC(2025, 8, 19, 18, 14, 47) + n * 1000).toISOString();
  return {
    specversion: '1.0',
    id: `${guid(`${vmId}|${eventId}|${transition}|${n}`)}`,
    source: resourceId,
    type: recordType(transition),
    subject: eventId,
    time,
    datacontenttype: 'application/json',
    transition,
    maintenancetype: 'Reboot',
    vmid: vmId,
    data: {
      EventId: eventId,
      EventType: 'Reboot',
      EventStatus: 'Scheduled',
      ResourceType: 'VirtualMachine',
      Resources: [vm],
      NotBefore: 'Fri, 19 Sep 2025 18:29:47 GMT',
      Description: `Virtual machine is going to be restarted.${'x'.repeat(options.padding ?? 0)}`,
      EventSource: 'Platform',
      DurationInSeconds: -1,
      DocumentIncarnation: n,
      notBeforeUtc: '2025-09-19T18:29:47.000Z',
      affectsThisVm: true,
      vm: {
        name: vm,
        vmId,
        resourceId,
        subscriptionId: '11111111-2222-3333-4444-555555555555',
        resourceGroup: 'rg',
        location: 'westeurope',
        zone: '1',
        vmScaleSetName: options.scaleSet ?? '',
        vmSize: 'Standard_D2s_v5',
        computerName: vm,
      },
      timing: { firstSeenAt: time, startedAt: null, endedAt: null, noticeSeconds: 900 },
    },
  };
}

/** `count` records spread over `vms` VMs (round-robin), numbered from `from`. */
export function makeRecords(count: number, vms = 3, from = 0): LifecycleRecord[] {
  return Array.from({ length: count }, (_, i) => makeRecord(from + i, { vm: `vm-${(from + i) % vms}` }));
}

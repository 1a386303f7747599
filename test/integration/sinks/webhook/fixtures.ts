/** Fixed lifecycle records (built directly from the LifecycleRecord type) for the webhook sink tests. */
import { type LifecycleRecord, recordType, type Transition } from '../../../../src/domain/index.ts';

export const EVENT_ID = '3da1b9aa-5204-4335-8c33-c54e315dcffe';
export const VM_ID = '02aab8a4-74ef-476e-8182-f6d2ba4166a6';
export const RESOURCE_ID =
  '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-web-prod/providers/Microsoft.Compute/virtualMachines/vm-web-01';

const STATUS: Record<Transition, string> = {
  scheduled: 'Scheduled',
  started: 'Started',
  completed: 'Completed',
  canceled: 'Canceled',
  updated: 'Scheduled',
  approved: 'Scheduled',
};

/** Observation time per transition; NotBefore is 18:29:47Z, i.e. 14 min after the scheduled observation. */
const TIME: Record<Transition, string> = {
  scheduled: '2025-09-19T18:15:47.000Z',
  updated: '2025-09-19T18:17:02.000Z',
  approved: '2025-09-19T18:18:30.000Z',
  started: '2025-09-19T18:29:50.000Z',
  completed: '2025-09-19T18:31:12.000Z',
  canceled: '2025-09-19T18:20:00.000Z',
};

export function makeRecord(
  transition: Transition,
  overrides: { data?: Partial<LifecycleRecord['data']>; eventType?: string } = {},
): LifecycleRecord {
  const eventType = overrides.eventType ?? 'Reboot';
  return {
    specversion: '1.0',
    id: `${VM_ID}:${EVENT_ID}:${transition}`,
    source: RESOURCE_ID,
    type: recordType(transition),
    subject: EVENT_ID,
    time: TIME[transition],
    datacontenttype: 'application/json',
    transition,
    maintenancetype: eventType,
    vmid: VM_ID,
    data: {
      EventId: EVENT_ID,
      EventType: eventType,
      EventStatus: STATUS[transition],
      ResourceType: 'VirtualMachine',
      Resources: ['vm-web-01'],
      NotBefore: 'Fri, 19 Sep 2025 18:29:47 GMT',
      Description: 'Virtual machine is going to be restarted as requested by authorized user.',
      EventSource: 'User',
      DurationInSeconds: -1,
      DocumentIncarnation: 2,
      notBeforeUtc: '2025-09-19T18:29:47.000Z',
      affectsThisVm: true,
      vm: {
        name: 'vm-web-01',
        vmId: VM_ID,
        resourceId: RESOURCE_ID,
        subscriptionId: '11111111-2222-3333-4444-555555555555',
        resourceGroup: 'rg-web-prod',
        location: 'westeurope',
        zone: '2',
        vmScaleSetName: '',
        vmSize: 'Standard_D2s_v5',
        computerName: 'vm-web-01',
      },
      timing: {
        firstSeenAt: TIME.scheduled,
        startedAt: transition === 'started' || transition === 'completed' ? TIME.started : null,
        endedAt: transition === 'completed' || transition === 'canceled' ? TIME[transition] : null,
        noticeSeconds: 840,
      },
      ...(overrides.data ?? {}),
    },
  };
}

/** The transitions slack/teams forward by default, plus the two extra ones. */
export const ALL_TRANSITIONS: Transition[] = [
  'scheduled',
  'started',
  'completed',
  'canceled',
  'updated',
  'approved',
];

/** A Standard Webhooks test secret (not used anywhere real). */
export const SIGNING_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const SIGNING_SECRET_2 = 'whsec_ZXhhbXBsZS1zZWNyZXQtZG8tbm90LXVzZS0wMTIzNDU=';

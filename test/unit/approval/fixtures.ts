/** Shared fixtures of the approval tests: a Scheduled Events event as the transform keeps it. */
import type { ScheduledEvent } from '../../../src/domain/index.ts';

/** A Scheduled Reboot `E1` of vm0 and vm1, NotBefore 2022-04-11T22:25:00Z, user-initiated; `fields` override. */
export function scheduledEvent(fields: Partial<ScheduledEvent> = {}): ScheduledEvent {
  return {
    EventId: 'E1',
    EventType: 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: ['vm0', 'vm1'],
    EventStatus: 'Scheduled',
    NotBefore: 'Mon, 11 Apr 2022 22:25:00 GMT',
    notBeforeUtc: '2022-04-11T22:25:00.000Z',
    Description: '',
    EventSource: 'User',
    DurationInSeconds: -1,
    ...fields,
  };
}

/** Shared fixtures of the approval tests: a Scheduled Events event as the transform keeps it, a progress entry. */
import type { EventProgress } from '../../../src/approval/progress.ts';
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

/** The progress entry of `E1` (occurrence 1) decided `approve` by rule `user` on the leader, nothing done yet. */
export function eventProgress(over: Partial<EventProgress> = {}): EventProgress {
  const eventId = over.eventId ?? 'E1';
  return {
    key: `${eventId}#1`,
    eventId,
    occurrence: 1,
    eventType: 'Reboot',
    affectsThisVm: true,
    leader: true,
    action: 'approve',
    rule: 'user',
    dryRun: false,
    prepare: 'none',
    hooks: [],
    post: 'none',
    approval: null,
    recorded: false,
    recover: 'none',
    ended: false,
    ...over,
  };
}

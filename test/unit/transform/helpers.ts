/** Builders for transform tests: documents, outcomes and a step runner that validates every record. */

import type {
  KubernetesRecordContext,
  LifecycleRecord,
  ScheduledEvent,
  VmIdentity,
} from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import {
  type ApprovalInput,
  type ForwarderState,
  initialState,
  transform,
} from '../../../src/transform/index.ts';

/** RFC 1123 form of an epoch-ms instant, as IMDS sends NotBefore. */
export function rfc1123(ms: number): string {
  return new Date(ms).toUTCString();
}

/** A normalised ScheduledEvent (as the parser would produce). `notBeforeMs` null means NotBefore "". */
export function event(
  fields: Partial<ScheduledEvent> & { EventId: string; notBeforeMs?: number | null },
): ScheduledEvent {
  const { notBeforeMs, ...rest } = fields;
  const status = rest.EventStatus ?? 'Scheduled';
  const nb =
    notBeforeMs === undefined
      ? status === 'Started'
        ? null
        : Date.parse('2022-04-11T22:26:58Z')
      : notBeforeMs;
  return {
    EventType: 'Freeze',
    ResourceType: 'VirtualMachine',
    Resources: ['WestNO_0', 'WestNO_1'],
    EventStatus: status,
    NotBefore: nb === null ? '' : rfc1123(nb),
    notBeforeUtc: nb === null ? null : new Date(nb).toISOString(),
    Description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
    EventSource: 'Platform',
    DurationInSeconds: 5,
    ...rest,
  };
}

export const VM: VmIdentity = {
  name: 'WestNO_0',
  vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
  resourceId:
    '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-web-prod/providers/Microsoft.Compute/virtualMachines/WestNO_0',
  subscriptionId: '11111111-2222-3333-4444-555555555555',
  resourceGroupName: 'rg-web-prod',
  location: 'norwayeast',
  zone: '',
  vmScaleSetName: '',
  vmSize: 'Standard_D2s_v5',
  osType: 'Linux',
  computerName: 'westno0',
};

/** One poll in a test sequence. `events: 'fail'` is a failed poll. `at` is seconds after T0. */
export interface Step {
  at: number;
  events: ScheduledEvent[] | 'fail';
  incarnation?: number;
  bootAt?: number;
  stallMs?: number;
  approvals?: ApprovalInput[];
}

/** Base time of every sequence: 2022-04-11T22:10:00Z (16m58s before the docs' example NotBefore). */
export const T0 = Date.parse('2022-04-11T22:10:00Z');

export interface RunResult {
  state: ForwarderState;
  records: LifecycleRecord[];
  /** Records per step. */
  perStep: LifecycleRecord[][];
}

/** Runs steps through transform, asserting every record validates; returns all records and the state. */
export function runSteps(
  steps: readonly Step[],
  options: {
    vm?: VmIdentity | undefined;
    start?: ForwarderState;
    maxGapMs?: number;
    /** The Kubernetes node context (record enrichment); absent: none, as outside Kubernetes. */
    kubernetes?: KubernetesRecordContext;
  } = {},
): RunResult {
  let state = options.start ?? initialState();
  const vm = 'vm' in options ? options.vm : VM;
  const records: LifecycleRecord[] = [];
  const perStep: LifecycleRecord[][] = [];
  let incarnation = 0;
  for (const step of steps) {
    const wallMs = T0 + step.at * 1000;
    const result = transform(state, {
      outcome:
        step.events === 'fail'
          ? {
              kind: 'failure',
              reason: 'timeout',
              message: 'timed out',
              observed: { wallMs, monotonicMs: wallMs },
              consecutiveFailures: 1,
            }
          : {
              kind: 'document',
              document: { DocumentIncarnation: step.incarnation ?? ++incarnation, Events: step.events },
              observed: { wallMs, monotonicMs: wallMs },
              changed: true,
            },
      vm,
      ...(step.bootAt === undefined ? {} : { hostBootTimeMs: T0 + step.bootAt * 1000 }),
      ...(step.stallMs === undefined ? {} : { maxStallMs: step.stallMs }),
      ...(step.approvals === undefined ? {} : { approvals: step.approvals }),
      ...(options.maxGapMs === undefined ? {} : { maxGapMs: options.maxGapMs }),
      ...(options.kubernetes === undefined ? {} : { kubernetes: options.kubernetes }),
    });
    for (const record of result.records) {
      const errors = validateRecord(record);
      if (errors.length > 0) throw new Error(`record ${record.type} is invalid: ${errors.join('; ')}`);
    }
    if (step.incarnation !== undefined) incarnation = step.incarnation;
    state = result.state;
    records.push(...result.records);
    perStep.push(result.records);
  }
  return { state, records, perStep };
}

/** `EventId:transition` of each record, in order. */
export function summary(records: readonly LifecycleRecord[]): string[] {
  return records.map((record) => `${record.subject}:${record.transition}`);
}

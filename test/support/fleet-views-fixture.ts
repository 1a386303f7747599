/**
 * A hand-made fleet history with known answers for the operator views (src/fleet/history/views.ts), used by the
 * integration test (test/integration/fleet/dashboard-views.test.ts) and the browser test
 * (test/browser/fleet-views.test.ts). Times are seconds after 2025-01-01T00:00:00Z (records.ts's T0):
 *
 * - day 0: a broadcast Reboot B1 to an availability set (av_a and av_b affected, av_c an observer), approved by
 *   av_a (leader, posted) and recorded by av_b (not the leader);
 * - day 1: three overlapping Freezes in scale set web (zone 1): [87400, 87430], [87410, 87500], [87430, 87600]
 *   — closed intervals, so three VMs at once at 87430;
 * - day 2: a Freeze in web and one in scale set api (zone 2), overlapping in time (two at once in the region);
 * - day 3, pending: a Reboot of web_5 and web_6 (2 h notice), a Redeploy started on web_7 (still running), a
 *   Terminate notice of spot_1 (eastus2, zone 3).
 */
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { iso, record } from './fleet-records.ts';

export const D = 86_400;

export interface Lifecycle {
  vm: string;
  eventId: string;
  eventType?: string;
  seen: number;
  notice: number;
  started?: number;
  ended?: number;
  downtime?: number;
  stallMs?: number;
  location?: string;
  zone?: string;
  scaleSet?: string;
  resources?: string[];
  affects?: boolean;
  approval?: { at: number; rule: string; leader: boolean; posted: boolean };
}

/** The records one VM sends for one event: scheduled, optionally approved, started, completed. */
export function lifecycle(o: Lifecycle): LifecycleRecord[] {
  const base = {
    vm: o.vm,
    eventId: o.eventId,
    eventType: o.eventType ?? 'Freeze',
    firstSeenAt: o.seen,
    notBeforeAt: o.seen + o.notice,
    location: o.location ?? 'westeurope',
    zone: o.zone ?? '1',
    scaleSet: o.scaleSet ?? '',
  };
  const extra = { affectsThisVm: o.affects ?? true, Resources: o.resources ?? [o.vm] };
  const records = [record('scheduled', { ...base, at: o.seen, extra })];
  if (o.approval)
    records.push(
      record('approved', {
        ...base,
        at: o.approval.at,
        extra: {
          ...extra,
          approval: {
            approvedAt: iso(o.approval.at),
            rule: o.approval.rule,
            leader: o.approval.leader,
            posted: o.approval.posted,
            dryRun: false,
            hooks: [{ name: 'drain', ok: true, exitCode: 0, durationMs: 10, timedOut: false }],
          },
        },
      }),
    );
  if (o.started !== undefined)
    records.push(record('started', { ...base, at: o.started, startedAt: o.started, extra }));
  if (o.ended !== undefined)
    records.push(
      record('completed', {
        ...base,
        at: o.ended,
        startedAt: o.started ?? null,
        extra: {
          ...extra,
          inferred: false,
          observedImpact: {
            expectedDurationSeconds: 5,
            hostRebooted: o.downtime !== undefined,
            downtimeSeconds: o.downtime ?? null,
            downtimeFrom: null,
            downtimeTo: null,
            longestStallMs: o.stallMs ?? null,
            longestObservationGapMs: 1000,
          },
        },
      }),
    );
  return records;
}

export function viewsFixture(): LifecycleRecord[] {
  const av = {
    eventId: 'B1',
    eventType: 'Reboot',
    seen: 3600,
    notice: 900,
    zone: '',
    resources: ['av_a', 'av_b'],
  };
  const web = { scaleSet: 'web', zone: '1' };
  return [
    ...lifecycle({
      ...av,
      vm: 'av_a',
      started: 4600,
      ended: 4700,
      downtime: 60,
      approval: { at: 4000, rule: 'reboot-rule', leader: true, posted: true },
    }),
    ...lifecycle({
      ...av,
      vm: 'av_b',
      started: 4600,
      ended: 4720,
      downtime: 80,
      approval: { at: 4010, rule: 'reboot-rule', leader: false, posted: false },
    }),
    ...lifecycle({ ...av, vm: 'av_c', affects: false }),
    ...lifecycle({
      ...web,
      vm: 'web_1',
      eventId: 'F1',
      seen: D,
      notice: 900,
      started: 87_400,
      ended: 87_430,
      stallMs: 4200,
    }),
    ...lifecycle({
      ...web,
      vm: 'web_2',
      eventId: 'F2',
      seen: D + 60,
      notice: 840,
      started: 87_410,
      ended: 87_500,
      stallMs: 9000,
    }),
    ...lifecycle({
      ...web,
      vm: 'web_3',
      eventId: 'F3',
      seen: D + 120,
      notice: 780,
      started: 87_430,
      ended: 87_600,
      stallMs: 2000,
    }),
    ...lifecycle({
      ...web,
      vm: 'web_4',
      eventId: 'F4',
      seen: 2 * D,
      notice: 600,
      started: 173_500,
      ended: 173_520,
      stallMs: 1500,
    }),
    ...lifecycle({
      vm: 'api_1',
      eventId: 'F5',
      scaleSet: 'api',
      zone: '2',
      seen: 2 * D + 30,
      notice: 570,
      started: 173_510,
      ended: 173_530,
      stallMs: 3000,
    }),
    ...['web_5', 'web_6'].flatMap((vm) =>
      lifecycle({
        ...web,
        vm,
        eventId: 'P1',
        eventType: 'Reboot',
        seen: 3 * D,
        notice: 7200,
        resources: ['web_5', 'web_6'],
      }),
    ),
    ...lifecycle({
      ...web,
      vm: 'web_7',
      eventId: 'P2',
      eventType: 'Redeploy',
      seen: 3 * D + 600,
      notice: 300,
      started: 260_200,
    }),
    ...lifecycle({
      vm: 'spot_1',
      eventId: 'T1',
      eventType: 'Terminate',
      location: 'eastus2',
      zone: '3',
      scaleSet: 'spot',
      seen: 3 * D + 1000,
      notice: 30,
    }),
  ];
}

import { describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type FleetEvent, foldEvent } from '../../../src/fleet/fold.ts';
import { foldMaintenance } from '../../../src/fleet/fold-maintenance.ts';
import { freezeLifecycle, record } from '../../support/fleet-records.ts';

/** One observation per VM: the fold of that VM's records of the event. */
function observations(records: LifecycleRecord[]): FleetEvent[] {
  const byVm = new Map<string, LifecycleRecord[]>();
  for (const r of records) byVm.set(r.source, [...(byVm.get(r.source) ?? []), r]);
  return [...byVm.values()].map((rs) => foldEvent(rs));
}

/** Reboot R1 broadcast to web_1..web_5, affecting `affected`; observers see it scheduled (and maybe started). */
function broadcast(affected: string[], progress: 'scheduled' | 'started' | 'completed'): LifecycleRecord[] {
  const out: LifecycleRecord[] = [];
  for (const vm of ['web_1', 'web_2', 'web_3', 'web_4', 'web_5']) {
    const o = {
      vm,
      eventId: 'R1',
      eventType: 'Reboot',
      firstSeenAt: 10,
      extra: { Resources: affected, affectsThisVm: affected.includes(vm) },
    };
    out.push(record('scheduled', { ...o, at: 10 }));
    if (progress !== 'scheduled') out.push(record('started', { ...o, at: 900, startedAt: 900 }));
    if (progress === 'completed')
      out.push(
        record('completed', {
          ...o,
          at: 1000,
          startedAt: 900,
          extra: {
            ...o.extra,
            inferred: false,
            observedImpact: affected.includes(vm)
              ? { hostRebooted: true, downtimeSeconds: vm === 'web_2' ? 120 : 80 }
              : {},
          },
        }),
      );
  }
  return out;
}

describe('foldMaintenance', () => {
  it('counts a broadcast once: affected VMs from Resources and self-reports, the rest are observers', () => {
    const m = foldMaintenance(observations(broadcast(['web_1', 'web_2'], 'started')));
    expect(m).toMatchObject({
      eventId: 'R1',
      eventType: 'Reboot',
      status: 'started',
      pending: true,
      affectedVms: 2,
      affectedNames: ['web_1', 'web_2'],
      reportingVms: 5,
      observers: 3,
      records: 10,
    });
    expect(m.transitions).toMatchObject({ scheduled: 5, started: 5 });
  });

  it('takes impact from affected VMs only (the longest), status from the basis', () => {
    const m = foldMaintenance(observations(broadcast(['web_1', 'web_2'], 'completed')));
    expect(m).toMatchObject({ status: 'completed', pending: false, observedSeconds: 120, inferred: false });
  });

  it('is independent of the order of observations', () => {
    const obs = observations(broadcast(['web_1', 'web_3'], 'completed'));
    expect(foldMaintenance([...obs].reverse())).toEqual(foldMaintenance(obs));
  });

  it('uses every observation as the basis when no affected VM reported (its forwarder is down)', () => {
    const onlyObservers = broadcast(['gone_1'], 'scheduled');
    const m = foldMaintenance(observations(onlyObservers));
    expect(m).toMatchObject({
      affectedVms: 1,
      affectedNames: ['gone_1'],
      observers: 5,
      status: 'scheduled',
      pending: true,
    });
  });

  it('a single VM event is one maintenance event affecting that VM', () => {
    const m = foldMaintenance(observations(freezeLifecycle('db_1', 'F1')));
    expect(m).toMatchObject({
      affectedVms: 1,
      reportingVms: 1,
      observers: 0,
      status: 'completed',
      approval: 'lapsed',
    });
    expect(m.observedSeconds).toBe(4.2);
  });

  it('a deleted VM (Preempt started) is not pending', () => {
    const records = [
      record('scheduled', { vm: 'spot_1', eventId: 'P1', eventType: 'Preempt', at: 0, notBeforeAt: 30 }),
      record('started', { vm: 'spot_1', eventId: 'P1', eventType: 'Preempt', at: 30, startedAt: 30 }),
    ];
    expect(foldMaintenance(observations(records))).toMatchObject({
      status: 'started',
      vmDeleted: true,
      pending: false,
    });
  });

  it('refuses an empty input', () => {
    expect(() => foldMaintenance([])).toThrow(/at least one/);
  });
});

/**
 * The synthetic fleet generator (src/simulator/fleet.ts) and `simulate fleet`: deterministic for a seed, rates
 * near the options, broadcast events with observers, every record valid against the record schema, pending
 * events at the window's end, the truth consistent with the records, and each VM's records exactly what the real
 * transform emits for the documents that VM saw.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  type HeartbeatRecord,
  heartbeatProblems,
  isHeartbeat,
  type LifecycleRecord,
  recordType,
  type ScheduledEvent,
  TRANSITION_RANK,
} from '../../../src/domain/index.ts';
import { validateHeartbeat, validateRecord } from '../../../src/domain/record-schema.ts';
import { type Fleet, generateFleet } from '../../../src/simulator/fleet.ts';
import { type ApprovalInput, initialState, transform } from '../../../src/transform/index.ts';
import { jsonLines, MAIN, REPO } from '../../support/child.ts';

const all = (fleet: Fleet): LifecycleRecord[] => [...fleet.records()];

// One 500-VM / 30-day fleet shared by the tests that only read it.
const fleet500 = generateFleet({ vms: 500, days: 30, seed: 42 });
const records500 = all(fleet500);

function byVm(records: LifecycleRecord[]): Map<string, LifecycleRecord[]> {
  const map = new Map<string, LifecycleRecord[]>();
  for (const r of records) {
    const list = map.get(r.source) ?? [];
    list.push(r);
    map.set(r.source, list);
  }
  return map;
}

describe('generateFleet: determinism', () => {
  it('gives the same VMs, records (ids included) and truth for the same seed, other ones for another seed', () => {
    const a = generateFleet({ vms: 60, days: 20, seed: 7 });
    const b = generateFleet({ vms: 60, days: 20, seed: 7 });
    const c = generateFleet({ vms: 60, days: 20, seed: 8 });
    expect(b.vms).toEqual(a.vms);
    expect(b.truth).toEqual(a.truth);
    const ra = all(a);
    expect(all(b)).toEqual(ra);
    // records() can be iterated again and yields the same stream.
    expect(all(a)).toEqual(ra);
    expect(all(c).map((r) => r.id)).not.toEqual(ra.map((r) => r.id));
  });

  it('streams lazily: the first record comes without generating the rest', () => {
    const big = generateFleet({ vms: 2000, days: 30, seed: 3 });
    const iterator = big.records();
    const first = iterator.next();
    expect(first.done).toBe(false);
    expect((first.value as LifecycleRecord).time >= big.window.start).toBe(true);
    iterator.return(undefined);
  });

  it('names a bad option', () => {
    expect(() => generateFleet({ vms: 0 })).toThrow(/vms must be an integer >= 1/);
    expect(() => generateFleet({ days: -1 })).toThrow(/days must be a number > 0/);
    expect(() => generateFleet({ seed: 1.5 })).toThrow(/seed must be an integer/);
    expect(() => generateFleet({ start: 'soon' })).toThrow(/start must be an ISO 8601 time/);
    expect(() => generateFleet({ availabilitySetFraction: 2 })).toThrow(/availabilitySetFraction/);
    expect(() => generateFleet({ regions: [] })).toThrow(/regions/);
  });
});

describe('generateFleet: a 500-VM, 30-day fleet', () => {
  const { truth, vms } = fleet500;

  it('lays out availability sets (zone "") and zonal scale sets of 50–200 VMs over the regions', () => {
    const initial = vms.filter((v) => v.createdAt === null);
    expect(initial).toHaveLength(500);
    const avset = initial.filter((v) => v.availabilitySet !== '');
    expect(avset).toHaveLength(150);
    expect(new Set(avset.map((v) => v.zone))).toEqual(new Set(['']));
    expect(new Set(avset.map((v) => v.availabilitySet)).size).toBe(30);
    const scaleSetVms = vms.filter((v) => v.scaleSet !== '');
    expect(new Set(scaleSetVms.map((v) => v.zone))).toEqual(new Set(['1', '2', '3']));
    const sizes = new Map<string, number>();
    for (const v of initial.filter((x) => x.scaleSet !== ''))
      sizes.set(v.scaleSet, (sizes.get(v.scaleSet) ?? 0) + 1);
    const full = [...sizes.values()].slice(0, -1); // the last one takes the remainder
    for (const size of full) expect(size).toBeGreaterThanOrEqual(50);
    for (const size of sizes.values()) expect(size).toBeLessThanOrEqual(200);
    for (const v of vms) expect(['westeurope', 'northeurope', 'eastus2']).toContain(v.location);
    expect(new Set(vms.map((v) => v.name)).size).toBe(vms.length);
    expect(new Set(vms.map((v) => v.vmId)).size).toBe(vms.length);
  });

  it('produces events near the rates: 0.1 per VM per day, the type mix, cancellations, updates, approvals', () => {
    const expected = 500 * 30 * 0.1;
    expect(truth.counts.affectedVmEvents).toBeGreaterThan(expected * 0.88);
    expect(truth.counts.affectedVmEvents).toBeLessThan(expected * 1.12);
    expect(truth.maintenanceEvents).toBe(truth.events.length);
    expect(truth.maintenanceEvents).toBeLessThan(truth.counts.affectedVmEvents); // broadcasts count once
    const share = (type: string) => (truth.counts.byType[type] ?? 0) / truth.maintenanceEvents;
    expect(share('Freeze')).toBeGreaterThan(0.45);
    expect(share('Freeze')).toBeLessThan(0.65);
    expect(share('Reboot')).toBeGreaterThan(0.13);
    expect(share('Reboot')).toBeLessThan(0.27);
    expect(share('Redeploy')).toBeGreaterThan(0.05);
    expect(share('Redeploy')).toBeLessThan(0.15);
    expect(share('Preempt') + share('Terminate')).toBeGreaterThan(0.1);
    expect(share('Preempt') + share('Terminate')).toBeLessThan(0.22);
    const byTransition = truth.counts.byTransition;
    const canceledEvents = truth.events.filter((e) => e.status === 'canceled').length;
    expect(canceledEvents / truth.maintenanceEvents).toBeGreaterThan(0.01);
    expect(canceledEvents / truth.maintenanceEvents).toBeLessThan(0.06);
    expect(byTransition.updated).toBeGreaterThan(0);
    const approved = new Set(records500.filter((r) => r.transition === 'approved').map((r) => r.subject));
    expect(approved.size / truth.maintenanceEvents).toBeGreaterThan(0.06);
    expect(approved.size / truth.maintenanceEvents).toBeLessThan(0.14);
    // Preempt/Terminate only on scale-set VMs; availability-set VMs have no zone.
    const names = new Map(vms.map((v) => [v.name, v]));
    for (const e of truth.events.filter((x) => x.eventType === 'Preempt' || x.eventType === 'Terminate')) {
      for (const name of e.affected) expect(names.get(name)?.scaleSet).not.toBe('');
    }
  });

  it('counts what it yields, every record in time order inside the window', () => {
    expect(records500).toHaveLength(truth.counts.records);
    const counted: Record<string, number> = {};
    for (const r of records500) counted[r.transition] = (counted[r.transition] ?? 0) + 1;
    for (const [transition, n] of Object.entries(truth.counts.byTransition)) {
      expect(counted[transition] ?? 0, transition).toBe(n);
    }
    for (let i = 1; i < records500.length; i++) {
      expect(records500[i - 1]!.time <= records500[i]!.time).toBe(true);
    }
    expect(records500[0]!.time >= fleet500.window.start).toBe(true);
    expect(records500.at(-1)!.time < fleet500.window.end).toBe(true);
  });

  it('every record is a valid lifecycle record (schema), ids unique, envelope consistent', () => {
    const sources = new Map(vms.map((v) => [v.source, v]));
    const ids = new Set<string>();
    for (const r of records500) {
      expect(validateRecord(r), JSON.stringify(r)).toEqual([]);
      expect(ids.has(r.id), r.id).toBe(false);
      ids.add(r.id);
      const vm = sources.get(r.source);
      expect(vm, r.source).toBeDefined();
      expect(r.vmid).toBe(vm?.vmId);
      expect(r.data.vm.name).toBe(vm?.name);
      expect(r.data.vm.zone).toBe(vm?.zone);
      expect(r.data.vm.vmScaleSetName).toBe(vm?.scaleSet);
      expect(r.subject).toBe(r.data.EventId);
      expect(r.type).toBe(recordType(r.transition));
      expect(r.maintenancetype).toBe(r.data.EventType);
      expect(r.data.occurrence).toBe(1);
      expect(r.data.affectsThisVm).toBe(r.data.Resources.includes(r.data.vm.name));
    }
  });

  it('has broadcast events: one EventId reported by several affected VMs (affectsThisVm true) and observers (false)', () => {
    const broadcast = truth.events.filter((e) => e.affected.length >= 2 && e.observers.length >= 1);
    expect(broadcast.length).toBeGreaterThan(5);
    const avsetEvents = truth.events.filter((e) => e.affected[0]!.startsWith('avset-'));
    const share = avsetEvents.filter((e) => e.affected.length >= 2).length / avsetEvents.length;
    expect(share).toBeGreaterThan(0.1);
    expect(share).toBeLessThan(0.3);
    const event = broadcast[0]!;
    const its = records500.filter((r) => r.subject === event.eventId);
    const reporters = new Map<string, boolean>();
    for (const r of its) {
      expect(r.data.Resources).toEqual(event.affected);
      reporters.set(r.data.vm.name, r.data.affectsThisVm);
    }
    for (const name of event.affected) expect(reporters.get(name), name).toBe(true);
    for (const name of event.observers) expect(reporters.get(name), name).toBe(false);
    // An observer reports the lifecycle like the transform does: scheduled, started, completed (not inferred).
    const observer = its.filter((r) => r.data.vm.name === event.observers[0]);
    if (event.status === 'completed') {
      expect(observer.map((r) => r.transition)).toEqual(
        expect.arrayContaining(['scheduled', 'started', 'completed']),
      );
      const completed = observer.find((r) => r.transition === 'completed')!;
      expect(completed.data.inferred).toBe(false);
      expect((completed.data.observedImpact as { hostRebooted: boolean }).hostRebooted).toBe(false);
    }
  });

  it('leaves events pending at the end of the window (scheduled or started, no terminal record)', () => {
    const endMs = Date.parse(fleet500.window.end);
    const pending = truth.events.filter((e) => e.status === 'scheduled' || e.status === 'started');
    expect(pending.length).toBeGreaterThan(0);
    expect(pending.some((e) => Date.parse(e.firstSeenAt) > endMs - 6 * 3_600_000)).toBe(true);
    const pendingIds = new Set(pending.map((e) => e.eventId));
    const terminals = records500.filter(
      (r) =>
        pendingIds.has(r.subject) &&
        (r.transition === 'completed' || r.transition === 'canceled') &&
        r.data.affectsThisVm,
    );
    expect(terminals).toEqual([]);
  });

  it('the truth matches the records: every affected VM reports every event, statuses and first sight agree', () => {
    const perEvent = new Map<string, LifecycleRecord[]>();
    for (const r of records500) {
      const list = perEvent.get(r.subject) ?? [];
      list.push(r);
      perEvent.set(r.subject, list);
    }
    expect(perEvent.size).toBe(truth.maintenanceEvents);
    const statusOf = (t: string) => (t === 'updated' || t === 'approved' ? 'scheduled' : t);
    for (const e of truth.events) {
      const its = perEvent.get(e.eventId) ?? [];
      const reporters = new Set(its.map((r) => r.data.vm.name));
      for (const name of e.affected) expect(reporters.has(name), `${e.eventId} ${name}`).toBe(true);
      expect(reporters.size).toBe(e.affected.length + e.observers.length);
      const affected = its.filter((r) => r.data.affectsThisVm);
      const rank = (s: string) => ({ scheduled: 0, started: 1, completed: 2, canceled: 2 })[s] ?? 0;
      const furthest = affected.map((r) => statusOf(r.transition)).sort((a, b) => rank(b) - rank(a))[0];
      expect(furthest, e.eventId).toBe(e.status);
      expect(affected.map((r) => r.data.timing.firstSeenAt).sort()[0]).toBe(e.firstSeenAt);
      expect(its.every((r) => r.data.EventType === e.eventType)).toBe(true);
    }
  });

  it('per VM: a valid lifecycle per event (scheduled first, at most one started, one terminal last) in order', () => {
    for (const [source, list] of byVm(records500)) {
      for (let i = 1; i < list.length; i++) expect(list[i - 1]!.time <= list[i]!.time, source).toBe(true);
      const perEvent = new Map<string, LifecycleRecord[]>();
      for (const r of list) perEvent.set(r.subject, [...(perEvent.get(r.subject) ?? []), r]);
      for (const [eventId, events] of perEvent) {
        const transitions = events.map((r) => r.transition);
        expect(transitions[0], eventId).toBe('scheduled');
        expect(transitions.filter((t) => t === 'started').length).toBeLessThanOrEqual(1);
        const terminal = transitions.filter((t) => t === 'completed' || t === 'canceled');
        expect(terminal.length).toBeLessThanOrEqual(1);
        if (terminal.length === 1) expect(['completed', 'canceled']).toContain(transitions.at(-1));
        const ranks = transitions.map((t) => TRANSITION_RANK[t]);
        expect([...ranks].sort((a, b) => a - b)).toEqual(ranks);
      }
    }
  });

  it('Preempt/Terminate delete the VM: scheduled → started only, nothing after, a replacement instance', () => {
    const deleting = records500.filter(
      (r) => r.maintenancetype === 'Preempt' || r.maintenancetype === 'Terminate',
    );
    expect(deleting.length).toBeGreaterThan(0);
    expect(deleting.filter((r) => r.transition === 'completed' || r.transition === 'canceled')).toEqual([]);
    const preempt = deleting.filter((r) => r.transition === 'scheduled' && r.maintenancetype === 'Preempt');
    for (const r of preempt) expect(r.data.timing.noticeSeconds).toBeLessThanOrEqual(30);
    const deleted = vms.filter((v) => v.deletedAt !== null);
    expect(deleted.length).toBeGreaterThan(0);
    const perVm = byVm(records500);
    for (const vm of deleted) {
      const list = perVm.get(vm.source) ?? [];
      expect(
        list.every((r) => r.time <= vm.deletedAt!),
        vm.name,
      ).toBe(true);
      expect(list.at(-1)?.transition).toBe('started');
    }
    const replacements = vms.filter((v) => v.createdAt !== null);
    expect(replacements.length).toBeGreaterThan(0);
    for (const vm of replacements) {
      for (const r of perVm.get(vm.source) ?? []) expect(r.time > vm.createdAt!).toBe(true);
    }
  });

  it('completed records carry observed impact: Freeze stalls 0.5–10 s, reboots 30–600 s of downtime', () => {
    const completed = records500.filter((r) => r.transition === 'completed' && r.data.affectsThisVm);
    const impact = (r: LifecycleRecord) => r.data.observedImpact as Record<string, number | boolean | null>;
    const freezes = completed.filter((r) => r.maintenancetype === 'Freeze');
    expect(freezes.length).toBeGreaterThan(100);
    for (const r of freezes) {
      expect(impact(r).longestStallMs).toBeGreaterThanOrEqual(500);
      expect(impact(r).longestStallMs).toBeLessThanOrEqual(10_000);
      expect(impact(r).hostRebooted).toBe(false);
    }
    const reboots = completed.filter(
      (r) => r.maintenancetype === 'Reboot' || r.maintenancetype === 'Redeploy',
    );
    expect(reboots.length).toBeGreaterThan(20);
    for (const r of reboots) {
      expect(impact(r).hostRebooted).toBe(true);
      expect(impact(r).downtimeSeconds).toBeGreaterThanOrEqual(30);
      expect(impact(r).downtimeSeconds).toBeLessThanOrEqual(600);
      if (r.data.inferred) expect(r.data.reason).toBe('host-rebooted');
    }
    expect(reboots.some((r) => r.data.inferred === true)).toBe(true);
    expect(reboots.some((r) => r.data.inferred === false)).toBe(true);
  });

  it('without observerReports only affected VMs report', () => {
    const fleet = generateFleet({ vms: 100, days: 20, seed: 42, observerReports: false });
    expect(fleet.truth.events.every((e) => e.observers.length === 0)).toBe(true);
    expect(all(fleet).every((r) => r.data.affectsThisVm)).toBe(true);
  });
});

/**
 * Replays each VM's documents through the real transform: the document a VM saw at each of its record times is
 * rebuilt from its records (an event is present from its first record until its terminal one, with the fields
 * of its latest record), approvals are passed at their times, reboots through hostBootTimeMs with a poll at
 * both ends of the downtime. The transform's records must equal the generator's, except the longest observation
 * gap (the replay polls only at changes) — ids, times, fields, inferred and reasons included.
 */
describe('each VM reports what the real transform emits for the documents it saw', () => {
  const fields = (r: LifecycleRecord): ScheduledEvent => ({
    EventId: r.data.EventId,
    EventType: r.data.EventType,
    ResourceType: r.data.ResourceType,
    Resources: [...r.data.Resources],
    EventStatus: r.data.EventStatus,
    NotBefore: r.data.NotBefore,
    notBeforeUtc: r.data.notBeforeUtc,
    Description: r.data.Description,
    EventSource: r.data.EventSource,
    DurationInSeconds: r.data.DurationInSeconds,
  });
  const comparable = (r: LifecycleRecord) => {
    const copy = structuredClone(r);
    const impact = copy.data.observedImpact as Record<string, unknown> | undefined;
    if (impact) delete impact.longestObservationGapMs;
    return copy;
  };

  function replay(list: LifecycleRecord[]): LifecycleRecord[] | 'overlap' {
    type Reboot = { fromMs: number; toMs: number; eventId: string };
    const reboots: Reboot[] = list.flatMap((r) => {
      const impact = r.data.observedImpact as
        | { downtimeFrom: string | null; downtimeTo: string | null }
        | undefined;
      return impact?.downtimeFrom && impact.downtimeTo
        ? [
            {
              fromMs: Date.parse(impact.downtimeFrom),
              toMs: Date.parse(impact.downtimeTo),
              eventId: r.subject,
            },
          ]
        : [];
    });
    // The stall detector and a reboot are the VM's, not an event's: they count for every event the VM tracks at
    // that moment (measurements, the reason it ends with). The generator measures per event, and the replay can
    // pass one stall per poll only; VMs where a Started window overlaps another event are therefore not compared.
    const impacts = list.flatMap((r) =>
      r.transition === 'completed' && r.data.timing.startedAt !== null
        ? [{ fromMs: Date.parse(r.data.timing.startedAt), toMs: Date.parse(r.time), eventId: r.subject }]
        : [],
    );
    const lifespan = new Map<string, [number, number]>();
    for (const r of list) {
      const t = Date.parse(r.time);
      const span = lifespan.get(r.subject) ?? [t, Number.POSITIVE_INFINITY];
      if (r.transition === 'completed' || r.transition === 'canceled') span[1] = t;
      lifespan.set(r.subject, span);
    }
    for (const own of impacts) {
      for (const [eventId, [from, to]] of lifespan) {
        if (eventId !== own.eventId && from <= own.toMs && to >= own.fromMs) return 'overlap';
      }
    }
    const times = new Set<number>(list.map((r) => Date.parse(r.time)));
    for (const reboot of reboots) times.add(reboot.fromMs).add(reboot.toMs);
    let state = initialState();
    const present = new Map<string, ScheduledEvent>();
    const out: LifecycleRecord[] = [];
    let incarnation = 1;
    for (const t of [...times].sort((a, b) => a - b)) {
      const at = list.filter((r) => Date.parse(r.time) === t);
      const approvals: ApprovalInput[] = at
        .filter((r) => r.transition === 'approved')
        .map((r) => {
          const a = r.data.approval as Pick<ApprovalInput, 'rule' | 'leader' | 'hooks' | 'dryRun'>;
          return {
            eventId: r.subject,
            approvedAtMs: t,
            rule: a.rule,
            leader: a.leader,
            hooks: a.hooks,
            dryRun: a.dryRun,
          };
        });
      const changes = at.filter((r) => r.transition !== 'approved');
      if (approvals.length > 0) {
        // Approvals are not poll results: passed along with a failed poll, they are recorded all the same.
        const result = transform(state, {
          outcome: {
            kind: 'failure',
            reason: 'timeout',
            message: 'replay',
            consecutiveFailures: 1,
            observed: { wallMs: t, monotonicMs: t },
          },
          vm: vmOf(list[0]!),
          approvals,
        });
        state = result.state;
        out.push(...result.records);
        if (changes.length === 0) continue;
      }
      for (const r of changes) {
        if (r.transition === 'completed' || r.transition === 'canceled') present.delete(r.subject);
        else present.set(r.subject, fields(r));
        incarnation = r.data.DocumentIncarnation;
      }
      const boot = reboots.filter((b) => b.toMs <= t).at(-1);
      const completedHere = changes.find((r) => r.transition === 'completed');
      const stall = (completedHere?.data.observedImpact as { longestStallMs: number | null } | undefined)
        ?.longestStallMs;
      const result = transform(state, {
        outcome: {
          kind: 'document',
          document: { DocumentIncarnation: incarnation, Events: [...present.values()] },
          observed: { wallMs: t, monotonicMs: t },
          changed: true,
        },
        vm: vmOf(list[0]!),
        hostBootTimeMs: boot === undefined ? 0 : boot.fromMs + 1,
        maxGapMs: Number.POSITIVE_INFINITY,
        ...(stall === null || stall === undefined ? {} : { maxStallMs: stall }),
      });
      state = result.state;
      out.push(...result.records);
    }
    return out;
  }

  const vmOf = (r: LifecycleRecord) => ({
    name: r.data.vm.name,
    vmId: r.data.vm.vmId,
    resourceId: r.data.vm.resourceId,
    subscriptionId: r.data.vm.subscriptionId,
    resourceGroupName: r.data.vm.resourceGroup,
    location: r.data.vm.location,
    zone: r.data.vm.zone,
    vmScaleSetName: r.data.vm.vmScaleSetName,
    vmSize: r.data.vm.vmSize,
    osType: 'Linux',
    computerName: r.data.vm.computerName,
  });

  it('for (nearly) every VM of the 500-VM fleet', () => {
    let compared = 0;
    let skipped = 0;
    const covered = new Set<string>();
    for (const [source, list] of byVm(records500)) {
      const replayed = replay(list);
      if (replayed === 'overlap') {
        skipped++;
        continue;
      }
      compared++;
      for (const r of list)
        covered.add(r.data.reason === undefined ? r.transition : `${r.transition}/${r.data.reason}`);
      const sort = (rs: LifecycleRecord[]) =>
        rs.map(comparable).sort((a, b) => a.time.localeCompare(b.time) || a.id.localeCompare(b.id));
      expect(sort(replayed), source).toEqual(sort(list));
    }
    expect(compared).toBeGreaterThan(0.85 * (compared + skipped));
    // The comparison covers every path: updates, approvals, cancellations, reboots that ended across the reboot.
    expect([...covered].sort()).toEqual(
      [
        'approved',
        'canceled',
        'completed',
        'completed/host-rebooted',
        'scheduled',
        'started',
        'updated',
      ].sort(),
    );
  });
});

describe('generateFleet: heartbeats', () => {
  const fleet = generateFleet({ vms: 400, days: 20, seed: 7, heartbeatDays: 10 });
  const beats = [...fleet.heartbeats()];
  const end = Date.parse(fleet.window.end);

  it('leaves the records as they are: the same with heartbeats or without', () => {
    const without = generateFleet({ vms: 400, days: 20, seed: 7, heartbeatIntervalSeconds: 0 });
    expect([...without.heartbeats()]).toEqual([]);
    expect(all(without)).toEqual(all(fleet));
  });

  it('every VM sends valid heartbeats at the interval over the heartbeat window, in time order', () => {
    expect(beats).toHaveLength(fleet.heartbeatTruth.heartbeats);
    const from = end - 10 * 86_400_000;
    for (const b of beats.filter((_, i) => i % 97 === 0)) expect(validateHeartbeat(b)).toEqual([]);
    for (let i = 1; i < beats.length; i++) expect(beats[i]!.time >= beats[i - 1]!.time).toBe(true);
    for (const b of beats) {
      expect(Date.parse(b.time)).toBeGreaterThanOrEqual(from);
      expect(Date.parse(b.time)).toBeLessThanOrEqual(end);
    }
    const perVm = new Map<string, HeartbeatRecord[]>();
    for (const b of beats) perVm.set(b.source, [...(perVm.get(b.source) ?? []), b]);
    // Alive for the whole window and never stopped: one heartbeat an hour, ten days long.
    const stopped = new Set(fleet.heartbeatTruth.stopped.map((s) => s.vm));
    const steady = fleet.vms.filter(
      (v) => v.createdAt === null && v.deletedAt === null && !stopped.has(v.name),
    );
    for (const vm of steady.slice(0, 50)) {
      const own = perVm.get(vm.source)!;
      expect(own.length).toBe(240);
      for (let i = 1; i < own.length; i++)
        expect(Date.parse(own[i]!.time) - Date.parse(own[i - 1]!.time)).toBe(3_600_000);
      expect(new Set(own.map((b) => b.id)).size).toBe(own.length);
    }
    // A replacement instance created in the window starts with a start heartbeat, sequence 1.
    const replaced = fleet.vms.find(
      (v) => v.createdAt !== null && Date.parse(v.createdAt) > from + 86_400_000,
    );
    expect(replaced).toBeDefined();
    expect(perVm.get(replaced!.source)![0]!.data).toMatchObject({ trigger: 'start', sequence: 1 });
  });

  it('some forwarders stop (some cleanly) and some report problems, as the truth says', () => {
    const { stopped, sick } = fleet.heartbeatTruth;
    expect(stopped.length).toBeGreaterThan(0);
    expect(sick.length).toBeGreaterThan(0);
    const byName = new Map(fleet.vms.map((v) => [v.name, v.source]));
    for (const s of stopped) {
      const own = beats.filter((b) => b.source === byName.get(s.vm));
      expect(Date.parse(own.at(-1)!.time)).toBeLessThanOrEqual(s.atMs);
      if (s.clean) expect(own.at(-1)!.data.trigger).toBe('stop');
    }
    for (const s of sick) {
      const own = beats.filter((b) => b.source === byName.get(s.vm));
      const during = own.filter((b) => Date.parse(b.time) >= s.fromMs && Date.parse(b.time) < s.toMs);
      const before = own.filter((b) => Date.parse(b.time) < s.fromMs);
      for (const b of during)
        expect(heartbeatProblems(b.data, { backlogSeconds: 1800 }).length).toBeGreaterThan(0);
      for (const b of before) expect(heartbeatProblems(b.data, { backlogSeconds: 1800 })).toEqual([]);
    }
  });

  it('events() is records and heartbeats merged in time order', () => {
    const small = generateFleet({ vms: 40, days: 5, seed: 3, heartbeatDays: 2 });
    const merged = [...small.events()];
    expect(merged.filter((e) => !isHeartbeat(e))).toEqual(all(small));
    expect(merged.filter(isHeartbeat)).toEqual([...small.heartbeats()]);
    for (let i = 1; i < merged.length; i++) expect(merged[i]!.time >= merged[i - 1]!.time).toBe(true);
  });
});

describe('simulate fleet (CLI process)', () => {
  async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, stdout, stderr };
  }

  it('writes the records as JSON lines on stdout and a one-line JSON summary on stderr', async () => {
    const { code, stdout, stderr } = await run([
      'simulate',
      'fleet',
      '--vms',
      '20',
      '--days',
      '10',
      '--start',
      '2026-01-01T00:00:00Z',
      '--out',
      '-',
    ]);
    expect(code, stderr).toBe(0);
    const lines = jsonLines<LifecycleRecord | HeartbeatRecord>(stdout);
    const summary = JSON.parse(stderr.trim()) as Record<string, unknown>;
    // By default: heartbeats every hour over the last 3 days, merged with the records in time order.
    const fleet = generateFleet({ vms: 20, days: 10, seed: 1, heartbeatDays: 3 });
    const records = lines.filter((l): l is LifecycleRecord => !isHeartbeat(l));
    const heartbeats = lines.filter(isHeartbeat);
    expect(summary).toMatchObject({
      maintenanceEvents: fleet.truth.maintenanceEvents,
      records: records.length,
      heartbeats: heartbeats.length,
      vms: fleet.vms.length,
    });
    expect(records.length).toBe(fleet.truth.counts.records);
    expect(records.length).toBeGreaterThan(20);
    expect(heartbeats.length).toBe(fleet.heartbeatTruth.heartbeats);
    expect(heartbeats.length).toBeGreaterThan(20 * 3 * 24 * 0.9);
    for (const r of records) expect(validateRecord(r)).toEqual([]);
    for (const h of heartbeats) expect(validateHeartbeat(h)).toEqual([]);
    expect(lines).toEqual([...fleet.events()]);
    // Without heartbeats: the records only.
    const bare = await run([
      'simulate',
      'fleet',
      '--vms',
      '20',
      '--days',
      '10',
      '--start',
      '2026-01-01T00:00:00Z',
      '--heartbeat-interval',
      '0',
    ]);
    expect(jsonLines<LifecycleRecord>(bare.stdout)).toEqual(all(fleet));
  });

  it('ends the window now by default (what the dashboard opens on), or at --end', async () => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const byDefault = await run(['simulate', 'fleet', '--vms', '5', '--days', '3', '--out', '-']);
    const after = Date.now();
    expect(byDefault.code, byDefault.stderr).toBe(0);
    const window = JSON.parse(byDefault.stderr.trim()) as { start: string; end: string };
    expect(Date.parse(window.end)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(window.end)).toBeLessThanOrEqual(after);
    expect(Date.parse(window.end) - Date.parse(window.start)).toBe(3 * 86_400_000);
    for (const r of jsonLines<LifecycleRecord>(byDefault.stdout)) {
      expect(Date.parse(r.time)).toBeLessThan(Date.parse(window.end));
    }

    const atEnd = await run([
      'simulate',
      'fleet',
      '--vms',
      '5',
      '--days',
      '3',
      '--end',
      '2026-03-04T00:00:00Z',
      '--out',
      '-',
    ]);
    expect(atEnd.code, atEnd.stderr).toBe(0);
    expect(JSON.parse(atEnd.stderr.trim())).toMatchObject({
      start: '2026-03-01T00:00:00.000Z',
      end: '2026-03-04T00:00:00.000Z',
    });
    const same = generateFleet({ vms: 5, days: 3, seed: 1, start: '2026-03-01T00:00:00Z', heartbeatDays: 3 });
    expect(jsonLines<LifecycleRecord>(atEnd.stdout)).toEqual([...same.events()]);
  });

  it('rejects a bad option with a usage error naming it (exit code 2)', async () => {
    const { code, stderr, stdout } = await run(['simulate', 'fleet', '--vms', 'many']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--vms must be an integer >= 1, got "many"/);
    expect(stdout).toBe('');
    const both = await run([
      'simulate',
      'fleet',
      '--start',
      '2026-01-01T00:00:00Z',
      '--end',
      '2026-02-01T00:00:00Z',
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give --start or --end, not both/);
    const badEnd = await run(['simulate', 'fleet', '--end', 'yesterday']);
    expect(badEnd.code).toBe(2);
    expect(badEnd.stderr).toMatch(/--end must be an ISO 8601 time/);
  });
});

/**
 * The pure planning of the built-in Kubernetes node actions (src/kubernetes/node-actions.ts) and the short-notice
 * margin of prepare hooks (src/approval/plan.ts safetyMarginFor / nextPrepareHook).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { approvalSection } from '../../../src/approval/config.ts';
import { nextPrepareHook, safetyMarginFor } from '../../../src/approval/plan.ts';
import { ACTIONS_ANNOTATION, EXCLUDE_LB_LABEL, kubernetesSection } from '../../../src/kubernetes/config.ts';
import {
  actionFor,
  conditionPatch,
  evictionGrace,
  forbiddenMessage,
  microTime,
  type NodeView,
  nodeEvent,
  noticeEvent,
  planDrain,
  planPrepare,
  planRecover,
  podName,
  readApplied,
  recordEvent,
} from '../../../src/kubernetes/node-actions.ts';
import type { TrackedEvent } from '../../../src/transform/index.ts';
import { scheduledEvent } from '../approval/fixtures.ts';
import { podView } from './fixtures.ts';

const actions = (over: object = {}) => kubernetesSection.parse({ actions: over }).actions;
const node = (over: Partial<NodeView> = {}): NodeView => ({
  name: 'aks-1',
  unschedulable: false,
  taints: [],
  labels: {},
  annotations: {},
  resourceVersion: '7',
  ...over,
});
const REBOOT = { eventId: 'E1', eventType: 'Reboot' };

/** The node after a merge patch (enough for these plans: annotations, labels, spec fields). */
function applied(n: NodeView, patch: ReturnType<typeof planPrepare>['patch']): NodeView {
  if (patch === null) return n;
  const merge = (base: Record<string, string>, p: Record<string, string | null> | undefined) => {
    const out = { ...base };
    for (const [k, v] of Object.entries(p ?? {})) {
      if (v === null) delete out[k];
      else out[k] = v;
    }
    return out;
  };
  return {
    ...n,
    annotations: merge(n.annotations, patch.metadata.annotations),
    labels: merge(n.labels, patch.metadata.labels),
    unschedulable: patch.spec?.unschedulable ?? n.unschedulable,
    taints: patch.spec?.taints === undefined ? n.taints : (patch.spec.taints ?? []),
  };
}

describe('actionFor', () => {
  it.each([
    ['Freeze', {}, 'none'],
    ['Reboot', {}, 'drain'],
    ['redeploy', {}, 'drain'],
    ['Preempt', {}, 'drain'],
    ['Terminate', {}, 'drain'],
    ['Freeze', { freeze: 'cordon' }, 'cordon'],
    ['Reboot', { Reboot: 'none' }, 'none'],
    ['SomethingNew', {}, 'none'],
  ] as const)('%s with %o → %s', (type, table, expected) => {
    expect(actionFor(type, table)).toBe(expected);
  });
});

describe('planPrepare', () => {
  it('cordons, taints and annotates a schedulable node, guarded by its resourceVersion', () => {
    const plan = planPrepare(node(), REBOOT, actions());
    expect(plan.action).toBe('drain');
    expect(plan.patch).toEqual({
      metadata: {
        resourceVersion: '7',
        annotations: { [ACTIONS_ANNOTATION]: expect.any(String) },
      },
      spec: {
        unschedulable: true,
        taints: [{ key: 'scheduled-events-forwarder/maintenance', value: 'Reboot', effect: 'NoSchedule' }],
      },
    });
    expect(readApplied(applied(node(), plan.patch))).toEqual({
      eventId: 'E1',
      eventIds: ['E1'],
      cordoned: true,
      alreadyCordoned: false,
      taint: { key: 'scheduled-events-forwarder/maintenance', value: 'Reboot', effect: 'NoSchedule' },
      label: null,
    });
  });

  it('adds the load-balancer label when configured, and a configured taint', () => {
    const config = actions({
      excludeFromLoadBalancers: true,
      taint: { key: 'maint', value: 'soon', effect: 'NoExecute' },
    });
    const plan = planPrepare(node({ taints: [{ key: 'other', effect: 'NoSchedule' }] }), REBOOT, config);
    expect(plan.patch?.metadata.labels).toEqual({ [EXCLUDE_LB_LABEL]: 'true' });
    expect(plan.patch?.spec?.taints).toEqual([
      { key: 'other', effect: 'NoSchedule' },
      { key: 'maint', value: 'soon', effect: 'NoExecute' },
    ]);
  });

  it('leaves an operator-cordoned node as it is and records that it was cordoned before', () => {
    const plan = planPrepare(node({ unschedulable: true }), REBOOT, actions());
    expect(plan.patch?.spec?.unschedulable).toBeUndefined();
    expect(plan.applied).toMatchObject({ cordoned: false, alreadyCordoned: true });
  });

  it('does not claim a taint or label that was there already', () => {
    const config = actions({ excludeFromLoadBalancers: true });
    const n = node({
      taints: [{ key: 'scheduled-events-forwarder/maintenance', effect: 'NoSchedule' }],
      labels: { [EXCLUDE_LB_LABEL]: 'true' },
    });
    const plan = planPrepare(n, REBOOT, config);
    expect(plan.applied).toMatchObject({ taint: null, label: null });
    expect(plan.patch?.spec?.taints).toBeUndefined();
    expect(plan.patch?.metadata.labels).toBeUndefined();
  });

  it('is idempotent: a node prepared for the event gives no patch (a restart resumes with the drain)', () => {
    const once = applied(node(), planPrepare(node(), REBOOT, actions()).patch);
    const again = planPrepare(once, REBOOT, actions());
    expect(again.patch).toBeNull();
    expect(again.applied?.eventIds).toEqual(['E1']);
  });

  it('Freeze only notifies by default: nothing to patch', () => {
    expect(planPrepare(node(), { eventId: 'F', eventType: 'Freeze' }, actions())).toEqual({
      action: 'none',
      patch: null,
      applied: null,
    });
  });

  it('without a taint when disabled', () => {
    const plan = planPrepare(node(), REBOOT, actions({ taint: { enabled: false } }));
    expect(plan.patch?.spec).toEqual({ unschedulable: true });
  });
});

describe('planRecover', () => {
  const config = actions({ excludeFromLoadBalancers: true });

  it('undoes exactly what the prepare added', () => {
    const prepared = applied(
      node({ taints: [{ key: 'keep', effect: 'NoSchedule' }] }),
      planPrepare(node({ taints: [{ key: 'keep', effect: 'NoSchedule' }] }), REBOOT, config).patch,
    );
    const plan = planRecover(prepared, 'E1');
    expect(plan.undone).toEqual({
      uncordoned: true,
      taint: expect.objectContaining({ key: 'scheduled-events-forwarder/maintenance' }),
      label: EXCLUDE_LB_LABEL,
      leftCordoned: false,
    });
    const after = applied(prepared, plan.patch);
    expect(after).toEqual({ ...node({ taints: [{ key: 'keep', effect: 'NoSchedule' }] }) });
  });

  it('never uncordons a node that was cordoned before the event', () => {
    const before = node({ unschedulable: true });
    const prepared = applied(before, planPrepare(before, REBOOT, actions()).patch);
    const plan = planRecover(prepared, 'E1');
    expect(plan.patch?.spec?.unschedulable).toBeUndefined();
    expect(plan.undone).toMatchObject({ uncordoned: false, leftCordoned: true });
    expect(applied(prepared, plan.patch).unschedulable).toBe(true);
  });

  it('an operator who uncordoned meanwhile is not overridden (nothing to uncordon)', () => {
    const prepared = applied(node(), planPrepare(node(), REBOOT, actions()).patch);
    const plan = planRecover({ ...prepared, unschedulable: false }, 'E1');
    expect(plan.undone.uncordoned).toBe(false);
  });

  it('nothing for another event, or without the annotation', () => {
    const prepared = applied(node(), planPrepare(node(), REBOOT, actions()).patch);
    expect(planRecover(prepared, 'OTHER').patch).toBeNull();
    expect(planRecover(node(), 'E1').patch).toBeNull();
    expect(planRecover(node({ annotations: { [ACTIONS_ANNOTATION]: 'not json' } }), 'E1').patch).toBeNull();
  });

  it('overlapping events: the node is undone when the last one recovers', () => {
    const first = applied(node(), planPrepare(node(), REBOOT, actions()).patch);
    const both = applied(
      first,
      planPrepare(first, { eventId: 'E2', eventType: 'Redeploy' }, actions()).patch,
    );
    expect(readApplied(both)?.eventIds).toEqual(['E1', 'E2']);
    const one = planRecover(both, 'E1');
    expect(one.stillHeldBy).toEqual(['E2']);
    const afterOne = applied(both, one.patch);
    expect(afterOne.unschedulable).toBe(true);
    const last = planRecover(afterOne, 'E2');
    expect(last.undone.uncordoned).toBe(true);
  });
});

describe('planDrain', () => {
  const pod = podView;

  it('skips DaemonSet, mirror and finished pods, waits for terminating ones, evicts the rest in name order', () => {
    const plan = planDrain(
      [
        pod('web-2'),
        pod('ds', { controllerKind: 'DaemonSet' }),
        pod('static', { controllerKind: 'Node', annotations: { 'kubernetes.io/config.mirror': 'x' } }),
        pod('job', { phase: 'Succeeded' }),
        pod('going', { terminating: true }),
        pod('web-1'),
      ],
      actions().drain,
    );
    expect(plan.evict.map((p) => p.name)).toEqual(['web-1', 'web-2']);
    expect(plan.skipped.map((s) => s.pod)).toEqual(['app/ds', 'app/job', 'app/static']);
    expect(plan.waitFor.map((p) => p.name)).toEqual(['going']);
    expect(plan.blocked).toEqual([]);
  });

  it('pods no controller manages block the drain, named, unless force (kubectl drain --force)', () => {
    const pods = [pod('web-1'), pod('debug-shell', { namespace: 'default', controllerKind: null })];
    const refused = planDrain(pods, actions().drain);
    expect(refused.blocked).toEqual([
      { pod: 'default/debug-shell', why: expect.stringContaining('kubernetes.actions.drain.force') },
    ]);
    expect(refused.blocked[0]!.why).toContain('is not managed by a controller');
    const forced = planDrain(pods, actions({ drain: { force: true } }).drain);
    expect(forced.blocked).toEqual([]);
    expect(forced.evict.map((p) => podName(p))).toEqual(['app/web-1', 'default/debug-shell']);
    // A finished unmanaged pod is no obstacle (kubectl removes finished pods without --force).
    expect(
      planDrain([pod('done', { controllerKind: null, phase: 'Succeeded' })], actions().drain).blocked,
    ).toEqual([]);
  });

  it('emptyDir pods block the drain unless deleteEmptyDirData', () => {
    const pods = [pod('cache', { hasEmptyDir: true })];
    expect(planDrain(pods, actions().drain).blocked).toEqual([
      { pod: 'app/cache', why: expect.stringContaining('deleteEmptyDirData') },
    ]);
    expect(planDrain(pods, actions({ drain: { deleteEmptyDirData: true } }).drain).evict).toHaveLength(1);
  });
});

describe('evictionGrace', () => {
  it.each([
    // own, configured, ms left, floor → asked
    [30, undefined, 600_000, 10, { seconds: 30 }],
    [30, 12, 600_000, 10, { seconds: 12 }],
    [300, undefined, 25_000, 10, { seconds: 25 }],
    [null, undefined, 600_000, 10, { seconds: 30 }],
    // the pod's own period is shorter than the floor: it gets all of it, as long as that fits
    [5, undefined, 7_000, 10, { seconds: 5 }],
    [5, undefined, 4_999, 10, { tooLate: true, needs: 5, left: 4 }],
    // a pod that asks for 0 s is still asked 1 s: never an immediate deletion
    [0, undefined, 600_000, 10, { seconds: 1 }],
    // less time than the floor: too late, never 0 or a cut-short period
    [30, undefined, 9_999, 10, { tooLate: true, needs: 10, left: 9 }],
    [30, undefined, -5, 10, { tooLate: true, needs: 10, left: 0 }],
  ] as const)(
    'pod %s, configured %s, %s ms left, floor %s s → %o',
    (own, configured, remaining, floor, expected) => {
      expect(evictionGrace({ terminationGracePeriodSeconds: own }, configured, remaining, floor)).toEqual(
        expected,
      );
    },
  );

  it('never asks for 0 s, nor less than min(the period wanted, the floor), nor more than the seconds left', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 3600 }), { nil: null }),
        fc.option(fc.integer({ min: 1, max: 3600 }), { nil: undefined }),
        fc.integer({ min: -10_000, max: 4_000_000 }),
        fc.integer({ min: 1, max: 120 }),
        (own, configured, remainingMs, floor) => {
          const grace = evictionGrace({ terminationGracePeriodSeconds: own }, configured, remainingMs, floor);
          if ('tooLate' in grace) return grace.left < grace.needs;
          const wanted = Math.max(1, configured ?? own ?? 30);
          return (
            grace.seconds >= 1 &&
            grace.seconds >= Math.min(wanted, floor) &&
            grace.seconds <= wanted &&
            grace.seconds * 1000 <= Math.max(0, remainingMs)
          );
        },
      ),
    );
  });
});

describe('conditionPatch', () => {
  const t = '2030-01-01T00:00:00.000Z';
  const reboot = [{ eventId: 'E1', eventType: 'Reboot', notBefore: t }];
  const condition = (patch: Record<string, unknown>) =>
    (patch as { status: { conditions: Array<Record<string, unknown>> } }).status.conditions[0]!;

  it('True with the pending events while one is pending, False after', () => {
    const on = conditionPatch(reboot, t, undefined);
    expect(on).toMatchObject({
      status: { conditions: [{ type: 'VMEventScheduled', status: 'True', reason: 'RebootScheduled' }] },
    });
    expect(JSON.stringify(on)).toContain('E1');
    expect(conditionPatch([], t, 'True')).toMatchObject({
      status: { conditions: [{ type: 'VMEventScheduled', status: 'False' }] },
    });
  });

  it('lastTransitionTime only when the status changes (new condition, True ↔ False); the heartbeat always', () => {
    expect(condition(conditionPatch(reboot, t, undefined))).toMatchObject({
      lastTransitionTime: t,
      lastHeartbeatTime: t,
    });
    expect(condition(conditionPatch(reboot, t, 'False'))).toMatchObject({ lastTransitionTime: t });
    expect(condition(conditionPatch([], t, 'True'))).toMatchObject({ lastTransitionTime: t });
    // Same status, other message (another event pending now): the node keeps its lastTransitionTime.
    const same = condition(
      conditionPatch([...reboot, { eventId: 'E2', eventType: 'Freeze', notBefore: t }], t, 'True'),
    );
    expect(same).not.toHaveProperty('lastTransitionTime');
    expect(same).toMatchObject({ lastHeartbeatTime: t, status: 'True' });
    expect(condition(conditionPatch([], t, 'False'))).not.toHaveProperty('lastTransitionTime');
  });
});

describe('node Events', () => {
  const data = (approval?: Record<string, unknown>) => ({
    EventId: 'E1',
    EventType: 'Reboot',
    notBeforeUtc: '2030-01-01T00:15:00.000Z',
    ...(approval === undefined ? {} : { approval }),
  });
  const approved = (approval: Record<string, unknown>) =>
    recordEvent({ transition: 'approved', data: data(approval) });

  it('the approved record: VMEventApproved exactly when approval.posted; every other outcome says what happened', () => {
    const hooks = [{ name: 'node', ok: true }];
    expect(approved({ posted: true, leader: true, dryRun: false, hooks })).toMatchObject({
      reason: 'VMEventApproved',
      type: 'Normal',
    });
    const notPosted = approved({
      posted: false,
      leader: true,
      dryRun: false,
      hooks: [{ name: 'node', ok: false }],
      notPostedReason: 'prepare hook "node" failed: drain refused, nothing evicted: default/debug-shell …',
    });
    expect(notPosted).toEqual({
      reason: 'VMEventNotApproved',
      type: 'Warning',
      message:
        'Not approved by this VM: Reboot E1 (NotBefore 2030-01-01T00:15:00.000Z): prepare hook "node" failed: drain refused, nothing evicted: default/debug-shell …',
    });
    expect(approved({ posted: false, leader: true, dryRun: true, hooks })).toMatchObject({
      reason: 'VMEventApprovalDryRun',
      type: 'Normal',
    });
    expect(approved({ posted: false, leader: false, dryRun: false, hooks })).toMatchObject({
      reason: 'VMEventPrepared',
      type: 'Normal',
    });
    expect(
      approved({
        posted: false,
        leader: false,
        dryRun: false,
        hooks,
        notPostedReason: 'prepare hook "node" timed out',
      }),
    ).toMatchObject({ reason: 'VMEventNotApproved', type: 'Warning' });
    // A leader's not-posted approval without a recorded reason (an older record) is still not "approved".
    expect(approved({ posted: false, leader: true, dryRun: false, hooks })).toMatchObject({
      reason: 'VMEventNotApproved',
    });
  });

  it('fast-check: VMEventApproved if and only if posted (and not a dry run)', () => {
    fc.assert(
      fc.property(
        fc.record({
          posted: fc.boolean(),
          leader: fc.boolean(),
          dryRun: fc.boolean(),
          notPostedReason: fc.option(fc.string(), { nil: undefined }),
        }),
        (approval) => {
          const event = approved(approval);
          const posted = approval.posted && !approval.dryRun;
          return (
            (event.reason === 'VMEventApproved') === posted &&
            (event.type === 'Warning') === (event.reason === 'VMEventNotApproved')
          );
        },
      ),
    );
  });

  it('transitions keep their reasons; scheduled and started are Warnings', () => {
    expect(recordEvent({ transition: 'scheduled', data: data() })).toEqual({
      reason: 'VMEventScheduled',
      type: 'Warning',
      message: 'Scheduled event scheduled: Reboot E1 (NotBefore 2030-01-01T00:15:00.000Z)',
    });
    expect(recordEvent({ transition: 'completed', data: data() })).toMatchObject({
      reason: 'VMEventCompleted',
      type: 'Normal',
    });
  });

  it('a prepare hook interrupted by a restart: a Warning that says whether it counts as failed or runs again', () => {
    const notice = { kind: 'prepare-interrupted' as const, eventId: 'E1', eventType: 'Reboot', hook: 'node' };
    const failed = noticeEvent({ ...notice, rerun: false }, null);
    expect(failed).toMatchObject({ reason: 'VMEventPrepareInterrupted', type: 'Warning' });
    expect(failed.message).toContain('counts as failed, so this VM does not approve the event');
    expect(noticeEvent({ ...notice, rerun: true }, null).message).toContain('the prepare hooks run again');
  });

  it('an Event carries eventTime in microseconds, action and the reporting fields (accepted in default and kube-system)', () => {
    const event = nodeEvent({
      node: 'aks-1',
      namespace: 'kube-system',
      reason: 'VMEventApproved',
      message: 'm',
      type: 'Normal',
      nowIso: '2030-01-01T00:00:00.123Z',
      suffix: 'x',
    });
    expect(event).toMatchObject({
      metadata: { name: 'aks-1.x', namespace: 'kube-system' },
      eventTime: '2030-01-01T00:00:00.123000Z',
      action: 'VMEventApproved',
      reportingComponent: 'scheduled-events-forwarder',
      reportingInstance: 'aks-1',
      firstTimestamp: '2030-01-01T00:00:00Z',
    });
    expect(microTime('2030-01-01T00:00:00Z')).toBe('2030-01-01T00:00:00.000000Z');
  });

  it('eventNamespace is default or kube-system, with a message naming why', () => {
    expect(kubernetesSection.parse({ eventNamespace: 'kube-system' }).eventNamespace).toBe('kube-system');
    const result = kubernetesSection.safeParse({ eventNamespace: 'monitoring' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain('only in one of these');
  });
});

describe('forbiddenMessage', () => {
  it('names the verb and resource of the Status and the fix', () => {
    const message = forbiddenMessage(
      { verb: 'create', resource: 'pods/eviction' },
      {
        message:
          'pods "web-1" is forbidden: User "system:serviceaccount:scheduled-events:sef" cannot create resource "pods/eviction" in API group "" in the namespace "app"',
      },
    );
    expect(message).toMatch(/^Kubernetes RBAC denied "create" on "pods\/eviction"/);
    expect(message).toContain('packaging/kubernetes');
  });

  it('falls back to the call made without a Status message', () => {
    expect(forbiddenMessage({ verb: 'patch', resource: 'nodes/status' }, undefined)).toMatch(
      /denied "patch" on "nodes\/status"/,
    );
  });
});

describe('short-notice margin', () => {
  const NB = Date.parse('2030-01-01T00:00:30Z');
  const config = approvalSection.parse({
    hooks: { prepare: [{ name: 'node', builtin: 'kubernetes-node' }] },
  });
  const tracked = (firstSeenAtMs: number): TrackedEvent =>
    ({
      eventId: 'P1',
      occurrence: 1,
      last: scheduledEvent({
        EventId: 'P1',
        EventType: 'Preempt',
        notBeforeUtc: new Date(NB).toISOString(),
        Resources: ['vm0'],
      }),
      firstSeenStatus: 'Scheduled',
      firstSeenAtMs,
      lastNotBeforeUtc: new Date(NB).toISOString(),
    }) as TrackedEvent;

  it('a 15-minute notice keeps safetyMarginMs', () => {
    expect(safetyMarginFor(config, NB - 900_000, NB)).toBe(30_000);
  });

  it('a Preempt with 30 s notice gets the time that remains minus shortNoticeMarginMs (not zero)', () => {
    const seen = NB - 30_000;
    expect(safetyMarginFor(config, seen, NB)).toBe(5000);
    const step = nextPrepareHook(
      config,
      { eventType: 'Preempt', affectsThisVm: true, hooks: [] },
      tracked(seen),
      seen + 1000,
    );
    expect(step?.timeoutMs).toBe(24_000);
    expect(step?.deadline).toBe(new Date(NB - 5000).toISOString());
  });

  it('the short-notice margin never exceeds safetyMarginMs', () => {
    const small = approvalSection.parse({ safetyMarginMs: 2000, shortNoticeMarginMs: 5000 });
    expect(safetyMarginFor(small, NB - 3000, NB)).toBe(2000);
  });
});

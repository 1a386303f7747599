/**
 * The built-in node actions as pure planning (no I/O, no clock reads): what to patch on the Node to prepare it for
 * an event (cordon, taint, label) and to undo exactly that afterwards, which pods a drain evicts and with which
 * grace period, the Events and the node condition that make the lifecycle visible, and the error an RBAC denial
 * becomes. The I/O is in src/kubernetes/node-hook.ts and src/kubernetes/client.ts. See docs/kubernetes.md.
 */
import {
  ACTIONS_ANNOTATION,
  CONDITION_TYPE,
  DEFAULT_PER_EVENT_TYPE,
  EXCLUDE_LB_LABEL,
  type NodeAction,
  type NodeActionsConfig,
} from './config.ts';

export interface Taint {
  key: string;
  value?: string | undefined;
  effect: string;
}

/** The parts of a Node the planning reads. */
export interface NodeView {
  name: string;
  unschedulable: boolean;
  taints: Taint[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  resourceVersion?: string | undefined;
  /** status.conditions: type and status (the VMEventScheduled condition's status decides its lastTransitionTime). */
  conditions?: Array<{ type: string; status: string }>;
  /** spec.providerID (`azure:///subscriptions/…`): which VM the node is (src/kubernetes/vm-nodes.ts). */
  providerID?: string | undefined;
}

/** What the forwarder's prepare action changed on the node (stored in ACTIONS_ANNOTATION as JSON). */
export interface AppliedActions {
  /** The event whose preparation first changed the node. */
  eventId: string;
  /** Every event that holds the node prepared (overlapping events): undone when the last one recovers. */
  eventIds: string[];
  /** The forwarder set spec.unschedulable (false when the node was already cordoned, e.g. by an operator). */
  cordoned: boolean;
  /** The node was unschedulable before the forwarder touched it: it stays cordoned. */
  alreadyCordoned: boolean;
  /** The taint the forwarder added (null: none, or one with the same key and effect was there already). */
  taint: Taint | null;
  /** The label the forwarder added (null: none, or it was there already). */
  label: string | null;
}

/** A JSON merge patch of a Node (metadata and spec only). */
export interface NodePatch {
  metadata: {
    resourceVersion?: string;
    annotations?: Record<string, string | null>;
    labels?: Record<string, string | null>;
  };
  spec?: { unschedulable?: boolean; taints?: Taint[] | null };
}

/** The action for an EventType: the configured one (case-insensitive), else the default, else none. */
export function actionFor(eventType: string, perEventType: Readonly<Record<string, NodeAction>>): NodeAction {
  const lower = eventType.toLowerCase();
  for (const table of [perEventType, DEFAULT_PER_EVENT_TYPE]) {
    for (const [type, action] of Object.entries(table)) if (type.toLowerCase() === lower) return action;
  }
  return 'none';
}

/** The forwarder's annotation on the node, or null (absent or unreadable: then nothing is undone). */
export function readApplied(node: NodeView): AppliedActions | null {
  const text = node.annotations[ACTIONS_ANNOTATION];
  if (text === undefined) return null;
  try {
    const value = JSON.parse(text) as Partial<AppliedActions>;
    if (typeof value !== 'object' || value === null || typeof value.eventId !== 'string') return null;
    return {
      eventId: value.eventId,
      eventIds: Array.isArray(value.eventIds) ? value.eventIds.map(String) : [value.eventId],
      cordoned: value.cordoned === true,
      alreadyCordoned: value.alreadyCordoned === true,
      taint: value.taint && typeof value.taint.key === 'string' ? value.taint : null,
      label: typeof value.label === 'string' ? value.label : null,
    };
  } catch {
    return null;
  }
}

const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect;

export interface PreparePlan {
  action: NodeAction;
  /** null: nothing to change (action none, or already prepared for this event). */
  patch: NodePatch | null;
  /** What the annotation says after the patch (null for action none). */
  applied: AppliedActions | null;
}

/**
 * Prepares the node for `eventId`: cordon (unless already unschedulable: recorded as alreadyCordoned and left), the
 * taint and the load-balancer label (unless already there), and the annotation saying what was added. Idempotent:
 * a node already prepared for this event gives no patch (a restarted forwarder resumes with the drain).
 */
export function planPrepare(
  node: NodeView,
  event: { eventId: string; eventType: string },
  config: NodeActionsConfig,
): PreparePlan {
  const action = actionFor(event.eventType, config.perEventType);
  if (action === 'none') return { action, patch: null, applied: null };
  const prior = readApplied(node);
  if (prior?.eventIds.includes(event.eventId)) return { action, patch: null, applied: prior };
  if (prior !== null) {
    // Another event holds the node prepared: join it; it is undone when the last of them recovers.
    const applied = { ...prior, eventIds: [...prior.eventIds, event.eventId] };
    return { action, patch: annotate(node, applied), applied };
  }
  const taint: Taint | null = config.taint.enabled
    ? { key: config.taint.key, value: config.taint.value || event.eventType, effect: config.taint.effect }
    : null;
  const addTaint = taint !== null && !node.taints.some((t) => sameTaint(t, taint));
  const addLabel = config.excludeFromLoadBalancers && node.labels[EXCLUDE_LB_LABEL] === undefined;
  const applied: AppliedActions = {
    eventId: event.eventId,
    eventIds: [event.eventId],
    cordoned: !node.unschedulable,
    alreadyCordoned: node.unschedulable,
    taint: addTaint ? taint : null,
    label: addLabel ? EXCLUDE_LB_LABEL : null,
  };
  const patch = annotate(node, applied);
  if (addLabel) patch.metadata.labels = { [EXCLUDE_LB_LABEL]: 'true' };
  const spec: NonNullable<NodePatch['spec']> = {};
  if (applied.cordoned) spec.unschedulable = true;
  if (addTaint) spec.taints = [...node.taints, taint];
  if (Object.keys(spec).length > 0) patch.spec = spec;
  return { action, patch, applied };
}

function annotate(node: NodeView, applied: AppliedActions): NodePatch {
  return {
    metadata: {
      ...(node.resourceVersion === undefined ? {} : { resourceVersion: node.resourceVersion }),
      annotations: { [ACTIONS_ANNOTATION]: JSON.stringify(applied) },
    },
  };
}

export interface RecoverPlan {
  /** null: nothing of this event's to undo. */
  patch: NodePatch | null;
  /** What is undone (for the log, the record and the Event). */
  undone: { uncordoned: boolean; taint: Taint | null; label: string | null; leftCordoned: boolean };
  /** Other events still hold the node prepared: only this event's id is removed from the annotation. */
  stillHeldBy: string[];
}

/**
 * Undoes exactly what the prepare action of `eventId` added, as the annotation says: uncordon only if the
 * forwarder cordoned (a node an operator cordoned stays cordoned), remove its taint and label, drop the annotation.
 */
export function planRecover(node: NodeView, eventId: string): RecoverPlan {
  const nothing = { uncordoned: false, taint: null, label: null, leftCordoned: false };
  const applied = readApplied(node);
  if (applied === null || !applied.eventIds.includes(eventId)) {
    return { patch: null, undone: nothing, stillHeldBy: applied?.eventIds ?? [] };
  }
  const others = applied.eventIds.filter((id) => id !== eventId);
  if (others.length > 0) {
    return { patch: annotate(node, { ...applied, eventIds: others }), undone: nothing, stillHeldBy: others };
  }
  const patch: NodePatch = {
    metadata: {
      ...(node.resourceVersion === undefined ? {} : { resourceVersion: node.resourceVersion }),
      annotations: { [ACTIONS_ANNOTATION]: null },
    },
  };
  const taint = applied.taint;
  const hasTaint = taint !== null && node.taints.some((t) => sameTaint(t, taint));
  const hasLabel = applied.label !== null && node.labels[applied.label] !== undefined;
  const uncordon = applied.cordoned && node.unschedulable;
  if (hasLabel) patch.metadata.labels = { [applied.label as string]: null };
  const spec: NonNullable<NodePatch['spec']> = {};
  if (uncordon) spec.unschedulable = false;
  if (hasTaint) spec.taints = node.taints.filter((t) => !sameTaint(t, taint));
  if (Object.keys(spec).length > 0) patch.spec = spec;
  return {
    patch,
    undone: {
      uncordoned: uncordon,
      taint: hasTaint ? taint : null,
      label: hasLabel ? applied.label : null,
      leftCordoned: applied.alreadyCordoned,
    },
    stillHeldBy: [],
  };
}

// ---- drain ---------------------------------------------------------------------------------------------------

/** The parts of a Pod the drain planning reads. */
export interface PodView {
  namespace: string;
  name: string;
  /** ownerReferences with controller: true, kind */
  controllerKind: string | null;
  annotations: Record<string, string>;
  /** status.phase */
  phase: string;
  hasEmptyDir: boolean;
  terminationGracePeriodSeconds: number | null;
  /** metadata.deletionTimestamp is set: already going away. */
  terminating: boolean;
}

export interface DrainPlan {
  /** Pods to evict, in order. */
  evict: PodView[];
  /** Not evicted, by design (DaemonSet, mirror pod, finished). */
  skipped: Array<{ pod: string; why: string }>;
  /**
   * Not evicted and blocking the drain, as kubectl drain refuses them: pods no controller manages (without
   * `force`), pods with emptyDir volumes (without deleteEmptyDirData). Nothing is evicted while any is left.
   */
  blocked: Array<{ pod: string; why: string }>;
  /** Already terminating: the drain waits for them to be gone. */
  waitFor: PodView[];
}

export const podName = (pod: Pick<PodView, 'namespace' | 'name'>) => `${pod.namespace}/${pod.name}`;

/**
 * Which pods on the node a drain evicts (as kubectl drain --ignore-daemonsets decides), sorted by namespace and
 * name: mirror, DaemonSet and finished pods are skipped; pods no controller manages block the drain unless
 * `force` (kubectl's --force), pods with emptyDir volumes unless `deleteEmptyDirData`.
 */
export function planDrain(pods: readonly PodView[], config: NodeActionsConfig['drain']): DrainPlan {
  const plan: DrainPlan = { evict: [], skipped: [], blocked: [], waitFor: [] };
  const sorted = [...pods].sort((a, b) => podName(a).localeCompare(podName(b)));
  for (const pod of sorted) {
    const name = podName(pod);
    if (pod.annotations['kubernetes.io/config.mirror'] !== undefined) {
      plan.skipped.push({ pod: name, why: 'mirror (static) pod' });
    } else if (pod.controllerKind === 'DaemonSet') {
      plan.skipped.push({ pod: name, why: 'DaemonSet pod' });
    } else if (pod.phase === 'Succeeded' || pod.phase === 'Failed') {
      plan.skipped.push({ pod: name, why: `finished (${pod.phase})` });
    } else if (pod.terminating) {
      plan.waitFor.push(pod);
    } else if (pod.controllerKind === null && !config.force) {
      plan.blocked.push({
        pod: name,
        why: 'is not managed by a controller (ReplicaSet, StatefulSet, Job, ...): nothing would replace it (set kubernetes.actions.drain.force to evict it anyway, as kubectl drain --force)',
      });
    } else if (pod.hasEmptyDir && !config.deleteEmptyDirData) {
      plan.blocked.push({
        pod: name,
        why: 'uses emptyDir (set kubernetes.actions.drain.deleteEmptyDirData to evict it)',
      });
    } else {
      plan.evict.push(pod);
    }
  }
  return plan;
}

/** The grace period to ask for one eviction now, or why it is too late to evict the pod. */
export type EvictionGrace =
  | { seconds: number }
  /** Fewer whole seconds are left than the pod must be given (`needs`): stop evicting it. */
  | { tooLate: true; needs: number; left: number };

/**
 * The grace period asked for an eviction: the configured one, else the pod's own (30 s when unset), never more
 * than the whole seconds left before the hook's deadline — and never less than `min(that period, floorSeconds)`,
 * never 0. `gracePeriodSeconds: 0` deletes the pod object at once without waiting for the kubelet (a StatefulSet
 * pod could then run twice), and a drain never needs it: when fewer seconds are left than the pod must be given,
 * it is too late to evict it (the drain stops and fails, naming it). A pod whose own period is 0 is asked 1 s.
 */
export function evictionGrace(
  pod: Pick<PodView, 'terminationGracePeriodSeconds'>,
  configured: number | undefined,
  remainingMs: number,
  floorSeconds: number,
): EvictionGrace {
  const wanted = Math.max(1, configured ?? pod.terminationGracePeriodSeconds ?? 30);
  const left = Math.floor(Math.max(0, remainingMs) / 1000);
  const needs = Math.min(wanted, Math.max(1, floorSeconds));
  if (left < needs) return { tooLate: true, needs, left };
  return { seconds: Math.min(wanted, left) };
}

// ---- visibility ----------------------------------------------------------------------------------------------

/** The Event reasons of the lifecycle transitions (records affecting this VM); `approved` depends on the approval. */
export const TRANSITION_REASONS: Readonly<Record<string, string>> = {
  scheduled: 'VMEventScheduled',
  updated: 'VMEventUpdated',
  started: 'VMEventStarted',
  completed: 'VMEventCompleted',
  canceled: 'VMEventCanceled',
};

/**
 * The reasons of an `approved` record, by what really happened (approval.posted is THE fact): only a POSTed
 * approval is `VMEventApproved`; an approval we did not POST — so the event starts at NotBefore without us — is
 * the Warning `VMEventNotApproved` with why; a dry run and an affected non-leader whose preparation succeeded
 * say so.
 */
export const APPROVAL_REASONS = {
  posted: 'VMEventApproved',
  notApproved: 'VMEventNotApproved',
  dryRun: 'VMEventApprovalDryRun',
  prepared: 'VMEventPrepared',
} as const;

/** A node Event's reason, type and message. */
export interface NodeEventText {
  reason: string;
  type: 'Normal' | 'Warning';
  message: string;
}

/** What the reporter reads of a committed record (see LifecycleRecord). */
export interface RecordFacts {
  transition: string;
  data: { EventId: string; EventType: string; notBeforeUtc: string | null; approval?: unknown };
}

/** The node Event of an approval notice (src/approval/plan.ts ApprovalNotice). */
export function noticeEvent(
  notice: { kind: 'prepare-interrupted'; eventId: string; eventType: string; hook: string; rerun: boolean },
  notBefore: string | null,
): NodeEventText {
  const facts: EventFacts = { eventId: notice.eventId, eventType: notice.eventType, notBefore };
  const what = notice.rerun
    ? `The forwarder restarted while preparing this node: prepare hook "${notice.hook}" was interrupted; the prepare hooks run again (approval.rerunHooksAfterRestart)`
    : `The forwarder restarted while preparing this node: prepare hook "${notice.hook}" was interrupted and counts as failed, so this VM does not approve the event; what the hook did stays until the event ends (set approval.rerunHooksAfterRestart to run it again)`;
  return { reason: 'VMEventPrepareInterrupted', type: 'Warning', message: eventMessage(what, facts) };
}

/** The node Event for a lifecycle record affecting this VM (see APPROVAL_REASONS for `approved`). */
export function recordEvent(record: RecordFacts): NodeEventText {
  const facts: EventFacts = {
    eventId: record.data.EventId,
    eventType: record.data.EventType,
    notBefore: record.data.notBeforeUtc,
  };
  if (record.transition === 'approved') return approvalEvent(record.data.approval, facts);
  const warn = record.transition === 'scheduled' || record.transition === 'started';
  return {
    reason: TRANSITION_REASONS[record.transition] ?? 'VMEvent',
    type: warn ? 'Warning' : 'Normal',
    message: eventMessage(`Scheduled event ${record.transition}`, facts),
  };
}

function approvalEvent(value: unknown, facts: EventFacts): NodeEventText {
  const approval = (value ?? {}) as {
    posted?: unknown;
    dryRun?: unknown;
    leader?: unknown;
    notPostedReason?: unknown;
    hooks?: Array<{ ok?: unknown }>;
  };
  if (approval.posted === true && approval.dryRun !== true) {
    return {
      reason: APPROVAL_REASONS.posted,
      type: 'Normal',
      message: eventMessage('Scheduled event approved (StartRequests POSTed): it may start now', facts),
    };
  }
  const why = typeof approval.notPostedReason === 'string' ? approval.notPostedReason : undefined;
  if (approval.dryRun === true && why === undefined) {
    return {
      reason: APPROVAL_REASONS.dryRun,
      type: 'Normal',
      message: eventMessage('Dry run: the event would have been approved (nothing POSTed)', facts),
    };
  }
  if (approval.leader !== true && why === undefined) {
    return {
      reason: APPROVAL_REASONS.prepared,
      type: 'Normal',
      message: eventMessage('Prepared for the event; another VM approves it (approval.leader)', facts),
    };
  }
  return {
    reason: APPROVAL_REASONS.notApproved,
    type: 'Warning',
    // The facts first: a long reason is what the 1 KiB limit of a message cuts.
    message: `${eventMessage('Not approved by this VM', facts)}: ${why ?? 'not POSTed'}`,
  };
}

export interface EventFacts {
  eventId: string;
  eventType: string;
  notBefore: string | null;
}

/** The message of a node Event: what happened, with EventId, type and NotBefore. */
export function eventMessage(what: string, facts: EventFacts): string {
  const nb = facts.notBefore === null || facts.notBefore === '' ? 'none' : facts.notBefore;
  return `${what}: ${facts.eventType} ${facts.eventId} (NotBefore ${nb})`;
}

/**
 * A core/v1 Event on the Node `node` (involvedObject the Node, as the kubelet writes node Events). It carries
 * `eventTime` (microseconds), `action`, `reportingComponent` and `reportingInstance`: the API server then accepts a
 * cluster-scoped object's Event in `default` and in `kube-system` (without eventTime only in `default`); the
 * legacy `firstTimestamp`/`lastTimestamp`/`count`/`source` are set too, for tools that read those.
 */
export function nodeEvent(input: {
  node: string;
  namespace: string;
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  nowIso: string;
  /** Unique per Event (the name suffix). */
  suffix: string;
}): Record<string, unknown> {
  const name = `${input.node}.${input.suffix}`
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .slice(0, 253);
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: input.namespace },
    involvedObject: { apiVersion: 'v1', kind: 'Node', name: input.node, uid: input.node },
    reason: input.reason.slice(0, 128),
    message: input.message.slice(0, 1024),
    type: input.type,
    action: input.reason.slice(0, 128),
    eventTime: microTime(input.nowIso),
    source: { component: 'scheduled-events-forwarder', host: input.node },
    reportingComponent: 'scheduled-events-forwarder',
    reportingInstance: input.node.slice(0, 128),
    firstTimestamp: input.nowIso.replace(/\.\d+Z$/, 'Z'),
    lastTimestamp: input.nowIso.replace(/\.\d+Z$/, 'Z'),
    count: 1,
  };
}

/** An ISO 8601 time as a Kubernetes MicroTime (RFC 3339 with exactly six fractional digits). */
export function microTime(iso: string): string {
  const [seconds, fraction = ''] = iso.replace(/Z$/, '').split('.');
  return `${seconds}.${fraction.padEnd(6, '0').slice(0, 6)}Z`;
}

/**
 * A strategic merge patch of nodes/status setting the VMEventScheduled condition (merged by type). As the API
 * conventions ask, `lastTransitionTime` moves only when the status changes: `currentStatus` is the condition's
 * status on the node now (undefined: the node has no such condition yet); with the same status the patch leaves
 * lastTransitionTime out, so the node keeps it, and only `lastHeartbeatTime`, the reason and the message change.
 */
export function conditionPatch(
  pending: readonly EventFacts[],
  nowIso: string,
  currentStatus: string | undefined,
): Record<string, unknown> {
  const status = pending.length > 0 ? 'True' : 'False';
  const message =
    pending.length > 0
      ? pending.map((e) => eventMessage('Scheduled event pending', e)).join('; ')
      : 'No Scheduled event pending for this VM';
  return {
    status: {
      conditions: [
        {
          type: CONDITION_TYPE,
          status,
          reason: pending.length > 0 ? `${pending[0]!.eventType}Scheduled` : 'NoVMEventScheduled',
          message: message.slice(0, 1024),
          lastHeartbeatTime: nowIso,
          ...(currentStatus === status ? {} : { lastTransitionTime: nowIso }),
        },
      ],
    },
  };
}

// ---- errors --------------------------------------------------------------------------------------------------

/** The ClusterRole the fix points at. */
export const CLUSTER_ROLE_FILE = 'packaging/kubernetes (ClusterRole scheduled-events-forwarder)';

/**
 * The message of a 403 from the API server: which verb on which resource was denied (from the Status' message
 * when it says, else the call made) and the fix.
 */
export function forbiddenMessage(
  attempted: { verb: string; resource: string },
  status: { message?: unknown } | undefined,
): string {
  const text = typeof status?.message === 'string' ? status.message : '';
  const m = /cannot (\S+) resource "([^"]+)"(?: in API group "([^"]*)")?/.exec(text);
  const verb = m?.[1] ?? attempted.verb;
  const resource = m?.[2] ?? attempted.resource;
  const group = m?.[3] ? `${m[3]}/` : '';
  return (
    `Kubernetes RBAC denied "${verb}" on "${group}${resource}"` +
    (text === '' ? '' : ` (${text})`) +
    `: grant it to the forwarder's ServiceAccount — apply the ClusterRole in ${CLUSTER_ROLE_FILE}`
  );
}

/**
 * The lifecycle record: a CloudEvents 1.0 structured-mode JSON object. Documented in
 * docs/record-format.md and validated by schemas/lifecycle-record.schema.json.
 */

export const TRANSITIONS = ['scheduled', 'started', 'completed', 'canceled', 'updated', 'approved'] as const;
export type Transition = (typeof TRANSITIONS)[number];

/** The reverse-DNS namespace the project owns for CloudEvents `type`. */
export const RECORD_TYPE_PREFIX = 'io.github.scheduledeventsforwarder.azure.scheduledevent';

export function recordType(transition: Transition): string {
  return `${RECORD_TYPE_PREFIX}.${transition}`;
}

export interface LifecycleRecord {
  specversion: '1.0';
  /** Deterministic: derived from VM, EventId, transition (and the change, for updated). */
  id: string;
  /** The VM's ARM resource ID, or urn:azure:vm:<vmId> when unknown. */
  source: string;
  /** RECORD_TYPE_PREFIX + '.' + transition */
  type: string;
  /** The EventId. */
  subject: string;
  /** Observation time, ISO 8601 UTC. */
  time: string;
  datacontenttype: 'application/json';
  /** CloudEvents extension attributes for routing without parsing data. */
  transition: Transition;
  maintenancetype: string;
  vmid: string;
  data: LifecycleRecordData;
}

/**
 * The Kubernetes node the forwarder runs on, as put in records (`data.kubernetes`): an input of the transform
 * like the VM identity, gathered by src/kubernetes (node name from the downward API, labels read from the Node).
 */
export interface KubernetesRecordContext {
  /** The Node's name (`kubernetes.nodeName`, else the NODE_NAME environment variable). */
  nodeName: string;
  /** `kubernetes.clusterName`, when configured. */
  clusterName?: string;
  /**
   * The configured `kubernetes.labels` with their values on the Node, when labels are configured and the Node
   * was read; a configured key the Node does not carry is absent.
   */
  labels?: Record<string, string>;
}

/** The record's data. Field-level documentation lives in docs/record-format.md. */
export interface LifecycleRecordData {
  EventId: string;
  EventType: string;
  EventStatus: string;
  ResourceType: string;
  Resources: string[];
  NotBefore: string;
  Description: string;
  EventSource: string;
  DurationInSeconds: number;
  DocumentIncarnation: number;
  notBeforeUtc: string | null;
  affectsThisVm: boolean;
  vm: {
    name: string;
    vmId: string;
    resourceId: string;
    subscriptionId: string;
    resourceGroup: string;
    location: string;
    zone: string;
    vmScaleSetName: string;
    vmSize: string;
    computerName: string;
  };
  /**
   * Kubernetes enrichment (docs/kubernetes.md): only when `kubernetes.enabled`; absent otherwise, so records
   * outside Kubernetes are unchanged.
   */
  kubernetes?: KubernetesRecordContext;
  timing: {
    firstSeenAt: string;
    startedAt: string | null;
    endedAt: string | null;
    noticeSeconds: number | null;
  };
  /** EventStatus when first seen ('Started' on the hardware-failure path). Always set by the transform. */
  firstSeenStatus?: string;
  /** 1, or 2, 3, ... when the EventId reappeared after it ended. Always set by the transform. */
  occurrence?: number;
  /** completed / canceled: whether the outcome is inferred rather than observed. */
  inferred?: boolean;
  /** completed with inferred true: why. */
  reason?:
    | 'host-rebooted'
    | 'approved-by-us'
    | 'observation-gap'
    | 'not-before-passed'
    | 'not-before-unknown';
  /** Further fields (previous, changed, observedImpact, approval, ...) per transition. */
  [key: string]: unknown;
}

/**
 * The natural order of transitions within one observation (ties in one poll): the fleet's fold and its
 * timeline queries sort by it. Terminal transitions share the last rank.
 */
export const TRANSITION_RANK: Readonly<Record<Transition, number>> = {
  scheduled: 0,
  updated: 1,
  approved: 2,
  started: 3,
  completed: 4,
  canceled: 4,
};

/** The rank of a transition; unknown names (rows written by a newer version) sort after every known one. */
export function transitionRank(transition: string): number {
  return (TRANSITION_RANK as Record<string, number>)[transition] ?? TRANSITIONS.length;
}

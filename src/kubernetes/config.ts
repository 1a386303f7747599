/**
 * The `kubernetes` section of the configuration (wired into src/config/schema.ts as a top-level section). Off by
 * default: outside Kubernetes nothing changes (no client is loaded, records are identical). See docs/kubernetes.md.
 */
import { z } from 'zod';

/** What the built-in node hook does for one EventType. */
export const NODE_ACTIONS = ['none', 'cordon', 'drain'] as const;
export type NodeAction = (typeof NODE_ACTIONS)[number];

export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/** Defaults operators expect: Freeze (seconds of pause) only notifies; everything that stops the VM drains. */
export const DEFAULT_PER_EVENT_TYPE: Readonly<Record<string, NodeAction>> = {
  Freeze: 'none',
  Reboot: 'drain',
  Redeploy: 'drain',
  Preempt: 'drain',
  Terminate: 'drain',
};

/** Annotation the forwarder writes on the node: what its prepare action changed (and nothing else is undone). */
export const ACTIONS_ANNOTATION = 'scheduled-events-forwarder/actions';
/**
 * Annotation the forwarder writes on its own node: its prepare state per EventId (preparing, ready, failed), which
 * the forwarder that approves a multi-node event reads on the other affected nodes (cluster-aware approval).
 */
export const PREPARE_ANNOTATION = 'scheduled-events-forwarder/prepare';
/** Label Kubernetes' service controller honours to take a node out of external load balancers. */
export const EXCLUDE_LB_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';
/** Where the API server accepts an Event about a Node (a cluster-scoped object) that carries eventTime. */
export const EVENT_NAMESPACES = ['default', 'kube-system'] as const;
/** The node condition set while an event affecting this node is pending (as AKS Node Problem Detector names it). */
export const CONDITION_TYPE = 'VMEventScheduled';

const taintSchema = z
  .object({
    enabled: z.boolean().default(true).describe('Add the taint when preparing (and remove it on recover).'),
    key: z
      .string()
      .min(1)
      .default('scheduled-events-forwarder/maintenance')
      .describe('Taint key (a qualified name).'),
    value: z.string().default('').describe('Taint value ("" = the EventType).'),
    effect: z.enum(TAINT_EFFECTS).default('NoSchedule').describe('Taint effect.'),
  })
  .strict()
  .prefault({})
  .describe('The taint added next to the cordon.');

const drainSchema = z
  .object({
    deleteEmptyDirData: z
      .boolean()
      .default(false)
      .describe(
        'Evict pods with emptyDir volumes (their data is lost). false: such pods block the drain (the hook fails, like kubectl drain).',
      ),
    force: z
      .boolean()
      .default(false)
      .describe(
        'Evict pods that no controller manages (nothing recreates them), as kubectl drain --force. false: such pods block the drain and are named (the hook fails).',
      ),
    gracePeriodSeconds: z
      .number()
      .int()
      .min(1, {
        error:
          "must be at least 1: 0 deletes a pod at once without waiting for it to stop (a StatefulSet pod could run twice); leave it unset to use each pod's own",
      })
      .optional()
      .describe(
        "Grace period asked for each eviction (default: the pod's own); bounded by the time left before the hook's deadline, never below minGracePeriodSeconds.",
      ),
    minGracePeriodSeconds: z
      .number()
      .int()
      .min(1)
      .default(10)
      .describe(
        "The least a pod is given to stop (or its own grace period, if shorter). When fewer seconds are left before the hook's deadline, the drain stops evicting and fails, naming the pods left and why: a pod is never cut short, and no eviction ever asks for 0 s.",
      ),
    maxConcurrentEvictions: z
      .number()
      .int()
      .min(1)
      .default(5)
      .describe(
        'Pods evicted at the same time (kubectl drain evicts all at once); each eviction has its own request timeout and retries its own PodDisruptionBudget refusals, so one slow pod does not hold the others.',
      ),
    retryIntervalMs: z
      .number()
      .int()
      .positive()
      .default(5000)
      .describe(
        'Retry an eviction refused by a PodDisruptionBudget (429) this often, per pod, until the deadline.',
      ),
  })
  .strict()
  .prefault({})
  .describe(
    'Draining by the Eviction API, as kubectl drain --ignore-daemonsets (PodDisruptionBudgets respected; DaemonSet, mirror and finished pods skipped; unmanaged and emptyDir pods refused unless allowed).',
  );

const actionsSchema = z
  .object({
    taint: taintSchema,
    excludeFromLoadBalancers: z
      .boolean()
      .default(false)
      .describe(`Label the node ${EXCLUDE_LB_LABEL}=true while it is prepared.`),
    drain: drainSchema,
    perEventType: z
      .record(z.string().min(1), z.enum(NODE_ACTIONS))
      .default({})
      .describe(
        'Per EventType (case-insensitive): none | cordon (cordon, taint, label) | drain (that plus eviction). Defaults: Freeze none; Reboot, Redeploy, Preempt, Terminate drain.',
      ),
  })
  .strict()
  .prefault({})
  .describe('What the built-in `kubernetes-node` hook does (approval.hooks.*[].builtin).');

const clusterApprovalSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "An approve-after-hooks approval of an event that affects other VMs waits until every one of them is a node of this cluster whose prepare hooks succeeded for the event (an approval starts the event for every VM in Resources). false: approve after this node's own hooks only — unsafe for multi-VM events.",
      ),
    pollIntervalMs: z
      .number()
      .int()
      .positive()
      .default(2000)
      .describe('How often the other affected nodes are read while one is not ready yet.'),
    vmsOutsideCluster: z
      .enum(['block', 'ignore'])
      .default('block')
      .describe(
        'A VM in Resources that is not a node of this cluster (no node by its AKS name, or one whose providerID names another VM): "block" — nothing is approved (its preparation cannot be seen); "ignore" — approve without it.',
      ),
  })
  .strict()
  .prefault({})
  .describe(
    'Cluster-aware approval of events that affect several VMs: each node publishes its prepare state on its own Node (annotation scheduled-events-forwarder/prepare) and the approving node reads the others.',
  );

/** The `kubernetes` config section. */
export const kubernetesSection = z
  .object({
    enabled: z
      .boolean()
      .default(false)
      .describe('Run as a Kubernetes node agent: Events, the node condition, enrichment, node hooks.'),
    nodeName: z
      .string()
      .min(1)
      .optional()
      .describe('This node (default: the NODE_NAME environment variable, set by the downward API).'),
    clusterName: z
      .string()
      .min(1)
      .optional()
      .describe('Cluster name put in every record (data.kubernetes.clusterName).'),
    kubeconfig: z
      .string()
      .min(1)
      .optional()
      .describe('Kubeconfig file to use (default: the in-cluster ServiceAccount).'),
    labels: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Node labels copied into every record (data.kubernetes.labels), e.g. topology.kubernetes.io/zone, kubernetes.azure.com/agentpool: read from the Node at start, then every 10 minutes.',
      ),
    events: z
      .boolean()
      .default(true)
      .describe('Write a Kubernetes Event on the Node for each lifecycle transition and action.'),
    condition: z
      .boolean()
      .default(true)
      .describe(`Set the node condition ${CONDITION_TYPE} while an event affecting this node is pending.`),
    requestTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(30_000)
      .describe(
        "Each Kubernetes API request is abandoned after this long without an answer (a hung API server or admission webhook; webhooks may take up to 30 s); a hook's deadline cuts it shorter.",
      ),
    eventNamespace: z
      .enum(EVENT_NAMESPACES, {
        error: (issue) =>
          `must be "default" or "kube-system" (got ${JSON.stringify(issue.input)}): the API server accepts an Event about a Node (a cluster-scoped object) only in one of these`,
      })
      .default('default')
      .describe(
        'Namespace of the node Events: "default" (where the kubelet writes them) or "kube-system" — the only two the API server accepts for an Event about a Node.',
      ),
    actions: actionsSchema,
    clusterApproval: clusterApprovalSchema,
  })
  .strict()
  .prefault({})
  .describe('Kubernetes nodes (AKS): Events, node condition, record enrichment and built-in node hooks.');

export type KubernetesConfig = z.output<typeof kubernetesSection>;
export type NodeActionsConfig = KubernetesConfig['actions'];

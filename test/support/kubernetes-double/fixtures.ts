/**
 * Builders for the objects a Kubernetes API server holds on an AKS node: a Ready node with the labels the kubelet
 * sets, pods (DaemonSet-owned, ReplicaSet-owned, mirror pods, pods with emptyDir volumes), DaemonSets and
 * PodDisruptionBudgets. The double fills in uid, resourceVersion and creationTimestamp when it stores them.
 */
import { randomUUID } from 'node:crypto';
import type { KubeObject } from './index.ts';

/** The providerID Azure's cloud provider sets on the node of a scale-set instance. */
export function scaleSetProviderId(
  scaleSet: string,
  instanceId: number,
  resourceGroup = 'mc_rg_aks_westeurope',
): string {
  return `azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/${resourceGroup}/providers/Microsoft.Compute/virtualMachineScaleSets/${scaleSet}/virtualMachines/${instanceId}`;
}

export function nodeFixture(
  name: string,
  options: { os?: 'linux' | 'windows'; labels?: Record<string, string>; providerID?: string } = {},
): KubeObject {
  const os = options.os ?? 'linux';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': os,
        'kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': 'Standard_D2s_v5',
        'topology.kubernetes.io/region': 'westeurope',
        'kubernetes.azure.com/agentpool': 'nodepool1',
        ...options.labels,
      },
      annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
    },
    spec: {
      podCIDR: '10.244.0.0/24',
      podCIDRs: ['10.244.0.0/24'],
      providerID: options.providerID ?? scaleSetProviderId('aks-nodepool1-vmss', 0, 'mc_rg'),
    },
    status: {
      conditions: [
        {
          type: 'MemoryPressure',
          status: 'False',
          reason: 'KubeletHasSufficientMemory',
          message: 'kubelet has sufficient memory available',
          lastHeartbeatTime: '2026-01-01T00:00:00Z',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: '2026-01-01T00:00:00Z',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.224.0.4' },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.32.4',
        operatingSystem: os,
        architecture: 'amd64',
        osImage: os === 'linux' ? 'Ubuntu 22.04.5 LTS' : 'Windows Server 2022 Datacenter',
        containerRuntimeVersion: 'containerd://1.7.27',
      },
    },
  };
}

export interface PodFixtureOptions {
  name: string;
  namespace?: string;
  nodeName: string;
  labels?: Record<string, string>;
  /** The controller owning the pod (DaemonSet, ReplicaSet, StatefulSet, Job, ...); none → an unmanaged pod. */
  owner?: { kind: string; name: string; uid?: string; apiVersion?: string };
  /** A static pod's mirror (annotation kubernetes.io/config.mirror, owned by the Node). */
  mirror?: boolean;
  /** Adds an emptyDir volume (kubectl drain needs --delete-emptydir-data). */
  emptyDir?: boolean;
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  ready?: boolean;
  terminationGracePeriodSeconds?: number;
  /** metadata.finalizers: a deleted pod stays terminating until they are removed. */
  finalizers?: string[];
  /** Already being deleted (metadata.deletionTimestamp set), e.g. by an operator before the drain. */
  terminating?: boolean;
}

export function podFixture(options: PodFixtureOptions): KubeObject {
  const phase = options.phase ?? 'Running';
  const ready = options.ready ?? phase === 'Running';
  const ownerReferences = options.mirror
    ? [{ apiVersion: 'v1', kind: 'Node', name: options.nodeName, uid: randomUUID(), controller: true }]
    : options.owner
      ? [
          {
            apiVersion: options.owner.apiVersion ?? (options.owner.kind === 'Job' ? 'batch/v1' : 'apps/v1'),
            kind: options.owner.kind,
            name: options.owner.name,
            uid: options.owner.uid ?? randomUUID(),
            controller: true,
            blockOwnerDeletion: true,
          },
        ]
      : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: options.name,
      namespace: options.namespace ?? 'default',
      labels: options.labels ?? { app: options.name },
      ...(options.mirror
        ? {
            annotations: {
              'kubernetes.io/config.mirror': 'b5c4e0f1d2a3',
              'kubernetes.io/config.source': 'file',
            },
          }
        : {}),
      ...(ownerReferences ? { ownerReferences } : {}),
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
      ...(options.terminating
        ? { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 30 }
        : {}),
    },
    spec: {
      nodeName: options.nodeName,
      containers: [{ name: 'main', image: 'mcr.microsoft.com/cbl-mariner/base/core:2.0' }],
      ...(options.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: options.terminationGracePeriodSeconds ?? 30,
      schedulerName: 'default-scheduler',
    },
    status: {
      phase,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

export function daemonSetFixture(name: string, namespace = 'kube-system'): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace, uid: randomUUID() },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'main', image: 'busybox' }] },
      },
    },
  };
}

export function pdbFixture(
  name: string,
  options: {
    namespace?: string;
    matchLabels: Record<string, string>;
    minAvailable?: number | string;
    maxUnavailable?: number | string;
  },
): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: options.namespace ?? 'default' },
    spec: {
      selector: { matchLabels: options.matchLabels },
      ...(options.minAvailable !== undefined ? { minAvailable: options.minAvailable } : {}),
      ...(options.maxUnavailable !== undefined ? { maxUnavailable: options.maxUnavailable } : {}),
    },
  };
}

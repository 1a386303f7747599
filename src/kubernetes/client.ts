/**
 * The Kubernetes API calls the forwarder makes, through @kubernetes/client-node (loaded only from here, and this
 * module only by a dynamic import when the `kubernetes` section is enabled: see src/kubernetes/index.ts). The
 * configuration is the in-cluster ServiceAccount (token, CA, KUBERNETES_SERVICE_HOST) or a kubeconfig file
 * (`kubernetes.kubeconfig`). Every call is listed in src/kubernetes/rbac.ts (REQUIRED_PERMISSIONS); a 403 becomes a
 * KubernetesError naming the denied verb and resource and the fix. Tokens are never logged: errors carry the
 * API server's Status message only.
 */
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { forbiddenMessage, type NodePatch, type NodeView, type PodView } from './node-actions.ts';

/** A failed API call: its HTTP status, what was attempted, and a message fit for logs and records. */
export class KubernetesError extends Error {
  readonly status: number;
  readonly verb: string;
  readonly resource: string;

  constructor(message: string, status: number, verb: string, resource: string) {
    super(message);
    this.name = 'KubernetesError';
    this.status = status;
    this.verb = verb;
    this.resource = resource;
  }
}

/** The outcome of one eviction request. */
export type EvictionResult =
  | { kind: 'evicted' }
  | { kind: 'gone' }
  /** 429: a PodDisruptionBudget does not allow it now (message from the API server). */
  | { kind: 'blocked'; message: string };

/** What the node hook and the reporter need from the API server. */
export interface NodeApi {
  readNode(name: string): Promise<NodeView>;
  /** JSON merge patch of metadata/spec (metadata.resourceVersion in the patch: 409 on a concurrent change). */
  patchNode(name: string, patch: NodePatch): Promise<NodeView>;
  /** Strategic merge patch of nodes/status (conditions merge by type). */
  patchNodeStatus(name: string, patch: Record<string, unknown>): Promise<void>;
  listPodsOnNode(node: string): Promise<PodView[]>;
  evictPod(pod: { namespace: string; name: string }, gracePeriodSeconds: number): Promise<EvictionResult>;
  createEvent(namespace: string, event: Record<string, unknown>): Promise<void>;
}

/** Loads the client configuration: a kubeconfig file when given, else the in-cluster ServiceAccount. */
export function loadKubeConfig(kubeconfig: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfig !== undefined) kc.loadFromFile(kubeconfig);
  else kc.loadFromCluster();
  return kc;
}

export function createNodeApi(kubeconfig: string | undefined): NodeApi {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
  return {
    readNode: (name) => call('get', 'nodes', async () => nodeView(await core.readNode({ name }))),
    patchNode: (name, body) =>
      call('patch', 'nodes', async () => nodeView(await core.patchNode({ name, body }, merge))),
    patchNodeStatus: (name, body) =>
      call('patch', 'nodes/status', async () => {
        await core.patchNodeStatus({ name, body }, strategic);
      }),
    listPodsOnNode: (node) =>
      call('list', 'pods', async () => {
        const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
        return list.items.map(podView);
      }),
    evictPod: async (pod, gracePeriodSeconds) => {
      try {
        await core.createNamespacedPodEviction({
          name: pod.name,
          namespace: pod.namespace,
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.name, namespace: pod.namespace },
            deleteOptions: { gracePeriodSeconds },
          },
        });
        return { kind: 'evicted' };
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return { kind: 'gone' };
        if (error instanceof ApiException && error.code === 429) {
          const causes = statusBody(error)?.details?.causes ?? [];
          const why = causes.map((c) => c.message).filter((m): m is string => typeof m === 'string');
          return { kind: 'blocked', message: [statusMessage(error) ?? 'TooManyRequests', ...why].join(' ') };
        }
        throw toKubernetesError(error, 'create', 'pods/eviction');
      }
    },
    createEvent: (namespace, body) =>
      call('create', 'events', async () => {
        await core.createNamespacedEvent({ namespace, body: body as never });
      }),
  };
}

async function call<T>(verb: string, resource: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toKubernetesError(error, verb, resource);
  }
}

interface Status {
  message?: unknown;
  details?: { causes?: Array<{ message?: unknown }> };
}

function statusBody(error: ApiException<unknown>): Status | undefined {
  const body: unknown = error.body;
  if (typeof body === 'object' && body !== null) return body as Status;
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as Status;
    } catch {
      return { message: body };
    }
  }
  return undefined;
}

function statusMessage(error: ApiException<unknown>): string | undefined {
  const message = statusBody(error)?.message;
  return typeof message === 'string' ? message : undefined;
}

/** A client error as a KubernetesError; a 403 names the denied verb and resource and the fix. */
export function toKubernetesError(error: unknown, verb: string, resource: string): KubernetesError {
  if (error instanceof KubernetesError) return error;
  if (error instanceof ApiException) {
    const status = error.code;
    if (status === 403) {
      return new KubernetesError(
        forbiddenMessage({ verb, resource }, statusBody(error)),
        403,
        verb,
        resource,
      );
    }
    const detail = statusMessage(error) ?? `HTTP ${status}`;
    return new KubernetesError(`Kubernetes ${verb} ${resource} failed: ${detail}`, status, verb, resource);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new KubernetesError(`Kubernetes ${verb} ${resource} failed: ${message}`, 0, verb, resource);
}

function nodeView(node: V1Node): NodeView {
  return {
    name: node.metadata?.name ?? '',
    unschedulable: node.spec?.unschedulable === true,
    taints: (node.spec?.taints ?? []).map((t) => ({
      key: t.key,
      ...(t.value === undefined ? {} : { value: t.value }),
      effect: t.effect,
    })),
    labels: { ...(node.metadata?.labels ?? {}) },
    annotations: { ...(node.metadata?.annotations ?? {}) },
    resourceVersion: node.metadata?.resourceVersion,
  };
}

function podView(pod: V1Pod): PodView {
  const controller = (pod.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    controllerKind: controller?.kind ?? null,
    annotations: { ...(pod.metadata?.annotations ?? {}) },
    phase: pod.status?.phase ?? '',
    hasEmptyDir: (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined),
    terminationGracePeriodSeconds: pod.spec?.terminationGracePeriodSeconds ?? null,
    terminating: pod.metadata?.deletionTimestamp !== undefined,
  };
}

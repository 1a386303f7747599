/**
 * The Kubernetes API calls the forwarder makes, through @kubernetes/client-node (loaded only from here, and this
 * module only by a dynamic import when the `kubernetes` section is enabled: see src/kubernetes/index.ts). The
 * configuration is the in-cluster ServiceAccount (token, CA, KUBERNETES_SERVICE_HOST) or a kubeconfig file
 * (`kubernetes.kubeconfig`). Every call is listed in src/kubernetes/rbac.ts (REQUIRED_PERMISSIONS); a 403 becomes a
 * KubernetesError naming the denied verb and resource and the fix. Tokens are never logged: errors carry the
 * API server's Status message only.
 *
 * Every request has its own timeout (`kubernetes.requestTimeoutMs`) and takes the caller's AbortSignal (a hook's
 * deadline, the forwarder stopping): both reach the HTTP request itself, so nothing waits on a hung API server.
 */
import {
  ApiException,
  type ConfigurationOptions,
  CoreV1Api,
  KubeConfig,
  Observable,
  PatchStrategy,
  type RequestContext,
  type ResponseContext,
  setHeaderOptions,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import { forbiddenMessage, type NodePatch, type NodeView, type PodView } from './node-actions.ts';

/** A failed API call: its HTTP status, what was attempted, and a message fit for logs and records. */
export class KubernetesError extends Error {
  /** The HTTP status; 0 when there was no answer (network, timeout, aborted). */
  readonly status: number;
  readonly verb: string;
  readonly resource: string;
  /** No answer within `kubernetes.requestTimeoutMs`. */
  readonly timedOut: boolean;
  /** The caller's signal aborted the request (a hook's deadline, the forwarder stopping). */
  readonly aborted: boolean;

  constructor(
    message: string,
    status: number,
    verb: string,
    resource: string,
    how: { timedOut?: boolean; aborted?: boolean } = {},
  ) {
    super(message);
    this.name = 'KubernetesError';
    this.status = status;
    this.verb = verb;
    this.resource = resource;
    this.timedOut = how.timedOut === true;
    this.aborted = how.aborted === true;
  }
}

/** The outcome of one eviction request. */
export type EvictionResult =
  | { kind: 'evicted' }
  | { kind: 'gone' }
  /** 429: a PodDisruptionBudget does not allow it now (message from the API server). */
  | { kind: 'blocked'; message: string };

/**
 * What the node hook, the reporter and cluster approval need from the API server. Every call takes an optional
 * AbortSignal (see the module comment) and rejects with a KubernetesError.
 */
export interface NodeApi {
  readNode(name: string, signal?: AbortSignal): Promise<NodeView>;
  /** JSON merge patch of metadata/spec (metadata.resourceVersion in the patch: 409 on a concurrent change). */
  patchNode(name: string, patch: NodePatch, signal?: AbortSignal): Promise<NodeView>;
  /** Strategic merge patch of nodes/status (conditions merge by type). */
  patchNodeStatus(name: string, patch: Record<string, unknown>, signal?: AbortSignal): Promise<void>;
  listPodsOnNode(node: string, signal?: AbortSignal): Promise<PodView[]>;
  evictPod(
    pod: { namespace: string; name: string },
    gracePeriodSeconds: number,
    signal?: AbortSignal,
  ): Promise<EvictionResult>;
  createEvent(namespace: string, event: Record<string, unknown>, signal?: AbortSignal): Promise<void>;
}

/** Loads the client configuration: a kubeconfig file when given, else the in-cluster ServiceAccount. */
export function loadKubeConfig(kubeconfig: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfig !== undefined) kc.loadFromFile(kubeconfig);
  else kc.loadFromCluster();
  return kc;
}

export function createNodeApi(kubeconfig: string | undefined, requestTimeoutMs: number): NodeApi {
  const core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  /** One request: its own timeout, the caller's signal, the error as a KubernetesError. */
  const call = async <T>(
    verb: string,
    resource: string,
    signal: AbortSignal | undefined,
    fn: (options: ConfigurationOptions) => Promise<T>,
    contentType?: string,
  ): Promise<T> => {
    const timeout = AbortSignal.timeout(requestTimeoutMs);
    const both = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    try {
      return await fn(requestOptions(both, contentType));
    } catch (error) {
      if (signal?.aborted) {
        const why = errorMessage(signal.reason);
        throw new KubernetesError(`Kubernetes ${verb} ${resource} abandoned: ${why}`, 0, verb, resource, {
          aborted: true,
        });
      }
      if (timeout.aborted) {
        throw new KubernetesError(
          `Kubernetes ${verb} ${resource} failed: no answer within ${requestTimeoutMs} ms (kubernetes.requestTimeoutMs)`,
          0,
          verb,
          resource,
          { timedOut: true },
        );
      }
      throw toKubernetesError(error, verb, resource);
    }
  };
  return {
    readNode: (name, signal) =>
      call('get', 'nodes', signal, async (o) => nodeView(await core.readNode({ name }, o))),
    patchNode: (name, body, signal) =>
      call(
        'patch',
        'nodes',
        signal,
        async (o) => nodeView(await core.patchNode({ name, body }, o)),
        PatchStrategy.MergePatch,
      ),
    patchNodeStatus: (name, body, signal) =>
      call(
        'patch',
        'nodes/status',
        signal,
        async (o) => {
          await core.patchNodeStatus({ name, body }, o);
        },
        PatchStrategy.StrategicMergePatch,
      ),
    listPodsOnNode: (node, signal) =>
      call('list', 'pods', signal, async (o) => {
        const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` }, o);
        return list.items.map(podView);
      }),
    evictPod: (pod, gracePeriodSeconds, signal) =>
      call('create', 'pods/eviction', signal, async (o): Promise<EvictionResult> => {
        try {
          await core.createNamespacedPodEviction(
            {
              name: pod.name,
              namespace: pod.namespace,
              body: {
                apiVersion: 'policy/v1',
                kind: 'Eviction',
                metadata: { name: pod.name, namespace: pod.namespace },
                deleteOptions: { gracePeriodSeconds },
              },
            },
            o,
          );
          return { kind: 'evicted' };
        } catch (error) {
          if (error instanceof ApiException && error.code === 404) return { kind: 'gone' };
          if (error instanceof ApiException && error.code === 429) {
            const causes = statusBody(error)?.details?.causes ?? [];
            const why = causes.map((c) => c.message).filter((m): m is string => typeof m === 'string');
            return {
              kind: 'blocked',
              message: [statusMessage(error) ?? 'TooManyRequests', ...why].join(' '),
            };
          }
          throw error;
        }
      }),
    createEvent: (namespace, body, signal) =>
      call('create', 'events', signal, async (o) => {
        await core.createNamespacedEvent({ namespace, body: body as never }, o);
      }),
  };
}

/** Per-request options: `signal` set on the request (and a Content-Type, for patches). */
function requestOptions(signal: AbortSignal, contentType: string | undefined): ConfigurationOptions {
  const middleware = {
    pre: (context: RequestContext) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
  const base: ConfigurationOptions = { middleware: [middleware], middlewareMergeStrategy: 'append' };
  return contentType === undefined ? base : setHeaderOptions('Content-Type', contentType, base);
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
  return new KubernetesError(
    `Kubernetes ${verb} ${resource} failed: ${errorMessage(error)}`,
    0,
    verb,
    resource,
  );
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
    conditions: (node.status?.conditions ?? []).map((c) => ({ type: c.type, status: c.status })),
    providerID: node.spec?.providerID,
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

/**
 * A Kubernetes API server test double: HTTPS on 127.0.0.1 (a throw-away self-signed certificate; kubectl and
 * client-go send a bearer token only over TLS), serving the part of the API that node actions use, with the
 * semantics of the real API server (checked against Debian's kubectl in test/kubernetes/kubectl-double.test.ts):
 *
 * - discovery: /version, /api, /api/v1, /apis, /apis/{group}[/{version}] (legacy format);
 * - core/v1 nodes (+ nodes/status), pods (+ pods/status, pods/eviction), events; apps/v1 daemonsets (kubectl
 *   drain GETs a DaemonSet-owned pod's DaemonSet); policy/v1 poddisruptionbudgets; events.k8s.io/v1 events
 *   (same storage as core events, converted field by field like the API server does);
 * - GET (one, list with labelSelector / fieldSelector), POST, PUT, PATCH (strategic merge, merge and JSON
 *   patch), DELETE (DeleteOptions, preconditions, grace period), a cluster-wide resourceVersion bumped on every
 *   write, 409 Conflict on a stale resourceVersion, main-resource writes keep status and status writes keep spec;
 * - eviction with policy/v1 PDB semantics (429 TooManyRequests "Cannot evict pod as it would violate the pod's
 *   disruption budget." with the DisruptionBudget cause; 500 for a pod with several PDBs); the double is its own
 *   disruption controller: a PDB's status is recomputed from the pods (expectedPods is fixed when the PDB is
 *   added, like the scale of the pods' controllers, unless minAvailable is an integer);
 * - pod deletion as the API server and kubelet do it: with a grace period (and `podTerminationDelayMs`) or
 *   finalizers the pod stays terminating (deletionTimestamp set) until its containers stopped and no finalizer is
 *   left; requests can be held (Fault.delayMs: a hung webhook or API server) and a client that gives up is seen;
 * - bearer-token auth: missing/unknown token → 401; a token whose grant lacks (verb, group, resource) → 403 with
 *   the real RBAC message; JSON Status objects on every error.
 *
 * Not implemented: watch (answers 405), server-side apply, Table output (kubectl falls back to client-side
 * printing), OpenAPI documents (404: use kubectl --validate=false), namespaces as objects.
 *
 * Usage:
 *
 *   const k8s = await startKubernetesDouble({ nodes: [nodeFixture('aks-nodepool1-0')] });
 *   const kubeconfig = writeKubeconfig(join(dir, 'kubeconfig'), k8s, k8s.adminToken);
 *   ... k8s.node('aks-nodepool1-0').spec.unschedulable, k8s.requests(), k8s.addPod(podFixture({...}))
 *   await k8s.close();
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateTestCertificate } from '../event-hubs-double/cert.ts';
import {
  apiGroup,
  apiGroupList,
  coreVersions,
  findResource,
  groupNames,
  type ResourceDef,
  resourceList,
  SERVER_VERSION,
} from './discovery.ts';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, PatchError } from './patch.ts';
import { matchesLabelSelector, parseFieldSelector, parseLabelSelector, SelectorError } from './selectors.ts';

export { daemonSetFixture, nodeFixture, pdbFixture, podFixture, scaleSetProviderId } from './fixtures.ts';
export { kubeconfigYaml, writeKubeconfig } from './kubeconfig.ts';

// biome-ignore lint/suspicious/noExplicitAny: Kubernetes objects are open-ended JSON; tests read them freely.
export type KubeObject = { [key: string]: any };

/** One (verb, API group, resource) an RBAC rule can grant; resource may name a subresource (pods/eviction). */
export interface Permission {
  verb: string;
  group: string;
  resource: string;
}

export interface TokenGrant {
  /** The user name the API server authenticates the token as (appears in 403 messages). */
  user: string;
  /** '*' (cluster-admin) or the permissions the user's roles grant. */
  permissions: '*' | readonly Permission[];
}

export interface KubernetesDoubleOptions {
  nodes?: KubeObject[];
  pods?: KubeObject[];
  daemonSets?: KubeObject[];
  podDisruptionBudgets?: KubeObject[];
  /** Bearer tokens; default: { [adminToken]: { user: 'kubernetes-admin', permissions: '*' } }. */
  tokens?: Record<string, TokenGrant>;
  /**
   * How long a deleted (or evicted) pod with a non-zero grace period stays, terminating (deletionTimestamp set),
   * before it disappears — the kubelet's part. Default 0: it disappears at once.
   */
  podTerminationDelayMs?: number;
}

export interface RequestLogEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  body: unknown;
  user: string | undefined;
  /** The authorization verb (get, list, create, patch, ...) for resource requests. */
  verb: string | undefined;
  group: string | undefined;
  /** resource or resource/subresource (pods/eviction). */
  resource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  status: number;
  /** The Status reason of an error answer (Forbidden, TooManyRequests, Conflict, ...). */
  reason: string | undefined;
}

export interface PodDeletion {
  namespace: string;
  name: string;
  via: 'delete' | 'eviction';
  gracePeriodSeconds: number | undefined;
}

export interface Fault {
  method?: string;
  /** Substring of, or pattern for, the request path. */
  path: string | RegExp;
  /** Answer with a Status of this code; without it (and with `delayMs`) the request is served after the delay. */
  code?: number;
  reason?: string;
  message?: string;
  /**
   * Hold the request this long first (a slow admission webhook, a hung API server). A client that gives up
   * meanwhile gets nothing, and nothing is applied (the API server cancels a request whose client went away);
   * the request is logged with status 0 and reason ClientClosedRequest.
   */
  delayMs?: number;
  /** How many matching requests fail (default 1). */
  times?: number;
}

export interface KubernetesDouble {
  /** https://127.0.0.1:PORT */
  readonly url: string;
  /** The PEM certificate the server presents (self-signed: the CA to trust). */
  readonly ca: string;
  /** Path of that certificate, e.g. for NODE_EXTRA_CA_CERTS. */
  readonly caPath: string;
  /** A token granted everything (user kubernetes-admin), unless options.tokens replaces the defaults. */
  readonly adminToken: string;

  node(name: string): KubeObject | undefined;
  nodes(): KubeObject[];
  pod(namespace: string, name: string): KubeObject | undefined;
  pods(filter?: { nodeName?: string; namespace?: string }): KubeObject[];
  podDisruptionBudget(namespace: string, name: string): KubeObject | undefined;
  /** Events in core/v1 form (both core and events.k8s.io writes land here). */
  events(namespace?: string): KubeObject[];
  deletedPods(): PodDeletion[];
  requests(): RequestLogEntry[];
  clearRequests(): void;
  /** Called after every answered request (e.g. release a PDB once the first 429 was sent). */
  onRequest(listener: (entry: RequestLogEntry) => void): () => void;

  addNode(node: KubeObject): KubeObject;
  addPod(pod: KubeObject): KubeObject;
  /** Removes a pod at once (no log entry, no deletion record): the kubelet or a controller removed it. */
  removePod(namespace: string, name: string): boolean;
  /**
   * A controller drops its finalizers from the pod (as a PATCH would): a pod being deleted then disappears once its
   * containers stopped. A pod with finalizers stays terminating (deletionTimestamp set) until then.
   */
  removeFinalizers(namespace: string, name: string): void;
  addDaemonSet(daemonSet: KubeObject): KubeObject;
  addPodDisruptionBudget(pdb: KubeObject): KubeObject;
  /** Changes a PDB (a new generation); e.g. release: pdb => { pdb.spec.minAvailable = 0 }. */
  updatePodDisruptionBudget(namespace: string, name: string, mutate: (pdb: KubeObject) => void): KubeObject;
  removePodDisruptionBudget(namespace: string, name: string): boolean;
  /** Adds or replaces a bearer token. */
  setToken(token: string, grant: TokenGrant): void;
  /** Fails the next matching request(s) with a Status of `code`. */
  injectFault(fault: Fault): void;
  close(): Promise<void>;
}

class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: KubeObject | undefined;
  constructor(code: number, reason: string, message: string, details?: KubeObject) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
}

function statusBody(code: number, reason: string, message: string, details?: KubeObject): KubeObject {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

function qualified(group: string, resource: string): string {
  return group === '' ? resource : `${resource}.${group}`;
}

function notFound(group: string, resource: string, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(group, resource)} "${name}" not found`, {
    name,
    ...(group ? { group } : {}),
    kind: resource,
  });
}

function conflict(group: string, resource: string, name: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(group, resource)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, ...(group ? { group } : {}), kind: resource },
  );
}

function invalid(
  kind: string,
  group: string,
  name: string,
  causes: { field: string; reason: string; message: string }[],
): ApiError {
  const rendered = causes.map((c) => `${c.field}: ${c.message}`);
  const list = rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${group ? `${kind}.${group}` : kind} "${name}" is invalid: ${list}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes,
  });
}

function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

const clone = <T>(value: T): T => structuredClone(value);

interface Route {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

const POD_FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata?.name ?? '',
  'metadata.namespace': (o) => o.metadata?.namespace ?? '',
  'spec.nodeName': (o) => o.spec?.nodeName ?? '',
  'spec.restartPolicy': (o) => o.spec?.restartPolicy ?? '',
  'spec.schedulerName': (o) => o.spec?.schedulerName ?? '',
  'spec.serviceAccountName': (o) => o.spec?.serviceAccountName ?? '',
  'spec.hostNetwork': (o) => String(o.spec?.hostNetwork ?? false),
  'status.phase': (o) => o.status?.phase ?? '',
  'status.podIP': (o) => o.status?.podIP ?? '',
  'status.nominatedNodeName': (o) => o.status?.nominatedNodeName ?? '',
};
const NODE_FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata?.name ?? '',
  'spec.unschedulable': (o) => String(o.spec?.unschedulable ?? false),
};
const EVENT_FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata?.name ?? '',
  'metadata.namespace': (o) => o.metadata?.namespace ?? '',
  'involvedObject.kind': (o) => o.involvedObject?.kind ?? '',
  'involvedObject.namespace': (o) => o.involvedObject?.namespace ?? '',
  'involvedObject.name': (o) => o.involvedObject?.name ?? '',
  'involvedObject.uid': (o) => o.involvedObject?.uid ?? '',
  'involvedObject.apiVersion': (o) => o.involvedObject?.apiVersion ?? '',
  'involvedObject.resourceVersion': (o) => o.involvedObject?.resourceVersion ?? '',
  'involvedObject.fieldPath': (o) => o.involvedObject?.fieldPath ?? '',
  reason: (o) => o.reason ?? '',
  reportingComponent: (o) => o.reportingComponent ?? '',
  source: (o) => o.source?.component ?? '',
  type: (o) => o.type ?? '',
};
const EVENTS_V1_FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': EVENT_FIELDS['metadata.name']!,
  'metadata.namespace': EVENT_FIELDS['metadata.namespace']!,
  'regarding.kind': EVENT_FIELDS['involvedObject.kind']!,
  'regarding.namespace': EVENT_FIELDS['involvedObject.namespace']!,
  'regarding.name': EVENT_FIELDS['involvedObject.name']!,
  'regarding.uid': EVENT_FIELDS['involvedObject.uid']!,
  reason: EVENT_FIELDS.reason!,
  reportingController: EVENT_FIELDS.reportingComponent!,
  type: EVENT_FIELDS.type!,
};
const DEFAULT_FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata?.name ?? '',
  'metadata.namespace': (o) => o.metadata?.namespace ?? '',
};

function fieldsFor(def: ResourceDef): Record<string, (o: KubeObject) => string> {
  if (def.group === '' && def.resource === 'pods') return POD_FIELDS;
  if (def.group === '' && def.resource === 'nodes') return NODE_FIELDS;
  if (def.group === '' && def.resource === 'events') return EVENT_FIELDS;
  if (def.group === 'events.k8s.io') return EVENTS_V1_FIELDS;
  return DEFAULT_FIELDS;
}

/** core/v1 Event → events.k8s.io/v1 Event (the API server's conversion). */
function eventToV1(core: KubeObject): KubeObject {
  const out: KubeObject = {
    kind: 'Event',
    apiVersion: 'events.k8s.io/v1',
    metadata: core.metadata,
    eventTime: core.eventTime ?? null,
    series: core.series,
    reportingController: core.reportingComponent,
    reportingInstance: core.reportingInstance,
    action: core.action,
    reason: core.reason,
    regarding: core.involvedObject,
    related: core.related,
    note: core.message,
    type: core.type,
    deprecatedSource: core.source,
    deprecatedFirstTimestamp: core.firstTimestamp,
    deprecatedLastTimestamp: core.lastTimestamp,
    deprecatedCount: core.count,
  };
  for (const key of Object.keys(out)) if (out[key] === undefined || out[key] === '') delete out[key];
  return out;
}

/** events.k8s.io/v1 Event → core/v1 Event. */
function eventFromV1(v1: KubeObject): KubeObject {
  const out: KubeObject = {
    kind: 'Event',
    apiVersion: 'v1',
    metadata: v1.metadata ?? {},
    involvedObject: v1.regarding ?? {},
    reason: v1.reason,
    message: v1.note,
    source: v1.deprecatedSource ?? {},
    firstTimestamp: v1.deprecatedFirstTimestamp ?? null,
    lastTimestamp: v1.deprecatedLastTimestamp ?? null,
    count: v1.deprecatedCount,
    type: v1.type,
    eventTime: v1.eventTime ?? null,
    series: v1.series,
    action: v1.action,
    related: v1.related,
    reportingComponent: v1.reportingController ?? '',
    reportingInstance: v1.reportingInstance ?? '',
  };
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key];
  return out;
}

function podReady(pod: KubeObject): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  return (pod.status?.conditions ?? []).some((c: KubeObject) => c.type === 'Ready' && c.status === 'True');
}

function scaled(value: number | string, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const percent = Number.parseInt(value.replace('%', ''), 10);
  const raw = (percent * total) / 100;
  return roundUp ? Math.ceil(raw) : Math.floor(raw);
}

export async function startKubernetesDouble(
  options: KubernetesDoubleOptions = {},
): Promise<KubernetesDouble> {
  const certDir = mkdtempSync(join(tmpdir(), 'sef-k8s-double-'));
  const certificate = generateTestCertificate(certDir);
  const adminToken = `admin-${randomBytes(12).toString('hex')}`;
  const tokens = new Map<string, TokenGrant>(
    Object.entries(options.tokens ?? { [adminToken]: { user: 'kubernetes-admin', permissions: '*' } }),
  );
  const terminationDelayMs = options.podTerminationDelayMs ?? 0;

  let revision = 1000;
  const nextVersion = (): string => String(++revision);
  /** `${group}/${resource}` → `${namespace}/${name}` → object. Core and events.k8s.io events share 'events'. */
  const store = new Map<string, Map<string, KubeObject>>();
  const bucket = (group: string, resource: string): Map<string, KubeObject> => {
    const key = resource === 'events' ? 'events' : `${group}/${resource}`;
    let map = store.get(key);
    if (!map) {
      map = new Map();
      store.set(key, map);
    }
    return map;
  };
  const keyOf = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;
  const log: RequestLogEntry[] = [];
  const listeners = new Set<(entry: RequestLogEntry) => void>();
  const deletions: PodDeletion[] = [];
  const faults: (Fault & { left: number })[] = [];
  const timers = new Set<NodeJS.Timeout>();
  /** uids of deleted pods whose containers stopped (the kubelet's part of a graceful deletion is over). */
  const containersStopped = new Set<string>();
  /** PDB expectedPods, fixed when the PDB is added (the pods' controllers' scale). */
  const pdbExpected = new Map<string, number>();

  function stamp(object: KubeObject, def: ResourceDef, namespace: string | undefined): KubeObject {
    object.metadata ??= {};
    const meta = object.metadata;
    if (!meta.name && meta.generateName)
      meta.name = `${meta.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`;
    if (def.namespaced) meta.namespace = namespace ?? meta.namespace ?? 'default';
    else delete meta.namespace;
    meta.uid ??= randomUUID();
    meta.creationTimestamp ??= timestamp();
    meta.resourceVersion = nextVersion();
    if (def.group === 'policy' || def.group === 'apps') meta.generation ??= 1;
    object.apiVersion = def.group === '' ? def.version : `${def.group}/${def.version}`;
    object.kind = def.kind;
    return object;
  }

  function seed(group: string, resource: string, object: KubeObject): KubeObject {
    const def = findResource(group, 'v1', resource)!;
    const copy = stamp(clone(object), def, object.metadata?.namespace);
    const map = bucket(group, resource);
    map.set(keyOf(copy.metadata.namespace, copy.metadata.name), copy);
    if (group === 'policy') {
      pdbExpected.set(keyOf(copy.metadata.namespace, copy.metadata.name), matchingPods(copy).length);
      refreshPdbStatus(copy);
    }
    return clone(copy);
  }

  function matchingPods(pdb: KubeObject): KubeObject[] {
    return [...bucket('', 'pods').values()].filter(
      (pod) =>
        pod.metadata.namespace === pdb.metadata.namespace &&
        matchesLabelSelector(pdb.spec?.selector, pod.metadata.labels ?? {}),
    );
  }

  /** The disruption controller's computation of a PDB's status. */
  function refreshPdbStatus(pdb: KubeObject): void {
    const pods = matchingPods(pdb);
    const healthy = pods.filter(podReady).length;
    const spec = pdb.spec ?? {};
    let expected = pods.length;
    let desired: number;
    if (spec.maxUnavailable !== undefined) {
      expected = pdbExpected.get(keyOf(pdb.metadata.namespace, pdb.metadata.name)) ?? pods.length;
      desired = Math.max(0, expected - scaled(spec.maxUnavailable, expected, true));
    } else if (typeof spec.minAvailable === 'string') {
      expected = pdbExpected.get(keyOf(pdb.metadata.namespace, pdb.metadata.name)) ?? pods.length;
      desired = scaled(spec.minAvailable, expected, true);
    } else {
      desired = spec.minAvailable ?? 0;
    }
    pdb.status = {
      ...(pdb.status ?? {}),
      observedGeneration: pdb.metadata.generation ?? 1,
      disruptionsAllowed: Math.max(0, healthy - desired),
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      conditions: [
        {
          type: 'DisruptionAllowed',
          status: healthy - desired > 0 ? 'True' : 'False',
          reason: healthy - desired > 0 ? 'SufficientPods' : 'InsufficientPods',
          message: '',
          observedGeneration: pdb.metadata.generation ?? 1,
          lastTransitionTime: timestamp(),
        },
      ],
    };
  }

  function refreshAllPdbs(): void {
    for (const pdb of bucket('policy', 'poddisruptionbudgets').values()) refreshPdbStatus(pdb);
  }

  function authorize(
    grant: TokenGrant,
    verb: string,
    group: string,
    resource: string,
    namespace: string | undefined,
    name: string | undefined,
  ): void {
    if (grant.permissions === '*') return;
    const ok = grant.permissions.some(
      (p) =>
        (p.verb === verb || p.verb === '*') &&
        (p.group === group || p.group === '*') &&
        (p.resource === resource || p.resource === '*'),
    );
    if (ok) return;
    const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
    const why = `User "${grant.user}" cannot ${verb} resource "${resource}" in API group "${group}" ${scope}`;
    const base = qualified(group, resource.split('/')[0]!);
    throw new ApiError(
      403,
      'Forbidden',
      name ? `${base} "${name}" is forbidden: ${why}` : `${base} is forbidden: ${why}`,
      {
        ...(name ? { name } : {}),
        ...(group ? { group } : {}),
        kind: resource.split('/')[0],
      },
    );
  }

  function parseRoute(segments: string[]): Route | undefined {
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api') {
      group = '';
      version = segments[1] ?? '';
      rest = segments.slice(2);
    } else {
      group = segments[1] ?? '';
      version = segments[2] ?? '';
      rest = segments.slice(3);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const def = findResource(group, version, rest[0] ?? '');
    if (!def || rest.length > 3) return undefined;
    if (def.namespaced === false && namespace !== undefined) return undefined;
    const subresource = rest[2];
    if (subresource !== undefined && !(subresource in def.subresources)) return undefined;
    return { def, namespace, name: rest[1], subresource };
  }

  function present(def: ResourceDef, object: KubeObject): KubeObject {
    const copy = clone(object);
    return def.group === 'events.k8s.io' ? eventToV1(copy) : copy;
  }

  function list(def: ResourceDef, namespace: string | undefined, query: URLSearchParams): KubeObject {
    let labelTest: (labels: Record<string, string>) => boolean = () => true;
    let fieldTest: (object: KubeObject) => boolean = () => true;
    try {
      if (query.get('labelSelector')) labelTest = parseLabelSelector(query.get('labelSelector')!);
      if (query.get('fieldSelector'))
        fieldTest = parseFieldSelector(query.get('fieldSelector')!, fieldsFor(def));
    } catch (error) {
      if (error instanceof SelectorError) throw new ApiError(400, 'BadRequest', error.message);
      throw error;
    }
    if (def.resource === 'poddisruptionbudgets') refreshAllPdbs();
    const items = [...bucket(def.group, def.resource).values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .map((o) => present(def, o))
      .filter((o) => labelTest(o.metadata.labels ?? {}) && fieldTest(o))
      .sort((a, b) =>
        `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace ?? ''}/${b.metadata.name}`,
        ),
      );
    for (const item of items) {
      delete item.apiVersion;
      delete item.kind;
    }
    return {
      kind: `${def.kind}List`,
      apiVersion: def.group === '' ? def.version : `${def.group}/${def.version}`,
      metadata: { resourceVersion: String(revision) },
      items,
    };
  }

  function getExisting(def: ResourceDef, namespace: string | undefined, name: string): KubeObject {
    const found = bucket(def.group, def.resource).get(keyOf(def.namespaced ? namespace : undefined, name));
    if (!found) throw notFound(def.group, def.resource, name);
    return found;
  }

  function validateNode(node: KubeObject): void {
    const taints: KubeObject[] = node.spec?.taints ?? [];
    const causes: { field: string; reason: string; message: string }[] = [];
    const seen = new Set<string>();
    taints.forEach((taint, index) => {
      if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(taint.effect)) {
        causes.push({
          field: `spec.taints[${index}].effect`,
          reason: 'FieldValueNotSupported',
          message: `Unsupported value: "${taint.effect ?? ''}": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
        });
      }
      if (!taint.key) {
        causes.push({
          field: `spec.taints[${index}].key`,
          reason: 'FieldValueRequired',
          message: 'Required value',
        });
      }
      const id = `${taint.key}:${taint.effect}`;
      if (seen.has(id)) {
        causes.push({
          field: `spec.taints[${index}]`,
          reason: 'FieldValueDuplicate',
          message: `Duplicate value: core.Taint{Key:"${taint.key}", Value:"${taint.value ?? ''}", Effect:"${taint.effect}", TimeAdded:<nil>}: taints must be unique by key and effect pair`,
        });
      }
      seen.add(id);
    });
    for (const condition of node.status?.conditions ?? []) {
      if (!condition.type) {
        causes.push({
          field: 'status.conditions.type',
          reason: 'FieldValueRequired',
          message: 'Required value',
        });
      }
    }
    if (causes.length > 0) throw invalid('Node', '', node.metadata.name, causes);
  }

  function validateEvent(event: KubeObject, namespace: string, viaV1: boolean): void {
    const causes: { field: string; reason: string; message: string }[] = [];
    const required = (field: string) =>
      causes.push({ field, reason: 'FieldValueRequired', message: 'Required value' });
    const involvedNamespace = event.involvedObject?.namespace ?? '';
    const objectField = viaV1 ? 'regarding.namespace' : 'involvedObject.namespace';
    if (involvedNamespace === '') {
      if (!['', 'default', ...(event.eventTime ? ['kube-system'] : [])].includes(namespace)) {
        causes.push({
          field: objectField,
          reason: 'FieldValueInvalid',
          message: `Invalid value: "": does not match event.namespace`,
        });
      }
    } else if (involvedNamespace !== namespace) {
      causes.push({
        field: objectField,
        reason: 'FieldValueInvalid',
        message: `Invalid value: "${involvedNamespace}": does not match event.namespace`,
      });
    }
    if (viaV1 || event.eventTime) {
      // Events with eventTime (every events.k8s.io/v1 write) get the non-legacy validation.
      if (!event.eventTime) required('eventTime');
      if (!event.reportingComponent) required(viaV1 ? 'reportingController' : 'reportingComponent');
      if (!event.reportingInstance) required('reportingInstance');
      if (!event.action) required('action');
      if (!event.reason) required('reason');
      if (event.type !== 'Normal' && event.type !== 'Warning') {
        causes.push({
          field: 'type',
          reason: 'FieldValueNotSupported',
          message: `Unsupported value: "${event.type ?? ''}": supported values: "Normal", "Warning"`,
        });
      }
    } else if (
      event.type !== undefined &&
      event.type !== '' &&
      event.type !== 'Normal' &&
      event.type !== 'Warning'
    ) {
      causes.push({
        field: 'type',
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: "${event.type}": supported values: "Normal", "Warning"`,
      });
    }
    if (causes.length > 0) {
      throw invalid('Event', viaV1 ? 'events.k8s.io' : '', event.metadata?.name ?? '', causes);
    }
  }

  function checkBodyIdentity(
    def: ResourceDef,
    body: KubeObject,
    namespace: string | undefined,
    name?: string,
  ): void {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ApiError(400, 'BadRequest', 'the body of the request was in an unknown format');
    }
    const expectedApiVersion = def.group === '' ? def.version : `${def.group}/${def.version}`;
    if (body.kind !== undefined && body.kind !== def.kind) {
      throw new ApiError(
        400,
        'BadRequest',
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${expectedApiVersion})`,
      );
    }
    if (def.namespaced && body.metadata?.namespace && namespace && body.metadata.namespace !== namespace) {
      throw new ApiError(
        400,
        'BadRequest',
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    if (name !== undefined && body.metadata?.name && body.metadata.name !== name) {
      throw new ApiError(
        400,
        'BadRequest',
        'the name of the object (' +
          body.metadata.name +
          ') does not match the name on the URL (' +
          name +
          ')',
      );
    }
  }

  function create(def: ResourceDef, namespace: string | undefined, body: KubeObject): KubeObject {
    checkBodyIdentity(def, body, namespace);
    let object = clone(body);
    if (def.resource === 'events') {
      if (def.group === 'events.k8s.io') object = eventFromV1(object);
      object.metadata ??= {};
      if (!object.metadata.name && !object.metadata.generateName) {
        throw invalid('Event', def.group, '', [
          {
            field: 'metadata.name',
            reason: 'FieldValueRequired',
            message: 'Required value: name or generateName is required',
          },
        ]);
      }
      validateEvent(object, namespace ?? 'default', def.group === 'events.k8s.io');
    }
    if (!object.metadata?.name && !object.metadata?.generateName) {
      throw invalid(def.kind, def.group, '', [
        {
          field: 'metadata.name',
          reason: 'FieldValueRequired',
          message: 'Required value: name or generateName is required',
        },
      ]);
    }
    delete object.metadata.resourceVersion;
    delete object.metadata.uid;
    delete object.metadata.creationTimestamp;
    stamp(object, def, namespace);
    if (def.resource === 'events') object.apiVersion = 'v1';
    if (def.resource === 'nodes') validateNode(object);
    const map = bucket(def.group, def.resource);
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    if (map.has(key)) {
      throw new ApiError(
        409,
        'AlreadyExists',
        `${qualified(def.group, def.resource)} "${object.metadata.name}" already exists`,
        {
          name: object.metadata.name,
          ...(def.group ? { group: def.group } : {}),
          kind: def.resource,
        },
      );
    }
    map.set(key, object);
    if (def.resource === 'poddisruptionbudgets') {
      pdbExpected.set(key, matchingPods(object).length);
      refreshPdbStatus(object);
    }
    return present(def, object);
  }

  /** Writes `next` over `current` (same key) with the API server's update rules for (sub)resources. */
  function write(route: Route, current: KubeObject, next: KubeObject): KubeObject {
    const { def } = route;
    const name = current.metadata.name;
    if (
      next.metadata?.resourceVersion !== undefined &&
      next.metadata.resourceVersion !== '' &&
      next.metadata.resourceVersion !== current.metadata.resourceVersion
    ) {
      throw conflict(def.group, def.resource, name);
    }
    if (next.metadata?.uid !== undefined && next.metadata.uid !== current.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${next.metadata.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if ((next.metadata?.name ?? name) !== name) {
      throw invalid(def.kind, def.group, name, [
        {
          field: 'metadata.name',
          reason: 'FieldValueInvalid',
          message: `Invalid value: "${next.metadata.name}": field is immutable`,
        },
      ]);
    }
    const result = clone(next);
    result.metadata = { ...(result.metadata ?? {}) };
    // Immutable / server-owned metadata.
    for (const field of [
      'uid',
      'creationTimestamp',
      'namespace',
      'name',
      'deletionTimestamp',
      'generation',
    ] as const) {
      if (current.metadata[field] !== undefined) result.metadata[field] = current.metadata[field];
      else delete result.metadata[field];
    }
    result.apiVersion = current.apiVersion;
    result.kind = current.kind;
    if (route.subresource === 'status') {
      // Status writes change only status (nodes and pods: spec comes from the stored object).
      result.spec = clone(current.spec);
      if (result.spec === undefined) delete result.spec;
      result.metadata = {
        ...clone(current.metadata),
        labels: result.metadata.labels,
        annotations: result.metadata.annotations,
      };
      if (result.metadata.labels === undefined) delete result.metadata.labels;
      if (result.metadata.annotations === undefined) delete result.metadata.annotations;
    } else if ('status' in current || 'status' in result) {
      // Main-resource writes ignore status.
      if (current.status === undefined) delete result.status;
      else result.status = clone(current.status);
    }
    if (def.resource === 'nodes') validateNode(result);
    if (
      def.resource === 'pods' &&
      JSON.stringify(stripPodMutable(result.spec)) !== JSON.stringify(stripPodMutable(current.spec))
    ) {
      throw invalid('Pod', '', name, [
        {
          field: 'spec',
          reason: 'FieldValueForbidden',
          message:
            'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
        },
      ]);
    }
    if (
      JSON.stringify({ ...result, metadata: { ...result.metadata, resourceVersion: '' } }) ===
      JSON.stringify({ ...current, metadata: { ...current.metadata, resourceVersion: '' } })
    ) {
      return present(def, current); // a no-op write does not bump resourceVersion
    }
    if (
      (def.group === 'policy' || def.group === 'apps') &&
      route.subresource === undefined &&
      JSON.stringify(result.spec) !== JSON.stringify(current.spec)
    ) {
      result.metadata.generation = (current.metadata.generation ?? 1) + 1;
    }
    result.metadata.resourceVersion = nextVersion();
    bucket(def.group, def.resource).set(keyOf(current.metadata.namespace, name), result);
    if (def.resource === 'poddisruptionbudgets') refreshPdbStatus(result);
    if (def.resource === 'pods') {
      refreshAllPdbs();
      removeIfFinished(keyOf(current.metadata.namespace, name));
    }
    return present(def, result);
  }

  function stripPodMutable(spec: KubeObject | undefined): unknown {
    if (!spec) return spec;
    const rest: KubeObject = clone(spec);
    for (const field of ['activeDeadlineSeconds', 'tolerations', 'terminationGracePeriodSeconds'])
      delete rest[field];
    for (const field of ['containers', 'initContainers']) {
      for (const container of rest[field] ?? []) delete container.image;
    }
    return rest;
  }

  function patch(route: Route, contentType: string, body: unknown): KubeObject {
    const current = getExisting(route.def, route.namespace, route.name!);
    const base = route.def.group === 'events.k8s.io' ? eventToV1(clone(current)) : clone(current);
    let patched: unknown;
    try {
      if (contentType === 'application/strategic-merge-patch+json') {
        if (route.def.group !== '' && route.def.group !== 'apps') {
          throw new ApiError(
            415,
            'UnsupportedMediaType',
            `strategic merge patch is not supported for ${route.def.kind}`,
          );
        }
        patched = applyStrategicMergePatch(base, body, route.def.kind);
      } else if (contentType === 'application/merge-patch+json') {
        patched = applyMergePatch(base, body);
      } else if (contentType === 'application/json-patch+json') {
        patched = applyJsonPatch(base, body);
      } else if (contentType === 'application/apply-patch+yaml') {
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          'the test double does not implement server-side apply',
        );
      } else {
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
        );
      }
    } catch (error) {
      if (error instanceof PatchError) {
        if (error.code === 400) throw new ApiError(400, 'BadRequest', error.message);
        throw new ApiError(422, 'Invalid', error.message);
      }
      throw error;
    }
    let next = patched as KubeObject;
    if (route.def.group === 'events.k8s.io') next = eventFromV1(next);
    // A resourceVersion the patch itself sets is a precondition; otherwise the current one applies.
    const patchVersion = (body as KubeObject)?.metadata?.resourceVersion;
    const jsonPatchVersion = Array.isArray(body)
      ? body.find((op: KubeObject) => op?.path === '/metadata/resourceVersion' && op.op !== 'test')?.value
      : undefined;
    const precondition = patchVersion ?? jsonPatchVersion;
    next.metadata ??= {};
    next.metadata.resourceVersion = precondition ?? current.metadata.resourceVersion;
    return write(route, current, next);
  }

  function deletePod(pod: KubeObject, via: PodDeletion['via'], grace: number | undefined): KubeObject {
    const key = keyOf(pod.metadata.namespace, pod.metadata.name);
    const pods = bucket('', 'pods');
    deletions.push({
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      via,
      gracePeriodSeconds: grace,
    });
    const effectiveGrace = grace ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    const graceful = terminationDelayMs > 0 && effectiveGrace > 0;
    if (graceful || hasFinalizers(pod)) {
      if (!pod.metadata.deletionTimestamp) {
        pod.metadata.deletionTimestamp = timestamp(new Date(Date.now() + effectiveGrace * 1000));
        pod.metadata.deletionGracePeriodSeconds = effectiveGrace;
        pod.metadata.resourceVersion = nextVersion();
        // The kubelet's part: the containers stop after the delay (at once without one); the object goes once
        // they stopped and no finalizer is left (a finalizer removed later through PATCH/PUT ends it then).
        const stopped = () => {
          if (pods.get(key)?.metadata.uid !== pod.metadata.uid) return;
          containersStopped.add(pod.metadata.uid);
          removeIfFinished(key);
        };
        if (graceful) {
          const timer = setTimeout(() => {
            timers.delete(timer);
            stopped();
          }, terminationDelayMs);
          timers.add(timer);
        } else {
          containersStopped.add(pod.metadata.uid);
        }
      }
      refreshAllPdbs();
      return clone(pod);
    }
    pods.delete(key);
    refreshAllPdbs();
    const gone = clone(pod);
    gone.metadata.deletionTimestamp = timestamp();
    gone.metadata.deletionGracePeriodSeconds = 0;
    return gone;
  }

  function hasFinalizers(object: KubeObject): boolean {
    return (object.metadata?.finalizers ?? []).length > 0;
  }

  /** A terminating pod whose containers stopped and that has no finalizer left is removed. */
  function removeIfFinished(key: string): void {
    const pods = bucket('', 'pods');
    const pod = pods.get(key);
    if (!pod?.metadata.deletionTimestamp || hasFinalizers(pod)) return;
    if (!containersStopped.has(pod.metadata.uid)) return;
    pods.delete(key);
    refreshAllPdbs();
  }

  function remove(route: Route, query: URLSearchParams, body: unknown): KubeObject {
    const { def } = route;
    const current = getExisting(def, route.namespace, route.name!);
    const options = (body && typeof body === 'object' ? body : {}) as KubeObject;
    const preconditions = options.preconditions ?? {};
    if (preconditions.uid && preconditions.uid !== current.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.metadata.uid}`,
        {
          name: route.name,
          ...(def.group ? { group: def.group } : {}),
          kind: def.resource,
        },
      );
    }
    if (preconditions.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
        {
          name: route.name,
          ...(def.group ? { group: def.group } : {}),
          kind: def.resource,
        },
      );
    }
    const graceText = query.get('gracePeriodSeconds');
    const grace = options.gracePeriodSeconds ?? (graceText !== null ? Number(graceText) : undefined);
    if (def.resource === 'pods') return deletePod(current, 'delete', grace);
    bucket(def.group, def.resource).delete(keyOf(current.metadata.namespace, current.metadata.name));
    if (def.resource === 'poddisruptionbudgets')
      pdbExpected.delete(keyOf(current.metadata.namespace, current.metadata.name));
    return present(def, current);
  }

  function evict(route: Route, body: unknown): KubeObject {
    const name = route.name!;
    const namespace = route.namespace!;
    const eviction = body as KubeObject;
    if (
      !eviction ||
      typeof eviction !== 'object' ||
      eviction.kind !== 'Eviction' ||
      !['policy/v1', 'policy/v1beta1'].includes(eviction.apiVersion)
    ) {
      throw new ApiError(
        400,
        'BadRequest',
        `the body of the request was in an unknown format - expected an Eviction of policy/v1 or policy/v1beta1`,
      );
    }
    if (eviction.metadata?.name !== name) {
      throw new ApiError(400, 'BadRequest', `name in URL does not match name in Eviction object`);
    }
    if (eviction.metadata?.namespace !== undefined && eviction.metadata.namespace !== namespace) {
      throw new ApiError(
        400,
        'BadRequest',
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    const pod = getExisting(route.def, namespace, name);
    const options = eviction.deleteOptions ?? {};
    const grace: number | undefined = options.gracePeriodSeconds ?? undefined;
    const success = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
    const phase = pod.status?.phase;
    if (
      pod.metadata.deletionTimestamp ||
      phase === 'Succeeded' ||
      phase === 'Failed' ||
      phase === 'Pending'
    ) {
      deletePod(pod, 'eviction', grace);
      return success;
    }
    const pdbs = [...bucket('policy', 'poddisruptionbudgets').values()].filter(
      (pdb) =>
        pdb.metadata.namespace === namespace &&
        matchesLabelSelector(pdb.spec?.selector, pod.metadata.labels ?? {}),
    );
    if (pdbs.length > 1) {
      throw new ApiError(
        500,
        'InternalError',
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      );
    }
    const pdb = pdbs[0];
    if (pdb) {
      refreshPdbStatus(pdb);
      const status = pdb.status;
      const healthy = podReady(pod);
      const alwaysAllowUnhealthy = pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow';
      const allowed = healthy
        ? status.disruptionsAllowed > 0
        : alwaysAllowUnhealthy || status.currentHealthy >= status.desiredHealthy;
      if (!allowed) {
        throw new ApiError(
          429,
          'TooManyRequests',
          "Cannot evict pod as it would violate the pod's disruption budget.",
          {
            causes: [
              {
                reason: 'DisruptionBudget',
                message: `The disruption budget ${pdb.metadata.name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
              },
            ],
          },
        );
      }
      pdb.status.disruptedPods = { ...(pdb.status.disruptedPods ?? {}), [name]: timestamp() };
    }
    deletePod(pod, 'eviction', grace);
    return success;
  }

  async function readBody(request: IncomingMessage): Promise<{ raw: string; parsed: unknown }> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (raw === '') return { raw, parsed: undefined };
    try {
      return { raw, parsed: JSON.parse(raw) };
    } catch {
      throw new ApiError(400, 'BadRequest', `the body of the request was in an unknown format: invalid JSON`);
    }
  }

  /** Waits `ms` (or until the double closes); false when the client closed the connection meanwhile. */
  function held(ms: number, response: ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (answer: boolean) => {
        clearTimeout(timer);
        timers.delete(timer);
        response.off('close', onClose);
        resolve(answer);
      };
      const onClose = () => done(false);
      const timer = setTimeout(() => done(!response.destroyed), ms);
      timers.add(timer);
      response.on('close', onClose);
    });
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'https://127.0.0.1');
    const method = request.method ?? 'GET';
    const contentType = request.headers['content-type']?.split(';')[0]?.trim();
    const entry: RequestLogEntry = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType,
      body: undefined,
      user: undefined,
      verb: undefined,
      group: undefined,
      resource: undefined,
      namespace: undefined,
      name: undefined,
      status: 0,
      reason: undefined,
    };
    let status = 200;
    let payload: unknown;
    try {
      const { parsed } = await readBody(request);
      entry.body = parsed;
      const header = request.headers.authorization ?? '';
      const token = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
      const grant = token !== undefined ? tokens.get(token) : undefined;
      if (!grant) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      entry.user = grant.user;
      const fault = faults.find(
        (f) =>
          f.left > 0 &&
          (f.method === undefined || f.method === method) &&
          (typeof f.path === 'string' ? url.pathname.includes(f.path) : f.path.test(url.pathname)),
      );
      if (fault) {
        fault.left--;
        if (fault.delayMs !== undefined && !(await held(fault.delayMs, response))) {
          entry.reason = 'ClientClosedRequest';
          log.push(entry);
          return;
        }
        if (fault.code !== undefined) {
          throw new ApiError(fault.code, fault.reason ?? 'InternalError', fault.message ?? 'injected fault');
        }
      }
      const segments = url.pathname.split('/').filter(Boolean);
      const path = url.pathname.replace(/\/+$/, '');
      if (method === 'GET' && (path === '/version' || path === '/version/')) {
        payload = SERVER_VERSION;
      } else if (method === 'GET' && path === '/api') {
        payload = coreVersions(`127.0.0.1:${port}`);
      } else if (method === 'GET' && path === '/apis') {
        payload = apiGroupList();
      } else if (method === 'GET' && segments[0] === 'apis' && segments.length === 2) {
        if (!groupNames().includes(segments[1]!))
          throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        payload = apiGroup(segments[1]!);
      } else if (
        method === 'GET' &&
        ((segments[0] === 'api' && segments.length === 2) ||
          (segments[0] === 'apis' && segments.length === 3))
      ) {
        const doc =
          segments[0] === 'api' ? resourceList('', segments[1]!) : resourceList(segments[1]!, segments[2]!);
        if (!doc) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        payload = doc;
      } else {
        const route = segments[0] === 'api' || segments[0] === 'apis' ? parseRoute(segments) : undefined;
        if (!route) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        const { def, namespace, name, subresource } = route;
        const collection = name === undefined;
        const watching = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
        const verbByMethod: Record<string, string> = collection
          ? { GET: watching ? 'watch' : 'list', POST: 'create', DELETE: 'deletecollection' }
          : { GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete', POST: 'create' };
        const verb = verbByMethod[method];
        if (!verb || (subresource === undefined && !collection && method === 'POST')) {
          throw new ApiError(
            405,
            'MethodNotAllowed',
            `the server does not allow this method on the requested resource`,
          );
        }
        const resource = subresource ? `${def.resource}/${subresource}` : def.resource;
        Object.assign(entry, { verb, group: def.group, resource, namespace, name });
        authorize(grant, verb, def.group, resource, namespace, name);
        const sub = subresource ? def.subresources[subresource]! : undefined;
        if (sub && !sub.verbs.includes(verb)) {
          throw new ApiError(
            405,
            'MethodNotAllowed',
            'the server does not allow this method on the requested resource',
          );
        }
        if (verb === 'watch') {
          throw new ApiError(
            405,
            'MethodNotAllowed',
            'watch is not implemented by the Kubernetes test double',
          );
        }
        if (def.namespaced && !collection && namespace === undefined) {
          throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        }
        if (verb === 'list') payload = list(def, namespace, url.searchParams);
        else if (verb === 'get') {
          if (def.resource === 'poddisruptionbudgets') refreshAllPdbs();
          payload = present(def, getExisting(def, namespace, name!));
        } else if (verb === 'create' && subresource === 'eviction') {
          payload = evict(route, entry.body);
          status = 201;
        } else if (verb === 'create') {
          if (def.namespaced && namespace === undefined) {
            throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
          }
          payload = create(def, namespace, entry.body as KubeObject);
          status = 201;
        } else if (verb === 'patch') {
          payload = patch(route, contentType ?? '', entry.body);
        } else if (verb === 'update') {
          const current = getExisting(def, namespace, name!);
          checkBodyIdentity(def, entry.body as KubeObject, namespace, name);
          let next = clone(entry.body as KubeObject);
          if (def.group === 'events.k8s.io') next = eventFromV1(next);
          payload = write(route, current, next);
        } else if (verb === 'delete') {
          payload = remove(route, url.searchParams, entry.body);
        } else {
          throw new ApiError(
            405,
            'MethodNotAllowed',
            'the server does not allow this method on the requested resource',
          );
        }
      }
    } catch (error) {
      if (error instanceof ApiError) {
        status = error.code;
        payload = statusBody(error.code, error.reason, error.message, error.details);
        entry.reason = error.reason;
      } else {
        status = 500;
        payload = statusBody(500, 'InternalError', `Internal error occurred: ${(error as Error).message}`);
        entry.reason = 'InternalError';
      }
    }
    entry.status = status;
    log.push(entry);
    const text = JSON.stringify(payload);
    response.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-cache, private',
      'audit-id': randomUUID(),
    });
    response.end(text);
    for (const listener of listeners) {
      try {
        listener(entry);
      } catch {
        // a test listener's failure must not break the server
      }
    }
  }

  for (const node of options.nodes ?? []) seed('', 'nodes', node);
  for (const ds of options.daemonSets ?? []) seed('apps', 'daemonsets', ds);
  for (const pod of options.pods ?? []) seed('', 'pods', pod);
  for (const pdb of options.podDisruptionBudgets ?? []) seed('policy', 'poddisruptionbudgets', pdb);

  const server: Server = createServer(
    { key: certificate.key, cert: certificate.cert },
    (request, response) => {
      handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify(statusBody(500, 'InternalError', String(error))));
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;

  const double: KubernetesDouble = {
    url,
    ca: certificate.cert,
    caPath: certificate.certPath,
    adminToken,
    node: (name) => {
      const found = bucket('', 'nodes').get(keyOf(undefined, name));
      return found ? clone(found) : undefined;
    },
    nodes: () => [...bucket('', 'nodes').values()].map(clone),
    pod: (namespace, name) => {
      const found = bucket('', 'pods').get(keyOf(namespace, name));
      return found ? clone(found) : undefined;
    },
    pods: (filter = {}) =>
      [...bucket('', 'pods').values()]
        .filter(
          (p) =>
            (filter.nodeName === undefined || p.spec?.nodeName === filter.nodeName) &&
            (filter.namespace === undefined || p.metadata.namespace === filter.namespace),
        )
        .map(clone),
    podDisruptionBudget: (namespace, name) => {
      const found = bucket('policy', 'poddisruptionbudgets').get(keyOf(namespace, name));
      if (!found) return undefined;
      refreshPdbStatus(found);
      return clone(found);
    },
    events: (namespace) =>
      [...bucket('', 'events').values()]
        .filter((e) => namespace === undefined || e.metadata.namespace === namespace)
        .map(clone),
    deletedPods: () => deletions.map((d) => ({ ...d })),
    requests: () => log.map((e) => ({ ...e })),
    clearRequests: () => {
      log.length = 0;
    },
    onRequest: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    addNode: (node) => seed('', 'nodes', node),
    addPod: (pod) => {
      const added = seed('', 'pods', pod);
      refreshAllPdbs();
      return added;
    },
    removePod: (namespace, name) => {
      const removed = bucket('', 'pods').delete(keyOf(namespace, name));
      refreshAllPdbs();
      return removed;
    },
    removeFinalizers: (namespace, name) => {
      const pod = bucket('', 'pods').get(keyOf(namespace, name));
      if (!pod) throw new Error(`no pod ${namespace}/${name} in the double`);
      delete pod.metadata.finalizers;
      pod.metadata.resourceVersion = nextVersion();
      removeIfFinished(keyOf(namespace, name));
    },
    addDaemonSet: (ds) => seed('apps', 'daemonsets', ds),
    addPodDisruptionBudget: (pdb) => seed('policy', 'poddisruptionbudgets', pdb),
    updatePodDisruptionBudget: (namespace, name, mutate) => {
      const pdb = bucket('policy', 'poddisruptionbudgets').get(keyOf(namespace, name));
      if (!pdb) throw new Error(`no PodDisruptionBudget ${namespace}/${name} in the double`);
      mutate(pdb);
      pdb.metadata.generation = (pdb.metadata.generation ?? 1) + 1;
      pdb.metadata.resourceVersion = nextVersion();
      refreshPdbStatus(pdb);
      return clone(pdb);
    },
    removePodDisruptionBudget: (namespace, name) =>
      bucket('policy', 'poddisruptionbudgets').delete(keyOf(namespace, name)),
    setToken: (token, grant) => {
      tokens.set(token, grant);
    },
    injectFault: (fault) => {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(certDir, { recursive: true, force: true });
    },
  };
  return double;
}

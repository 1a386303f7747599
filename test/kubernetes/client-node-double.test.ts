/**
 * The Kubernetes double against the second real client, @kubernetes/client-node (the forwarder's own client):
 * the calls node actions make — read and merge-patch the node with a resourceVersion precondition, strategic
 * patch of nodes/status conditions, pods on the node, eviction with a blocking PDB, Events in core/v1 and
 * events.k8s.io/v1 — with the ServiceAccount's permissions (REQUIRED_PERMISSIONS) and nothing more.
 */
import { join } from 'node:path';
import {
  ApiException,
  CoreV1Api,
  EventsV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REQUIRED_PERMISSIONS } from '../../src/kubernetes/rbac.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  pdbFixture,
  podFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../support/kubernetes-double/index.ts';
import { makeTempDir } from '../support/tmp.ts';

const NODE = 'aks-nodepool1-12345678-vmss000000';
const USER = 'system:serviceaccount:scheduled-events:scheduled-events-forwarder';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

let temp: ReturnType<typeof makeTempDir>;
let k8s: KubernetesDouble;
let core: CoreV1Api;
let events: EventsV1Api;

beforeAll(() => {
  temp = makeTempDir('sef-client-node-');
});
afterAll(() => temp?.cleanup());
beforeEach(async () => {
  k8s = await startKubernetesDouble({
    nodes: [nodeFixture(NODE)],
    pods: [
      podFixture({
        name: 'web-a',
        nodeName: NODE,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web' },
      }),
      podFixture({
        name: 'web-b',
        nodeName: 'other',
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web' },
      }),
    ],
    podDisruptionBudgets: [pdbFixture('web', { matchLabels: { app: 'web' }, maxUnavailable: 0 })],
    // The forwarder's permissions, plus what this test needs to prove more of the double (get one pod,
    // events.k8s.io/v1): the RBAC test below uses REQUIRED_PERMISSIONS alone.
    tokens: {
      forwarder: {
        user: USER,
        permissions: [
          ...REQUIRED_PERMISSIONS,
          { verb: 'get', group: '', resource: 'pods' },
          { verb: 'create', group: 'events.k8s.io', resource: 'events' },
          { verb: 'list', group: 'events.k8s.io', resource: 'events' },
        ],
      },
      exact: { user: USER, permissions: REQUIRED_PERMISSIONS },
    },
  });
  const kc = new KubeConfig();
  kc.loadFromFile(writeKubeconfig(join(temp.dir, 'kubeconfig'), k8s, 'forwarder'));
  core = kc.makeApiClient(CoreV1Api);
  events = kc.makeApiClient(EventsV1Api);
});
afterEach(async () => {
  await k8s.close();
});

async function apiError(promise: Promise<unknown>): Promise<ApiException<string>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiException) return error as ApiException<string>;
    throw error;
  }
  throw new Error('expected the call to fail');
}

const status = (error: ApiException<string>) =>
  (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as Record<string, unknown>;

describe('@kubernetes/client-node against the Kubernetes double', () => {
  it('reads the node and merge-patches it under a resourceVersion precondition (stale → 409 Status)', async () => {
    const node = await core.readNode({ name: NODE });
    expect(node.metadata?.labels?.['kubernetes.io/os']).toBe('linux');
    const rv = node.metadata!.resourceVersion!;
    const patched = await core.patchNode(
      {
        name: NODE,
        body: { metadata: { resourceVersion: rv, annotations: { a: '1' } }, spec: { unschedulable: true } },
      },
      merge,
    );
    expect(patched.spec?.unschedulable).toBe(true);
    expect(Number(patched.metadata?.resourceVersion)).toBeGreaterThan(Number(rv));
    const conflict = await apiError(
      core.patchNode(
        { name: NODE, body: { metadata: { resourceVersion: rv }, spec: { unschedulable: false } } },
        merge,
      ),
    );
    expect(conflict.code).toBe(409);
    expect(status(conflict)).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Conflict',
      code: 409,
      details: { name: NODE, kind: 'nodes' },
    });
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
    expect(k8s.node(NODE)!.metadata.annotations).toMatchObject({
      a: '1',
      'node.alpha.kubernetes.io/ttl': '0',
    });
  });

  it('strategic-merge-patches nodes/status: conditions merge by type, spec is left alone', async () => {
    const condition = {
      type: 'VMEventScheduled',
      status: 'True',
      reason: 'Reboot',
      message: 'Reboot scheduled',
      lastTransitionTime: '2026-11-26T12:00:00Z',
      lastHeartbeatTime: '2026-11-26T12:00:00Z',
    };
    await core.patchNodeStatus(
      { name: NODE, body: { status: { conditions: [condition] }, spec: { unschedulable: true } } },
      strategic,
    );
    let node = k8s.node(NODE)!;
    expect(node.status.conditions.map((c: { type: string }) => c.type)).toEqual([
      'MemoryPressure',
      'Ready',
      'VMEventScheduled',
    ]);
    expect(node.spec.unschedulable).toBeUndefined();
    await core.patchNodeStatus(
      { name: NODE, body: { status: { conditions: [{ type: 'VMEventScheduled', status: 'False' }] } } },
      strategic,
    );
    node = k8s.node(NODE)!;
    expect(node.status.conditions).toHaveLength(3);
    expect(node.status.conditions[2]).toMatchObject({
      type: 'VMEventScheduled',
      status: 'False',
      reason: 'Reboot',
    });
    expect(
      k8s
        .requests()
        .filter((r) => r.resource === 'nodes/status')
        .map((r) => r.verb),
    ).toEqual(['patch', 'patch']);
  });

  it("lists the node's pods and evicts them; a PDB refusal is a 429 with the DisruptionBudget cause", async () => {
    const pods = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual(['web-a']);
    const eviction = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'web-a', namespace: 'default' },
      deleteOptions: { gracePeriodSeconds: 20 },
    };
    const refused = await apiError(
      core.createNamespacedPodEviction({ name: 'web-a', namespace: 'default', body: eviction }),
    );
    expect(refused.code).toBe(429);
    expect(status(refused)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      reason: 'TooManyRequests',
      details: {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: 'The disruption budget web needs 2 healthy pods and has 2 currently',
          },
        ],
      },
      code: 429,
    });
    expect(k8s.pod('default', 'web-a')).toBeDefined();
    k8s.updatePodDisruptionBudget('default', 'web', (pdb) => {
      pdb.spec.maxUnavailable = 1;
    });
    await core.createNamespacedPodEviction({ name: 'web-a', namespace: 'default', body: eviction });
    expect(k8s.pod('default', 'web-a')).toBeUndefined();
    expect(k8s.deletedPods()).toEqual([
      { namespace: 'default', name: 'web-a', via: 'eviction', gracePeriodSeconds: 20 },
    ]);
    const gone = await apiError(core.readNamespacedPod({ name: 'web-a', namespace: 'default' }));
    expect(gone.code).toBe(404);
    expect(status(gone)).toMatchObject({ reason: 'NotFound', message: 'pods "web-a" not found' });
  });

  it('creates Events in core/v1 and events.k8s.io/v1 (one store, converted views)', async () => {
    await core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { generateName: `${NODE}.` },
        involvedObject: { kind: 'Node', name: NODE, apiVersion: 'v1' },
        reason: 'ScheduledEvent',
        message: 'Reboot scheduled',
        type: 'Normal',
        source: { component: 'scheduled-events-forwarder', host: NODE },
      },
    });
    await events.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: `${NODE}.v1` },
        eventTime: new Date('2026-11-26T12:00:00.000Z'),
        reportingController: 'scheduled-events-forwarder',
        reportingInstance: NODE,
        action: 'Drain',
        reason: 'NodeDrained',
        note: 'drained',
        type: 'Normal',
        regarding: { kind: 'Node', name: NODE, apiVersion: 'v1' },
      },
    });
    const stored = k8s.events('default');
    expect(stored).toHaveLength(2);
    expect(stored[0]!.metadata.name).toMatch(new RegExp(`^${NODE.replaceAll('.', '\\.')}\\.[a-z0-9]{5}$`));
    expect(stored[1]).toMatchObject({
      message: 'drained',
      reportingComponent: 'scheduled-events-forwarder',
      action: 'Drain',
    });
    // events.k8s.io/v1 validation: reportingController, reportingInstance, action are required.
    const invalid = await apiError(
      events.createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: { name: 'bad' },
          eventTime: new Date(),
          reason: 'X',
          type: 'Normal',
          regarding: { kind: 'Node', name: NODE },
        },
      }),
    );
    expect(invalid.code).toBe(422);
    expect(status(invalid)).toMatchObject({ reason: 'Invalid' });
    expect(String(status(invalid).message)).toContain('reportingController: Required value');
  });

  it('the ServiceAccount permissions stop at REQUIRED_PERMISSIONS: anything else is 403 naming verb and resource', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(writeKubeconfig(join(temp.dir, 'kubeconfig-exact'), k8s, 'exact'));
    const core = kc.makeApiClient(CoreV1Api);
    const denied = await apiError(core.deleteNode({ name: NODE }));
    expect(denied.code).toBe(403);
    expect(status(denied)).toMatchObject({
      reason: 'Forbidden',
      message: `nodes "${NODE}" is forbidden: User "${USER}" cannot delete resource "nodes" in API group "" at the cluster scope`,
      details: { name: NODE, kind: 'nodes' },
    });
    const list = await apiError(core.listNamespacedEvent({ namespace: 'default' }));
    expect(status(list).message).toBe(
      `events is forbidden: User "${USER}" cannot list resource "events" in API group "" in the namespace "default"`,
    );
    expect(k8s.node(NODE)).toBeDefined();
  });
});

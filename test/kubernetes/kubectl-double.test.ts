/**
 * Proves the Kubernetes API test double (test/support/kubernetes-double) faithful with a real client: Debian's
 * kubectl runs cordon, taint, drain (with a PodDisruptionBudget that blocks the first eviction), uncordon, get,
 * create/get events, replace with a stale resourceVersion, and meets 401/403 — and after each command the
 * double holds what a real API server would.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nodeEvent } from '../../src/kubernetes/node-actions.ts';
import { REQUIRED_PERMISSIONS } from '../../src/kubernetes/rbac.ts';
import {
  daemonSetFixture,
  type KubernetesDouble,
  nodeFixture,
  pdbFixture,
  podFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../support/kubernetes-double/index.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { type KubectlResult, kubectl, requireKubectl } from './kubectl.ts';

const NODE = 'aks-nodepool1-12345678-vmss000000';
const OTHER_NODE = 'aks-nodepool1-12345678-vmss000001';
const FORWARDER_USER = 'system:serviceaccount:scheduled-events:scheduled-events-forwarder';

let temp: ReturnType<typeof makeTempDir>;
let k8s: KubernetesDouble;
let kubeconfig: string;

beforeAll(() => {
  const version = requireKubectl();
  console.log(`kubectl ${version}`);
  temp = makeTempDir('sef-kubectl-');
});
afterAll(() => temp?.cleanup());

beforeEach(async () => {
  const proxy = daemonSetFixture('kube-proxy');
  k8s = await startKubernetesDouble({
    nodes: [nodeFixture(NODE), nodeFixture(OTHER_NODE)],
    daemonSets: [proxy],
    pods: [
      podFixture({
        name: 'kube-proxy-x7k2p',
        namespace: 'kube-system',
        nodeName: NODE,
        labels: { app: 'kube-proxy' },
        owner: { kind: 'DaemonSet', name: 'kube-proxy', uid: proxy.metadata.uid },
      }),
      podFixture({
        name: `kube-apiserver-proxy-${NODE}`,
        namespace: 'kube-system',
        nodeName: NODE,
        mirror: true,
      }),
      podFixture({
        name: 'web-5d9c7-abcde',
        nodeName: NODE,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web-5d9c7' },
        emptyDir: true,
      }),
      podFixture({
        name: 'web-5d9c7-fghij',
        nodeName: OTHER_NODE,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web-5d9c7' },
      }),
    ],
    tokens: {
      'admin-token': { user: 'kubernetes-admin', permissions: '*' },
      'forwarder-token': { user: FORWARDER_USER, permissions: REQUIRED_PERMISSIONS },
      'reader-token': { user: 'reader', permissions: [{ verb: 'get', group: '', resource: 'nodes' }] },
    },
  });
  kubeconfig = writeKubeconfig(join(temp.dir, `kubeconfig-${Date.now()}`), k8s, 'admin-token');
});
afterEach(async () => {
  await k8s.close();
});

function run(args: string[], token?: string, stdin?: string): Promise<KubectlResult> {
  const config =
    token === undefined ? kubeconfig : writeKubeconfig(join(temp.dir, `kubeconfig-${token}`), k8s, token);
  return kubectl(args, { kubeconfig: config, cacheDir: join(temp.dir, 'cache'), stdin, timeoutMs: 90_000 });
}

function expectOk(result: KubectlResult): void {
  expect(result, `kubectl failed:\n${result.stderr}`).toMatchObject({ code: 0 });
}

describe('kubectl against the Kubernetes double', () => {
  it('cordon sets spec.unschedulable with a strategic merge patch and bumps resourceVersion', async () => {
    const before = k8s.node(NODE)!.metadata.resourceVersion;
    const result = await run(['cordon', NODE]);
    expectOk(result);
    expect(result.stdout).toContain(`node/${NODE} cordoned`);
    const node = k8s.node(NODE)!;
    expect(node.spec.unschedulable).toBe(true);
    expect(Number(node.metadata.resourceVersion)).toBeGreaterThan(Number(before));
    // Everything else is untouched: labels, status, the other node.
    expect(node.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
    expect(k8s.node(OTHER_NODE)!.spec.unschedulable).toBeUndefined();
    const patch = k8s.requests().find((r) => r.method === 'PATCH');
    expect(patch).toMatchObject({
      path: `/api/v1/nodes/${NODE}`,
      contentType: 'application/strategic-merge-patch+json',
      verb: 'patch',
      resource: 'nodes',
      body: { spec: { unschedulable: true } },
      status: 200,
    });
    // Idempotent: a second cordon sends nothing.
    const again = await run(['cordon', NODE]);
    expectOk(again);
    expect(again.stdout).toContain('already cordoned');
  });

  it('taint adds and removes taints (the strategic patch replaces the whole list)', async () => {
    expectOk(await run(['taint', 'nodes', NODE, 'scheduled-events/reboot=pending:NoSchedule']));
    expect(k8s.node(NODE)!.spec.taints).toEqual([
      { key: 'scheduled-events/reboot', value: 'pending', effect: 'NoSchedule' },
    ]);
    expectOk(await run(['taint', 'nodes', NODE, 'maintenance=true:PreferNoSchedule']));
    expect(k8s.node(NODE)!.spec.taints).toHaveLength(2);
    expect(k8s.node(NODE)!.spec.taints).toEqual(
      expect.arrayContaining([
        { key: 'scheduled-events/reboot', value: 'pending', effect: 'NoSchedule' },
        { key: 'maintenance', value: 'true', effect: 'PreferNoSchedule' },
      ]),
    );
    expectOk(await run(['taint', 'nodes', NODE, 'scheduled-events/reboot:NoSchedule-']));
    expect(k8s.node(NODE)!.spec.taints).toEqual([
      { key: 'maintenance', value: 'true', effect: 'PreferNoSchedule' },
    ]);
    // An existing key+effect without --overwrite is refused by kubectl itself; with it, the value changes.
    expectOk(await run(['taint', 'nodes', NODE, 'maintenance=false:PreferNoSchedule', '--overwrite']));
    expect(k8s.node(NODE)!.spec.taints).toEqual([
      { key: 'maintenance', value: 'false', effect: 'PreferNoSchedule' },
    ]);
    const patches = k8s.requests().filter((r) => r.method === 'PATCH');
    expect(patches).toHaveLength(4);
    for (const p of patches) expect(p.contentType).toBe('application/strategic-merge-patch+json');
  });

  it('drain evicts through the eviction API, retries on the PDB 429, keeps DaemonSet and mirror pods', async () => {
    // minAvailable 2 over the two healthy web pods: no disruption allowed until the test releases the budget.
    k8s.addPodDisruptionBudget(pdbFixture('web', { matchLabels: { app: 'web' }, minAvailable: 2 }));
    expect(k8s.podDisruptionBudget('default', 'web')!.status).toMatchObject({
      currentHealthy: 2,
      desiredHealthy: 2,
      disruptionsAllowed: 0,
      expectedPods: 2,
    });
    let released = false;
    k8s.onRequest((entry) => {
      if (!released && entry.resource === 'pods/eviction' && entry.status === 429) {
        released = true;
        k8s.updatePodDisruptionBudget('default', 'web', (pdb) => {
          pdb.spec.minAvailable = 1;
        });
      }
    });
    const result = await run([
      'drain',
      NODE,
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--timeout=60s',
    ]);
    expectOk(result);
    // kubectl 1.20 (Debian bookworm) ends with "node/NAME evicted", later versions with "node/NAME drained".
    expect(result.stdout).toMatch(new RegExp(`node/${NODE} (drained|evicted)`));
    expect(result.stderr).toContain("Cannot evict pod as it would violate the pod's disruption budget.");
    expect(result.stderr).toMatch(/ignoring DaemonSet-managed Pods: kube-system\/kube-proxy-x7k2p/);

    const evictions = k8s.requests().filter((r) => r.resource === 'pods/eviction');
    expect(evictions.map((e) => e.status)).toEqual([429, 201]);
    expect(evictions[0]).toMatchObject({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods/web-5d9c7-abcde/eviction',
      body: { kind: 'Eviction', metadata: { name: 'web-5d9c7-abcde', namespace: 'default' } },
    });
    expect(['policy/v1', 'policy/v1beta1']).toContain(
      (evictions[0]!.body as { apiVersion: string }).apiVersion,
    );
    // The node is cordoned, the evicted pod is gone, the DaemonSet and mirror pods stay, the other node is untouched.
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
    expect(
      k8s
        .pods({ nodeName: NODE })
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
        .sort(),
    ).toEqual([`kube-system/kube-apiserver-proxy-${NODE}`, 'kube-system/kube-proxy-x7k2p']);
    expect(k8s.pod('default', 'web-5d9c7-fghij')).toBeDefined();
    expect(k8s.deletedPods()).toEqual([
      { namespace: 'default', name: 'web-5d9c7-abcde', via: 'eviction', gracePeriodSeconds: undefined },
    ]);
    expect(k8s.podDisruptionBudget('default', 'web')!.status).toMatchObject({
      currentHealthy: 1,
      desiredHealthy: 1,
      disruptionsAllowed: 0,
    });
    // kubectl listed the node's pods with a field selector and checked the DaemonSet behind the DaemonSet pod.
    const podList = k8s.requests().find((r) => r.verb === 'list' && r.resource === 'pods');
    expect(podList?.query.fieldSelector).toBe(`spec.nodeName=${NODE}`);
    expect(
      k8s.requests().some((r) => r.verb === 'get' && r.resource === 'daemonsets' && r.name === 'kube-proxy'),
    ).toBe(true);

    const uncordon = await run(['uncordon', NODE]);
    expectOk(uncordon);
    expect(uncordon.stdout).toContain(`node/${NODE} uncordoned`);
    expect(k8s.node(NODE)!.spec.unschedulable).toBeUndefined();
  }, 120_000);

  it('drain without --ignore-daemonsets refuses, like against a real cluster', async () => {
    const result = await run(['drain', NODE, '--delete-emptydir-data', '--timeout=20s']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('cannot delete DaemonSet-managed Pods');
    expect(k8s.pods({ nodeName: NODE })).toHaveLength(3);
  });

  it('get nodes -o json returns the stored nodes', async () => {
    expectOk(await run(['cordon', NODE]));
    const result = await run(['get', 'nodes', '-o', 'json']);
    expectOk(result);
    const list = JSON.parse(result.stdout) as { kind: string; items: { metadata: { name: string } }[] };
    expect(list.kind).toBe('List');
    expect(list.items).toEqual(k8s.nodes().sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)));
    const one = await run([
      'get',
      'node',
      NODE,
      '-o',
      'jsonpath={.spec.unschedulable} {.metadata.resourceVersion}',
    ]);
    expectOk(one);
    expect(one.stdout).toBe(`true ${k8s.node(NODE)!.metadata.resourceVersion}`);
    const missing = await run(['get', 'node', 'no-such-node']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('Error from server (NotFound): nodes "no-such-node" not found');
    const pods = await run([
      'get',
      'pods',
      '-A',
      '--field-selector',
      `spec.nodeName=${OTHER_NODE}`,
      '-o',
      'name',
    ]);
    expectOk(pods);
    expect(pods.stdout.trim()).toBe('pod/web-5d9c7-fghij');
    const labelled = await run(['get', 'pods', '-A', '-l', 'app in (kube-proxy)', '-o', 'name']);
    expectOk(labelled);
    expect(labelled.stdout.trim()).toBe('pod/kube-proxy-x7k2p');
  });

  it('replace with a stale resourceVersion is a 409 Conflict', async () => {
    const stale = await run(['get', 'node', NODE, '-o', 'json']);
    expectOk(stale);
    expectOk(await run(['cordon', NODE]));
    const replace = await run(['replace', '--validate=false', '-f', '-'], undefined, stale.stdout);
    expect(replace.code).not.toBe(0);
    expect(replace.stderr).toContain(
      `Operation cannot be fulfilled on nodes "${NODE}": the object has been modified; please apply your changes to the latest version and try again`,
    );
    expect(k8s.requests().at(-1)).toMatchObject({ method: 'PUT', status: 409, reason: 'Conflict' });
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
  });

  it('label, annotate, merge patch and JSON patch (resourceVersion preconditions → 409)', async () => {
    expectOk(
      await run(['label', 'node', NODE, 'node.kubernetes.io/exclude-from-external-load-balancers=true']),
    );
    expectOk(await run(['annotate', 'node', NODE, 'scheduled-events-forwarder/actions={"cordoned":true}']));
    let node = k8s.node(NODE)!;
    expect(node.metadata.labels['node.kubernetes.io/exclude-from-external-load-balancers']).toBe('true');
    expect(node.metadata.labels['kubernetes.io/hostname']).toBe(NODE); // other labels kept (maps merge)
    expect(node.metadata.annotations['scheduled-events-forwarder/actions']).toBe('{"cordoned":true}');
    expectOk(await run(['label', 'node', NODE, 'node.kubernetes.io/exclude-from-external-load-balancers-']));
    expect(k8s.node(NODE)!.metadata.labels).not.toHaveProperty(
      'node.kubernetes.io/exclude-from-external-load-balancers',
    );

    // JSON merge patch guarded by the current resourceVersion succeeds; a stale one is a 409 Conflict.
    node = k8s.node(NODE)!;
    const current = node.metadata.resourceVersion;
    const guarded = (rv: string, unschedulable: boolean) =>
      JSON.stringify({ metadata: { resourceVersion: rv }, spec: { unschedulable } });
    expectOk(await run(['patch', 'node', NODE, '--type', 'merge', '-p', guarded(current, true)]));
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
    const stale = await run(['patch', 'node', NODE, '--type', 'merge', '-p', guarded(current, false)]);
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toContain(
      `Operation cannot be fulfilled on nodes "${NODE}": the object has been modified`,
    );
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
    expect(
      k8s
        .requests()
        .filter((r) => r.method === 'PATCH')
        .map((r) => r.contentType),
    ).toContain('application/merge-patch+json');

    // JSON patch: add, and a failing test operation (422) that changes nothing.
    const add = [{ op: 'add', path: '/metadata/annotations/example.com~1note', value: 'x' }];
    expectOk(await run(['patch', 'node', NODE, '--type', 'json', '-p', JSON.stringify(add)]));
    expect(k8s.node(NODE)!.metadata.annotations['example.com/note']).toBe('x');
    const failing = [
      { op: 'test', path: '/spec/unschedulable', value: false },
      { op: 'remove', path: '/spec/unschedulable' },
    ];
    const test = await run(['patch', 'node', NODE, '--type', 'json', '-p', JSON.stringify(failing)]);
    expect(test.code).not.toBe(0);
    expect(k8s.requests().at(-1)).toMatchObject({ contentType: 'application/json-patch+json', status: 422 });
    expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);

    // Writes to the main resource ignore status (the API server keeps it for nodes/status).
    const statusThroughMain = JSON.stringify({
      status: { conditions: [{ type: 'Ready', status: 'False' }] },
    });
    expectOk(await run(['patch', 'node', NODE, '--type', 'merge', '-p', statusThroughMain]));
    expect(k8s.node(NODE)!.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe(
      'True',
    );
  });

  it('create and get events (core/v1 and events.k8s.io/v1 views of one store)', async () => {
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${NODE}.reboot-scheduled`, namespace: 'default' },
      involvedObject: { kind: 'Node', name: NODE, uid: k8s.node(NODE)!.metadata.uid, apiVersion: 'v1' },
      reason: 'ScheduledEventReboot',
      message: 'Azure scheduled a Reboot for 2026-11-26T13:00:00Z',
      type: 'Warning',
      source: { component: 'scheduled-events-forwarder', host: NODE },
      firstTimestamp: '2026-11-26T12:45:00Z',
      lastTimestamp: '2026-11-26T12:45:00Z',
      count: 1,
    };
    const created = await run(['create', '--validate=false', '-f', '-'], undefined, JSON.stringify(event));
    expectOk(created);
    expect(created.stdout).toContain(`event/${NODE}.reboot-scheduled created`);
    expect(k8s.events('default')).toHaveLength(1);
    expect(k8s.events('default')[0]).toMatchObject({
      reason: 'ScheduledEventReboot',
      involvedObject: { name: NODE },
    });

    const core = await run(['get', 'events', '-n', 'default', '-o', 'json']);
    expectOk(core);
    expect(JSON.parse(core.stdout).items[0]).toMatchObject({
      message: 'Azure scheduled a Reboot for 2026-11-26T13:00:00Z',
      involvedObject: { kind: 'Node', name: NODE },
    });
    const v1 = await run(['get', 'events.v1.events.k8s.io', '-n', 'default', '-o', 'json']);
    expectOk(v1);
    expect(JSON.parse(v1.stdout).items[0]).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      note: 'Azure scheduled a Reboot for 2026-11-26T13:00:00Z',
      regarding: { kind: 'Node', name: NODE },
      deprecatedSource: { component: 'scheduled-events-forwarder' },
      deprecatedCount: 1,
    });

    // A node's event outside the default namespace is invalid, as on a real API server.
    const wrong = await run(
      ['create', '--validate=false', '-f', '-'],
      undefined,
      JSON.stringify({ ...event, metadata: { name: 'elsewhere', namespace: 'kube-system' } }),
    );
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain(
      'is invalid: involvedObject.namespace: Invalid value: "": does not match event.namespace',
    );
  });

  it("the forwarder's node Event (eventTime, action, reportingInstance) is accepted in kube-system and default", async () => {
    for (const namespace of ['kube-system', 'default']) {
      const event = nodeEvent({
        node: NODE,
        namespace,
        reason: 'VMEventApproved',
        message:
          'Scheduled event approved (StartRequests POSTed): it may start now: Reboot E1 (NotBefore none)',
        type: 'Normal',
        nowIso: '2026-11-26T12:45:00.123Z',
        suffix: `e1.${namespace}`,
      });
      const created = await run(['create', '--validate=false', '-f', '-'], undefined, JSON.stringify(event));
      expectOk(created);
      const listed = await run(['get', 'events', '-n', namespace, '-o', 'json']);
      expectOk(listed);
      expect(JSON.parse(listed.stdout).items[0]).toMatchObject({
        reason: 'VMEventApproved',
        action: 'VMEventApproved',
        eventTime: '2026-11-26T12:45:00.123000Z',
        reportingComponent: 'scheduled-events-forwarder',
        involvedObject: { kind: 'Node', name: NODE },
      });
    }
  });

  it('an unknown token is 401 Unauthorized', async () => {
    const result = await run(['get', 'nodes'], 'not-a-token');
    expect(result.code).not.toBe(0);
    // kubectl >= 1.2x words the 401 as "the server has asked for the client to provide credentials".
    expect(result.stderr).toMatch(
      /You must be logged in to the server \((Unauthorized|the server has asked for the client to provide credentials)\)/,
    );
    expect(k8s.requests().every((r) => r.status === 401)).toBe(true);
  });

  it('a token without the verb is 403 Forbidden, naming verb, resource and user', async () => {
    const get = await run(['get', 'node', NODE, '-o', 'name'], 'reader-token');
    expectOk(get);
    // kubectl cordon prints the API error but (kubectl 1.32) still exits 0: the message and the state decide.
    const cordon = await run(['cordon', NODE], 'reader-token');
    expect(cordon.stderr).toContain(
      `nodes "${NODE}" is forbidden: User "reader" cannot patch resource "nodes" in API group "" at the cluster scope`,
    );
    expect(k8s.node(NODE)!.spec.unschedulable).toBeUndefined();
    const list = await run(['get', 'pods', '-A'], 'reader-token');
    expect(list.code).not.toBe(0);
    expect(list.stderr).toContain(
      'pods is forbidden: User "reader" cannot list resource "pods" in API group ""',
    );
  });

  it("the forwarder's ClusterRole permissions allow cordon/taint/uncordon but nothing more", async () => {
    expectOk(await run(['cordon', NODE], 'forwarder-token'));
    expectOk(
      await run(['taint', 'nodes', NODE, 'scheduled-events/freeze=true:NoSchedule'], 'forwarder-token'),
    );
    expectOk(await run(['uncordon', NODE], 'forwarder-token'));
    expect(k8s.node(NODE)!.spec).toMatchObject({
      taints: [{ key: 'scheduled-events/freeze', value: 'true', effect: 'NoSchedule' }],
    });
    const remove = await run(['delete', 'node', NODE], 'forwarder-token');
    expect(remove.code).not.toBe(0);
    expect(remove.stderr).toContain(
      `nodes "${NODE}" is forbidden: User "${FORWARDER_USER}" cannot delete resource "nodes" in API group "" at the cluster scope`,
    );
    expect(k8s.node(NODE)).toBeDefined();
  });

  it('a pod deleted with a grace period terminates, then disappears', async () => {
    await k8s.close();
    k8s = await startKubernetesDouble({
      nodes: [nodeFixture(NODE)],
      pods: [podFixture({ name: 'slow', nodeName: NODE })],
      podTerminationDelayMs: 1500,
      tokens: { 'admin-token': { user: 'kubernetes-admin', permissions: '*' } },
    });
    kubeconfig = writeKubeconfig(join(temp.dir, 'kubeconfig-slow'), k8s, 'admin-token');
    const result = await run(['delete', 'pod', 'slow', '--grace-period=5', '--wait=false']);
    expectOk(result);
    expect(k8s.pod('default', 'slow')!.metadata.deletionTimestamp).toBeDefined();
    expect(k8s.pod('default', 'slow')!.metadata.deletionGracePeriodSeconds).toBe(5);
    await waitFor(() => k8s.pod('default', 'slow') === undefined, 'the terminating pod to disappear', {
      timeoutMs: 10_000,
    });
    expect(k8s.deletedPods()).toEqual([
      { namespace: 'default', name: 'slow', via: 'delete', gracePeriodSeconds: 5 },
    ]);
  });

  it('a held (hung) request: kubectl --request-timeout gives up, the double sees the client go away and applies nothing', async () => {
    k8s.injectFault({ method: 'PATCH', path: `/nodes/${NODE}`, delayMs: 20_000 });
    const result = await run(['cordon', NODE, '--request-timeout=1s']);
    // (kubectl 1.32's cordon reports a failed patch on stderr but still exits 0; the timeout shows as either Go error.)
    expect(result.stderr).toMatch(
      /unable to cordon node .*(context deadline exceeded|Client.Timeout exceeded)/,
    );
    await waitFor(
      () => k8s.requests().some((r) => r.method === 'PATCH' && r.reason === 'ClientClosedRequest'),
      'the held PATCH abandoned by kubectl',
    );
    expect(k8s.node(NODE)!.spec.unschedulable).toBeUndefined();
  });

  it('a pod with a finalizer stays terminating after delete until the finalizer is patched away', async () => {
    k8s.addPod(podFixture({ name: 'guarded', nodeName: NODE, finalizers: ['example.com/cleanup'] }));
    expectOk(await run(['delete', 'pod', 'guarded', '--wait=false']));
    expect(k8s.pod('default', 'guarded')!.metadata.deletionTimestamp).toBeDefined();
    const listed = await run(['get', 'pod', 'guarded', '-o', 'jsonpath={.metadata.deletionTimestamp}']);
    expectOk(listed);
    expect(listed.stdout).not.toBe('');
    expectOk(
      await run(['patch', 'pod', 'guarded', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']),
    );
    expect(k8s.pod('default', 'guarded')).toBeUndefined();
    const gone = await run(['get', 'pod', 'guarded']);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('pods "guarded" not found');
  });
});

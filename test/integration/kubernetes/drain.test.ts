/**
 * #30 items 2 and 5: draining as kubectl drain does, within the hook's deadline. Real `run` children against the
 * IMDS simulator and the Kubernetes API double: no eviction ever asks for a 0-second grace period (a floor, and
 * the drain stops and names the pods left when less time remains); pods no controller manages are refused unless
 * `force`; evictions run in parallel, each with its own request timeout and its own PDB retries; pods that are
 * terminating are waited for.
 */
import { expect, it } from 'vitest';
import type { RecordedApproval } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  pdbFixture,
  podFixture,
  startKubernetesDouble,
} from '../../support/kubernetes-double/index.ts';
import {
  kubernetesRuns,
  type NodeHookSectionsOptions,
  nodeHookSections,
  recordIn,
} from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const OTHER = 'aks-nodepool1-1';
const VM = 'aks-nodepool1-0_0';
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-drain-', async () => {
  await sim?.close();
  await k8s?.close();
});

/** Starts the simulator and a forwarder draining NODE, injects a Reboot `id`; resolves with its approval. */
async function rebootWith(id: string, options: Omit<NodeHookSectionsOptions, 'nodeName'>) {
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const run = await runs.start(sim.url, (dir) => nodeHookSections(k8s!, dir, { nodeName: NODE, ...options }));
  sim.admin.injectEvent({ id, type: 'Reboot', resources: [VM], noticeSeconds: '15m' });
  const record = await waitFor(() => recordIn(run.out, id, 'approved'), 'the approved record');
  return { run, approval: record.data.approval as RecordedApproval };
}

const replicaSetPod = (name: string, over: Record<string, unknown> = {}) =>
  podFixture({ name, namespace: 'app', nodeName: NODE, owner: { kind: 'ReplicaSet', name: 'web' }, ...over });

/** The grace periods the forwarder asked for in its evictions of `pod`. */
const gracesAsked = (pod: string) =>
  k8s!
    .requests()
    .filter((r) => r.method === 'POST' && r.path.endsWith(`/pods/${pod}/eviction`))
    .map(
      (r) =>
        (r.body as { deleteOptions?: { gracePeriodSeconds?: number } }).deleteOptions?.gracePeriodSeconds,
    );

it('a budget-protected StatefulSet pod near the deadline: every eviction asks at least the floor, never 0; the drain stops naming the pod and its budget', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE), nodeFixture(OTHER)] });
  for (const [name, nodeName] of [
    ['db-0', NODE],
    ['db-1', OTHER],
  ] as const) {
    k8s.addPod(
      podFixture({
        name,
        namespace: 'app',
        nodeName,
        labels: { app: 'db' },
        owner: { kind: 'StatefulSet', name: 'db' },
        terminationGracePeriodSeconds: 30,
      }),
    );
  }
  k8s.addPodDisruptionBudget(
    pdbFixture('db-pdb', { namespace: 'app', matchLabels: { app: 'db' }, minAvailable: 2 }),
  );
  const { run, approval } = await rebootWith('E-FLOOR', {
    prepareTimeoutMs: 6000,
    actions: { drain: { minGracePeriodSeconds: 3, retryIntervalMs: 300 } },
  });
  expect(approval.posted).toBe(false);
  const [hook] = approval.hooks;
  expect(hook).toMatchObject({ name: 'node', ok: false });
  expect(hook!.detail).toContain('app/db-0: not evicted: it must be given 3 s to stop');
  expect(hook!.detail).toContain('minGracePeriodSeconds 3 s');
  expect(hook!.detail).toContain('The disruption budget db-pdb needs 2 healthy pods');
  // Retried while the budget refused it, each time with at least the floor; never 0 (nor 1 or 2).
  const graces = gracesAsked('db-0');
  expect(graces.length).toBeGreaterThanOrEqual(2);
  for (const grace of graces) expect(grace).toBeGreaterThanOrEqual(3);
  expect(k8s.pods({ nodeName: NODE }).map((p) => p.metadata.name)).toEqual(['db-0']);
  expect(sim!.admin.approvals()).toEqual([]);
  await waitFor(
    () =>
      k8s!.events().some((e) => e.reason === 'VMEventNodePrepareFailed' && e.message.includes('app/db-0')),
    'the prepare-failed node Event naming the pod',
  );
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

it('a pod no controller manages: the drain is refused naming it and nothing is evicted (kubectl drain without --force)', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(replicaSetPod('web-1'));
  k8s.addPod(podFixture({ name: 'debug-shell', namespace: 'default', nodeName: NODE }));
  const { run, approval } = await rebootWith('E-UNMANAGED', {});
  expect(approval).toMatchObject({ posted: false, hooks: [{ name: 'node', ok: false }] });
  expect(approval.hooks[0]!.detail).toContain(
    'drain refused, nothing evicted: default/debug-shell is not managed by a controller',
  );
  expect(approval.hooks[0]!.detail).toContain('kubernetes.actions.drain.force');
  expect(k8s.deletedPods()).toEqual([]);
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

it('with drain.force the unmanaged pod is evicted like the others', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(replicaSetPod('web-1'));
  k8s.addPod(podFixture({ name: 'debug-shell', namespace: 'default', nodeName: NODE }));
  const { run, approval } = await rebootWith('E-FORCE', { actions: { drain: { force: true } } });
  expect(approval).toMatchObject({ posted: true, hooks: [{ ok: true }] });
  expect(
    k8s
      .deletedPods()
      .map((d) => `${d.namespace}/${d.name} ${d.via}`)
      .sort(),
  ).toEqual(['app/web-1 eviction', 'default/debug-shell eviction']);
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

it('one hung eviction holds no other pod: the rest are evicted meanwhile, it is retried after its own request timeout', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  for (const name of ['web-1', 'web-2', 'web-3']) k8s.addPod(replicaSetPod(name));
  k8s.injectFault({ method: 'POST', path: '/pods/web-1/eviction', delayMs: 60_000 });
  const { run, approval } = await rebootWith('E-PARALLEL', {
    kubernetes: { requestTimeoutMs: 2000 },
    actions: { drain: { maxConcurrentEvictions: 2 } },
  });
  expect(approval).toMatchObject({
    posted: true,
    hooks: [{ ok: true, detail: expect.stringContaining('3 pod(s) evicted') }],
  });
  // web-2 and web-3 went while web-1's first request hung; web-1 went on its second attempt.
  expect(k8s.deletedPods().map((d) => d.name)).toEqual(['web-2', 'web-3', 'web-1']);
  const web1 = k8s.requests().filter((r) => r.path.endsWith('/pods/web-1/eviction'));
  expect(web1.map((r) => r.reason ?? r.status)).toEqual(['ClientClosedRequest', 201]);
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

it('terminating pods are waited for: one already terminating, one evicted that keeps a finalizer; the approval follows once both are gone', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(replicaSetPod('old-1', { terminating: true }));
  k8s.addPod(replicaSetPod('web-1', { finalizers: ['example.com/flush'] }));
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const run = await runs.start(sim.url, (dir) => nodeHookSections(k8s!, dir, { nodeName: NODE }));
  sim.admin.injectEvent({ id: 'E-TERM', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });
  await waitFor(
    () => k8s!.pod('app', 'web-1')?.metadata.deletionTimestamp,
    'web-1 evicted, held by its finalizer',
  );
  // Still listed (and waited for) while they terminate: no approval yet.
  const lists = () => k8s!.requests().filter((r) => r.verb === 'list' && r.resource === 'pods').length;
  const seen = lists();
  await waitFor(() => lists() >= seen + 3, 'the drain listing the terminating pods again');
  expect(recordIn(run.out, 'E-TERM', 'approved')).toBeUndefined();
  k8s.removePod('app', 'old-1');
  k8s.removeFinalizers('app', 'web-1');
  const approved = await waitFor(() => recordIn(run.out, 'E-TERM', 'approved'), 'the approved record');
  expect(approved.data.approval).toMatchObject({ posted: true, hooks: [{ ok: true }] });
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

it('a pod stuck terminating past the deadline: the hook ends timed out, naming it', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(replicaSetPod('stuck', { finalizers: ['example.com/never'], terminationGracePeriodSeconds: 1 }));
  const { run, approval } = await rebootWith('E-STUCK', { prepareTimeoutMs: 3000 });
  expect(gracesAsked('stuck')).toEqual([1]);
  expect(approval).toMatchObject({ posted: false, hooks: [{ ok: false, timedOut: true }] });
  expect(approval.hooks[0]!.detail).toContain('waiting for app/stuck to terminate');
  run.child.child.kill('SIGTERM');
  await run.child.exited;
});

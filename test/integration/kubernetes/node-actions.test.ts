/**
 * The built-in Kubernetes node hook end to end, with real processes: `node src/cli/main.ts run --config` against
 * the IMDS simulator over HTTP and the Kubernetes API test double (HTTPS on 127.0.0.1, kubeconfig with its CA and
 * a bearer token) as the API server.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  daemonSetFixture,
  type KubernetesDouble,
  nodeFixture,
  pdbFixture,
  podFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../support/kubernetes-double/index.ts';
import { kubernetesRuns, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const VM = 'aks-nodepool1-0_0';
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-', async () => {
  await sim?.close();
  await k8s?.close();
});

/** Writes the forwarder's config for this test (kubeconfig with `token`) and starts it. */
function startForwarder(token: string, extra: { rerun?: boolean } = {}) {
  return runs.start(sim!.url, (dir) => ({
    kubernetes: {
      enabled: true,
      nodeName: NODE,
      kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s!, token),
      actions: { drain: { retryIntervalMs: 100 } },
    },
    approval: {
      rerunHooksAfterRestart: extra.rerun === true,
      rules: [{ name: 'drain-then-approve', match: {}, action: 'approve-after-hooks' }],
      hooks: {
        prepare: [{ name: 'node', builtin: 'kubernetes-node' }],
        recover: [{ name: 'node', builtin: 'kubernetes-node' }],
      },
    },
  }));
}

/** Two pods of `web` under a PDB (minAvailable 1), a DaemonSet pod and a mirror pod on the node. */
function workload(double: KubernetesDouble): void {
  double.addDaemonSet(daemonSetFixture('kube-proxy'));
  double.addPod(
    podFixture({
      name: 'kube-proxy-abc',
      namespace: 'kube-system',
      nodeName: NODE,
      owner: { kind: 'DaemonSet', name: 'kube-proxy' },
    }),
  );
  double.addPod(podFixture({ name: `etcd-${NODE}`, namespace: 'kube-system', nodeName: NODE, mirror: true }));
  for (const name of ['web-1', 'web-2']) {
    double.addPod(
      podFixture({
        name,
        namespace: 'app',
        nodeName: NODE,
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web-rs' },
      }),
    );
  }
  double.addPodDisruptionBudget(
    pdbFixture('web-pdb', { namespace: 'app', matchLabels: { app: 'web' }, minAvailable: 1 }),
  );
}

it('Reboot on a node with pods and a PDB: cordoned, tainted, drained in PDB order, approved, Events and condition, uncordoned after Completed', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE), nodeFixture('aks-nodepool1-1')] });
  workload(k8s);
  // The ReplicaSet's part: once the PDB refused an eviction, a replacement web pod becomes ready elsewhere.
  let replaced = false;
  k8s.onRequest((entry) => {
    if (entry.reason === 'TooManyRequests' && !replaced) {
      replaced = true;
      k8s!.addPod(
        podFixture({
          name: 'web-3',
          namespace: 'app',
          nodeName: 'aks-nodepool1-1',
          labels: { app: 'web' },
          owner: { kind: 'ReplicaSet', name: 'web-rs' },
        }),
      );
    }
  });
  // Event writes that fail are tried again (with backoff), not dropped: the first two answer 500.
  k8s.injectFault({ method: 'POST', path: '/events', code: 500, times: 2 });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder(k8s.adminToken);
  sim.admin.injectEvent({ id: 'E-REBOOT', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });

  await waitFor(() => sim!.admin.approvals().length === 1, 'the approval');
  const approved = await waitFor(() => recordIn(out, 'E-REBOOT', 'approved'), 'the approved record');
  expect(approved.data.approval).toMatchObject({
    posted: true,
    hooks: [{ name: 'node', ok: true, detail: expect.stringContaining('2 pod(s) evicted') }],
  });
  const node = k8s.node(NODE)!;
  expect(node.spec.unschedulable).toBe(true);
  expect(node.spec.taints).toEqual([
    expect.objectContaining({ key: 'scheduled-events-forwarder/maintenance', effect: 'NoSchedule' }),
  ]);
  expect(JSON.parse(node.metadata.annotations['scheduled-events-forwarder/actions'])).toMatchObject({
    eventId: 'E-REBOOT',
    cordoned: true,
  });
  // Evicted one at a time as the PDB allowed: one refusal (429) before web-2; DaemonSet and mirror pods stay.
  expect(k8s.deletedPods().map((d) => `${d.name} ${d.via}`)).toEqual(['web-1 eviction', 'web-2 eviction']);
  expect(k8s.requests().filter((r) => r.reason === 'TooManyRequests').length).toBeGreaterThanOrEqual(1);
  expect(
    k8s
      .pods({ nodeName: NODE })
      .map((p) => p.metadata.name)
      .sort(),
  ).toEqual([`etcd-${NODE}`, 'kube-proxy-abc']);
  const condition = () =>
    (k8s!.node(NODE)!.status.conditions as Array<{ type: string; status: string }>).find(
      (c) => c.type === 'VMEventScheduled',
    );
  await waitFor(() => condition()?.status === 'True', 'the VMEventScheduled condition');

  await waitFor(() => recordIn(out, 'E-REBOOT', 'started'), 'the started record');
  sim.admin.removeEvent('E-REBOOT');
  await waitFor(() => recordIn(out, 'E-REBOOT', 'completed'), 'the completed record');
  await waitFor(() => k8s!.node(NODE)!.spec.unschedulable !== true, 'the uncordon');
  await waitFor(() => condition()?.status === 'False', 'the condition cleared');
  const after = k8s.node(NODE)!;
  expect(after.spec.taints ?? []).toEqual([]);
  expect(after.metadata.annotations['scheduled-events-forwarder/actions']).toBeUndefined();
  const reasons = () => k8s!.events().map((e) => e.reason as string);
  await waitFor(() => reasons().includes('VMEventNodeRecovered'), 'the recovered Event');
  expect(reasons()).toEqual(
    expect.arrayContaining([
      'VMEventScheduled',
      'VMEventNodeCordoned',
      'VMEventNodeDrained',
      'VMEventApproved',
      'VMEventStarted',
      'VMEventCompleted',
    ]),
  );
  // The approval was POSTed, so the node says approved — and nothing says otherwise.
  expect(reasons()).not.toContain('VMEventNotApproved');
  expect(k8s.requests().filter((r) => r.path.endsWith('/events') && r.status === 500)).toHaveLength(2);
  const scheduled = k8s.events().find((e) => e.reason === 'VMEventScheduled')!;
  expect(scheduled.involvedObject).toMatchObject({ kind: 'Node', name: NODE });
  expect(scheduled.message).toContain('Reboot E-REBOOT (NotBefore 20');
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
  // The bearer token never reaches the logs.
  expect(child.stderr()).not.toContain(k8s.adminToken);
});

it('Preempt with 30 s notice: the hook gets the time that remains and drains within it', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(
    podFixture({
      name: 'batch-1',
      namespace: 'app',
      nodeName: NODE,
      owner: { kind: 'Job', name: 'batch' },
      terminationGracePeriodSeconds: 600,
    }),
  );
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder(k8s.adminToken);
  sim.admin.injectEvent({ id: 'E-PREEMPT', type: 'Preempt', resources: [VM], noticeSeconds: '30s' });
  const approved = await waitFor(() => recordIn(out, 'E-PREEMPT', 'approved'), 'the approved record');
  const [hook] = approved.data.approval
    ? (approved.data.approval as { hooks: Array<Record<string, unknown>> }).hooks
    : [];
  expect(hook).toMatchObject({ name: 'node', ok: true });
  // Not cut to nothing by the 30 s safety margin: NotBefore − 5 s (shortNoticeMarginMs) − now.
  expect(hook!.budgetMs).toBeGreaterThan(0);
  expect(hook!.budgetMs).toBeLessThanOrEqual(25_000);
  // The eviction's grace period was bounded by the time left (the pod asks for 600 s).
  const [deletion] = k8s.deletedPods();
  expect(deletion).toMatchObject({ name: 'batch-1', via: 'eviction' });
  expect(deletion!.gracePeriodSeconds).toBeLessThanOrEqual(25);
  expect(child.stderr()).toMatch(/"timeoutMs":\d+.*"msg":"running hook"/);
  child.child.kill('SIGTERM');
  await child.exited;
});

it('an operator-cordoned node is left cordoned after the event', async () => {
  const cordoned = nodeFixture(NODE);
  cordoned.spec.unschedulable = true;
  k8s = await startKubernetesDouble({ nodes: [cordoned] });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder(k8s.adminToken);
  sim.admin.injectEvent({ id: 'E-OP', type: 'Redeploy', resources: [VM], noticeSeconds: '15m' });
  await waitFor(() => recordIn(out, 'E-OP', 'started'), 'the started record');
  sim.admin.removeEvent('E-OP');
  await waitFor(() => recordIn(out, 'E-OP', 'completed'), 'the completed record');
  await waitFor(
    () => k8s!.node(NODE)!.metadata.annotations['scheduled-events-forwarder/actions'] === undefined,
    'the annotation removed by the recover hook',
  );
  expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);
  expect(k8s.node(NODE)!.spec.taints ?? []).toEqual([]);
  child.child.kill('SIGTERM');
  await child.exited;
});

it('SIGKILLed mid-drain: after the restart the node is cleaned up when the event completes', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  workload(k8s);
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const first = await startForwarder(k8s.adminToken);
  sim.admin.injectEvent({ id: 'E-KILL', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });
  // web-2 stays blocked by the PDB (no replacement): the drain retries until the forwarder is killed.
  await waitFor(
    () => k8s!.requests().some((r) => r.reason === 'TooManyRequests'),
    'an eviction refused by the PDB',
  );
  first.child.child.kill('SIGKILL');
  expect(await first.child.exited).toEqual({ code: null, signal: 'SIGKILL' });
  expect(k8s.node(NODE)!.spec.unschedulable).toBe(true);

  const second = await runs.restart(first);
  // The interrupted hook counts as failed: no approval; the event starts at NotBefore (here: the simulator).
  const approved = await waitFor(() => recordIn(first.out, 'E-KILL', 'approved'), 'the not-posted record');
  expect(approved.data.approval).toMatchObject({
    posted: false,
    hooks: [{ name: 'node', ok: false }],
    notPostedReason: expect.stringContaining('interrupted by a restart of the forwarder'),
  });
  expect(sim.admin.approvals()).toEqual([]);
  // The node says so: the interrupted drain, and that the event will start without our approval.
  const interrupted = await waitFor(
    () => k8s!.events().find((e) => e.reason === 'VMEventPrepareInterrupted'),
    'the interrupted-drain node Event',
  );
  expect(interrupted).toMatchObject({ type: 'Warning' });
  expect(interrupted.message).toContain('prepare hook "node" was interrupted and counts as failed');
  const notApproved = await waitFor(
    () => k8s!.events().find((e) => e.reason === 'VMEventNotApproved'),
    'the not-approved node Event',
  );
  expect(notApproved.message).toContain('interrupted by a restart of the forwarder');
  expect(k8s.events().map((e) => e.reason)).not.toContain('VMEventApproved');
  sim.admin.setStatus('E-KILL', 'Started');
  await waitFor(() => recordIn(first.out, 'E-KILL', 'started'), 'the started record');
  sim.admin.removeEvent('E-KILL');
  await waitFor(() => k8s!.node(NODE)!.spec.unschedulable !== true, 'the uncordon after the restart');
  expect(k8s.node(NODE)!.metadata.annotations['scheduled-events-forwarder/actions']).toBeUndefined();
  second.child.kill('SIGTERM');
  await second.exited;
});

it('RBAC denied: the hook fails with the missing verb and resource and the fix', async () => {
  k8s = await startKubernetesDouble({
    nodes: [nodeFixture(NODE)],
    tokens: {
      limited: {
        user: 'system:serviceaccount:scheduled-events:scheduled-events-forwarder',
        permissions: [
          { verb: 'get', group: '', resource: 'nodes' },
          { verb: 'create', group: '', resource: 'events' },
          { verb: 'patch', group: '', resource: 'nodes/status' },
        ],
      },
    },
  });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder('limited');
  sim.admin.injectEvent({ id: 'E-RBAC', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });
  const approved = await waitFor(() => recordIn(out, 'E-RBAC', 'approved'), 'the not-posted record');
  const detail = (approved.data.approval as { hooks: Array<{ detail: string }> }).hooks[0]!.detail;
  expect(detail).toMatch(/RBAC denied "patch" on "nodes"/);
  expect(detail).toContain('packaging/kubernetes');
  expect(approved.data.approval).toMatchObject({ posted: false });
  expect(child.stderr()).toContain('RBAC denied \\"patch\\" on \\"nodes\\"');
  expect(sim.admin.approvals()).toEqual([]);
  const notApproved = await waitFor(
    () => k8s!.events().find((e) => e.reason === 'VMEventNotApproved'),
    'the not-approved node Event',
  );
  expect(notApproved).toMatchObject({ type: 'Warning' });
  expect(notApproved.message).toContain('RBAC denied');
  expect(k8s.events().map((e) => e.reason)).not.toContain('VMEventApproved');
  child.child.kill('SIGTERM');
  await child.exited;
});

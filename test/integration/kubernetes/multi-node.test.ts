/**
 * #30 item 4: cluster-aware approval. Two real `run` children are two nodes of one cluster, on one Scheduled Events
 * document (the IMDS simulator serves both VMs; one Reboot names both), each with the shipped
 * config/kubernetes.example.yaml (`leader: any`, drain then approve) pointed at the Kubernetes API double with a
 * token that has exactly the ClusterRole's permissions. The approval waits for both drains; nothing is approved
 * when one node cannot drain, or when an affected node never gets ready; each node says why.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RecordedApproval } from '../../../src/domain/index.ts';
import { REQUIRED_PERMISSIONS } from '../../../src/kubernetes/rbac.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { REPO } from '../../support/child.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  pdbFixture,
  podFixture,
  scaleSetProviderId,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../support/kubernetes-double/index.ts';
import { type KubernetesRun, kubernetesRuns, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const SS = 'aks-nodepool1-12345678-vmss';
const VMS = [`${SS}_0`, `${SS}_1`];
// AKS names a scale-set instance's node after its computer name: the scale set + the instance id in base 36.
const NODES = [`${SS}000000`, `${SS}000001`];
const SPARE = `${SS}000002`; // not affected: where replacements start
const USERS = ['system:serviceaccount:sef:node-0', 'system:serviceaccount:sef:node-1'];
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-multi-', async () => {
  await sim?.close();
  await k8s?.close();
});

/** Three nodes (two affected, one spare), a token per forwarder with the ClusterRole's permissions, a pod on node 0. */
async function cluster(): Promise<KubernetesDouble> {
  const double = await startKubernetesDouble({
    pods: [
      podFixture({
        name: 'api-1',
        namespace: 'app',
        nodeName: NODES[0]!,
        owner: { kind: 'ReplicaSet', name: 'api' },
      }),
    ],
    nodes: [0, 1, 2].map((i) => nodeFixture(`${SS}00000${i}`, { providerID: scaleSetProviderId(SS, i) })),
    tokens: Object.fromEntries(
      USERS.map((user, i) => [`token-${i}`, { user, permissions: REQUIRED_PERMISSIONS }]),
    ),
  });
  return double;
}

/** The shipped example's sections for node `i`: only the node, the credential and faster retries set here. */
function shippedExample(i: number, dir: string): Record<string, unknown> {
  const example = parse(readFileSync(join(REPO, 'config', 'kubernetes.example.yaml'), 'utf8')) as {
    kubernetes: Record<string, Record<string, Record<string, unknown>>>;
    approval: Record<string, unknown>;
  };
  const { kubernetes, approval } = example;
  kubernetes.actions!.drain = { ...kubernetes.actions!.drain, retryIntervalMs: 200 };
  return {
    kubernetes: {
      ...kubernetes,
      nodeName: NODES[i],
      kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s!, `token-${i}`),
      clusterApproval: { ...kubernetes.clusterApproval, pollIntervalMs: 200 },
    },
    approval,
  };
}

/**
 * Node `i`'s forwarder on its own VM's IMDS endpoint of the one simulator; resolves once it knows its VM (approval
 * decides nothing before: on a loaded machine the first instance-metadata read can take its full timeout).
 */
async function startNode(i: number): Promise<KubernetesRun> {
  const run = await runs.start(i === 0 ? sim!.url : sim!.vmUrl(VMS[i]!), (dir) => shippedExample(i, dir));
  await waitFor(() => run.child.stderr().includes(`"vmName":"${VMS[i]}"`), `node ${i}'s VM identity`, {
    timeoutMs: 60_000,
  });
  return run;
}

/** Both nodes' forwarders (startNode). */
const startBoth = () => Promise.all([startNode(0), startNode(1)]);

const webPod = (name: string, nodeName: string) =>
  podFixture({
    name,
    namespace: 'app',
    nodeName,
    labels: { app: 'web' },
    owner: { kind: 'ReplicaSet', name: 'web' },
  });
const approvalOf = (run: KubernetesRun, id: string) =>
  recordIn(run.out, id, 'approved')?.data.approval as RecordedApproval | undefined;
const eventsOn = (node: string) => k8s!.events().filter((e) => e.involvedObject.name === node);
/** Requests the forwarder of node `i` made to read node `j`. */
const reads = (i: number, j: number) =>
  k8s!
    .requests()
    .filter((r) => r.user === USERS[i] && r.verb === 'get' && r.path.endsWith(`/nodes/${NODES[j]}`));

it('one Reboot of both nodes: neither approves while the other still drains; the approval follows both drains', async () => {
  k8s = await cluster();
  // Node 1's pods are budget-protected: the budget refuses their eviction until replacements run elsewhere.
  for (const name of ['web-1', 'web-2']) k8s.addPod(webPod(name, NODES[1]!));
  k8s.addPodDisruptionBudget(
    pdbFixture('web-pdb', { namespace: 'app', matchLabels: { app: 'web' }, minAvailable: 2 }),
  );
  sim = await startSimulator({ vmName: VMS[0], timeScale: 0 });
  sim.admin.addVm(VMS[1]!);
  const [node0, node1] = await startBoth();
  sim.admin.injectEvent({ id: 'E-BOTH', type: 'Reboot', resources: VMS, noticeSeconds: '15m' });

  // Node 0 drains at once and then keeps reading node 1, which is still refused by the budget.
  await waitFor(() => k8s!.deletedPods().some((d) => d.name === 'api-1'), 'node 0 drained');
  await waitFor(
    () => k8s!.requests().filter((r) => r.user === USERS[1] && r.reason === 'TooManyRequests').length >= 2,
    "node 1's evictions refused by the budget",
  );
  const seen = reads(0, 1).length;
  await waitFor(() => reads(0, 1).length >= seen + 5, 'node 0 reading node 1 while it drains');
  expect(sim.admin.approvals()).toEqual([]);
  expect(approvalOf(node0!, 'E-BOTH')).toBeUndefined();
  expect(k8s.pods({ nodeName: NODES[1] }).map((p) => p.metadata.name)).toEqual(['web-1', 'web-2']);
  const published = JSON.parse(
    k8s.node(NODES[0]!)!.metadata.annotations['scheduled-events-forwarder/prepare'],
  );
  expect(published['E-BOTH']).toMatchObject({ state: 'ready' });

  // Replacements become ready on the spare node: node 1 drains, and only then is the event approved.
  for (const name of ['web-3', 'web-4']) k8s.addPod(webPod(name, SPARE));
  await waitFor(() => sim!.admin.approvals().length > 0, 'the approval');
  expect(k8s.pods({ nodeName: NODES[1] })).toEqual([]);
  // Both are leaders (`leader: any`): the first to see both nodes ready POSTs; the other POSTs too, or finds the
  // event already started by that approval.
  const recorded = await Promise.all(
    [node0!, node1!].map((run) =>
      waitFor(() => approvalOf(run, 'E-BOTH'), 'each node recording its approval'),
    ),
  );
  expect(recorded.some((a) => a.posted)).toBe(true);
  for (const approval of recorded) {
    expect(approval.hooks).toMatchObject([{ name: 'node', ok: true }]);
    if (!approval.posted)
      expect(approval.notPostedReason).toContain('the event was no longer Scheduled: it started');
  }
  // No budget was exceeded while both nodes drained: every eviction went through the Eviction API.
  expect(k8s.deletedPods().every((d) => d.via === 'eviction')).toBe(true);
  // Each node's Event follows its own record: VMEventApproved where it POSTed.
  for (const [i, approval] of recorded.entries()) {
    const reason = approval.posted ? 'VMEventApproved' : 'VMEventNotApproved';
    await waitFor(() => eventsOn(NODES[i]!).some((e) => e.reason === reason), `${reason} on node ${i}`);
    if (approval.posted) expect(eventsOn(NODES[i]!).map((e) => e.reason)).not.toContain('VMEventNotApproved');
  }
  for (const run of [node0!, node1!]) {
    run.child.child.kill('SIGTERM');
    expect(await run.child.exited).toEqual({ code: 0, signal: null });
  }
});

it('one node cannot drain: nothing is approved, and both nodes say why, naming the node that blocked', async () => {
  k8s = await cluster();
  k8s.addPod(podFixture({ name: 'debug-shell', namespace: 'default', nodeName: NODES[1]! })); // no controller
  sim = await startSimulator({ vmName: VMS[0], timeScale: 0 });
  sim.admin.addVm(VMS[1]!);
  const [node0, node1] = await startBoth();
  sim.admin.injectEvent({ id: 'E-BLOCK', type: 'Reboot', resources: VMS, noticeSeconds: '15m' });

  const blocked = await waitFor(() => approvalOf(node0!, 'E-BLOCK'), "node 0's not-posted record");
  expect(blocked).toMatchObject({ posted: false, hooks: [{ name: 'node', ok: true }] });
  expect(blocked.notPostedReason).toContain(
    `other affected VMs were not ready: ${VMS[1]} (node ${NODES[1]}): its preparation failed`,
  );
  expect(blocked.notPostedReason).toContain('default/debug-shell is not managed by a controller');
  const own = await waitFor(() => approvalOf(node1!, 'E-BLOCK'), "node 1's not-posted record");
  expect(own).toMatchObject({ posted: false, hooks: [{ name: 'node', ok: false }] });
  const warning = await waitFor(
    () => eventsOn(NODES[0]!).find((e) => e.reason === 'VMEventNotApproved'),
    'VMEventNotApproved on node 0',
  );
  expect(warning.type).toBe('Warning');
  expect(warning.message).toContain(NODES[1]);
  await waitFor(
    () => eventsOn(NODES[1]!).some((e) => e.reason === 'VMEventNotApproved'),
    'VMEventNotApproved on node 1',
  );
  expect(k8s.events().map((e) => e.reason)).not.toContain('VMEventApproved');
  expect(sim.admin.approvals()).toEqual([]);
  // The event starts at NotBefore (here: the simulator starts it), without us.
  sim.admin.setStatus('E-BLOCK', 'Started');
  await waitFor(() => recordIn(node0!.out, 'E-BLOCK', 'started'), 'the started record');
  expect(sim.admin.approvals()).toEqual([]);
  for (const run of [node0!, node1!]) {
    run.child.child.kill('SIGTERM');
    await run.child.exited;
  }
});

it('an affected node that never gets ready (no forwarder there): nothing is approved by NotBefore, and the record names it', async () => {
  k8s = await cluster();
  sim = await startSimulator({ vmName: VMS[0], timeScale: 0 });
  sim.admin.addVm(VMS[1]!);
  const node0 = await startNode(0);
  // A short notice, so that NotBefore comes within the test (the hook still fits: the short-notice margin). The
  // simulator's clock stands still (timeScale 0): bring it to now first, as starting the forwarder took a while.
  sim.admin.advance(Math.max(0, Date.now() - sim.admin.now()));
  sim.admin.injectEvent({ id: 'E-NEVER', type: 'Reboot', resources: VMS, noticeSeconds: '30s' });
  const never = await waitFor(() => approvalOf(node0, 'E-NEVER'), 'the not-posted record at NotBefore', {
    timeoutMs: 60_000,
  });
  expect(never, JSON.stringify(never)).toMatchObject({ posted: false, hooks: [{ name: 'node', ok: true }] });
  expect(never.notPostedReason).toContain('other affected VMs were not ready (NotBefore came first)');
  expect(never.notPostedReason).toContain(
    `${VMS[1]} (node ${NODES[1]}): no prepare state published for this event yet`,
  );
  expect(sim.admin.approvals()).toEqual([]);
  await waitFor(
    () => eventsOn(NODES[0]!).some((e) => e.reason === 'VMEventNotApproved'),
    'VMEventNotApproved',
  );
  node0.child.child.kill('SIGTERM');
  await node0.child.exited;
});

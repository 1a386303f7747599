/**
 * Terminate on a Kubernetes node, end to end: a real `run` child against the IMDS simulator over HTTP (the bundled
 * scale-set-terminate scenario, and an injected Terminate seen with short notice) and the Kubernetes API test
 * double. The built-in `kubernetes-node` prepare hook runs with the time that really remains before NotBefore
 * (recorded as hooks[].budgetMs: above 0, below the notice), the node is drained, and the approval follows.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  daemonSetFixture,
  type KubernetesDouble,
  nodeFixture,
  podFixture,
  scaleSetProviderId,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../support/kubernetes-double/index.ts';
import { kubernetesRuns, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-vmss000001';
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-terminate-', async () => {
  await sim?.close();
  await k8s?.close();
  sim = undefined;
  k8s = undefined;
});

interface HookResult {
  name: string;
  ok: boolean;
  budgetMs?: number;
  detail?: string;
}

/** The forwarder with a prepare hook whose own timeout (1 h) is far above any Terminate notice. */
function startForwarder() {
  return runs.start(sim!.url, (dir) => ({
    kubernetes: {
      enabled: true,
      nodeName: NODE,
      clusterName: 'prod-weu',
      kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s!, k8s!.adminToken),
    },
    approval: {
      rules: [
        { name: 'drain-then-approve', match: { eventTypes: ['Terminate'] }, action: 'approve-after-hooks' },
      ],
      hooks: { prepare: [{ name: 'node', builtin: 'kubernetes-node', timeoutMs: 3_600_000 }] },
    },
  }));
}

/** A workload pod asking for 10 minutes of grace, and a DaemonSet pod that stays. */
function workload(double: KubernetesDouble): void {
  double.addPod(
    podFixture({
      name: 'api-1',
      namespace: 'app',
      nodeName: NODE,
      owner: { kind: 'ReplicaSet', name: 'api-rs' },
      terminationGracePeriodSeconds: 600,
    }),
  );
  double.addDaemonSet(daemonSetFixture('kube-proxy'));
  double.addPod(
    podFixture({
      name: 'kube-proxy-xyz',
      namespace: 'kube-system',
      nodeName: NODE,
      owner: { kind: 'DaemonSet', name: 'kube-proxy' },
    }),
  );
}

/** The approved record's node hook, after checking the drain and the approval. */
async function drainedAndApproved(
  out: string,
  eventId: string,
): Promise<{ hook: HookResult; approved: LifecycleRecord }> {
  const approved = await waitFor(() => recordIn(out, eventId, 'approved'), 'the approved record');
  const approval = approved.data.approval as { posted: boolean; leader: boolean; hooks: HookResult[] };
  expect(approval).toMatchObject({ posted: true, leader: true });
  const [hook] = approval.hooks;
  expect(hook).toMatchObject({ name: 'node', ok: true, detail: expect.stringContaining('1 pod(s) evicted') });
  expect(sim!.admin.approvals().map((a) => a.eventId)).toEqual([eventId]);
  // Drained: the workload pod evicted, the DaemonSet pod left; cordoned and tainted.
  expect(k8s!.deletedPods().map((d) => `${d.namespace}/${d.name} ${d.via}`)).toEqual(['app/api-1 eviction']);
  expect(k8s!.pods({ nodeName: NODE }).map((p) => p.metadata.name)).toEqual(['kube-proxy-xyz']);
  expect(k8s!.node(NODE)!.spec.unschedulable).toBe(true);
  // The record is enriched as every record on a node.
  expect(approved.data.kubernetes).toEqual({ nodeName: NODE, clusterName: 'prod-weu' });
  return { hook: hook!, approved };
}

it('the scale-set-terminate scenario: the hook gets NotBefore − safety margin − now (not its 1 h timeout), drains, approval follows', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  workload(k8s);
  // timeScale 0: simulated time moves only when the test advances it, so NotBefore stays ahead of the real clock.
  sim = await startSimulator({ scenario: 'scale-set-terminate', timeScale: 0 });
  const { child, out } = await startForwarder();
  sim.admin.advance(10_000); // the scenario's step at 10 s: Terminate for myvmss_1 and myvmss_2, 10 min notice
  const [event] = sim.admin.events();
  expect(event).toMatchObject({ type: 'Terminate', resources: ['myvmss_1', 'myvmss_2'] });
  // The other VM of the event is a node of this cluster whose forwarder has already drained it (its published
  // prepare state): cluster-aware approval lets this node approve (docs/kubernetes.md#multi-node-events).
  const other = nodeFixture('myvmss000002', { providerID: scaleSetProviderId('myvmss', 2) });
  other.metadata.annotations['scheduled-events-forwarder/prepare'] = JSON.stringify({
    [event!.id]: { state: 'ready' },
  });
  k8s.addNode(other);

  const { hook, approved } = await drainedAndApproved(out, event!.id);
  const scheduled = recordIn(out, event!.id, 'scheduled')!;
  const noticeMs = (scheduled.data.timing.noticeSeconds as number) * 1000;
  expect(noticeMs).toBeGreaterThan(9 * 60_000); // the scenario's 10 minutes, seen at once
  // The time that really remained: cut from 1 h to below NotBefore − 30 s (safetyMarginMs).
  expect(hook.budgetMs).toBeGreaterThan(0);
  expect(hook.budgetMs).toBeLessThan(noticeMs);
  const notBeforeMs = Date.parse(approved.data.notBeforeUtc!);
  expect(Date.parse(scheduled.time) + hook.budgetMs!).toBeLessThanOrEqual(notBeforeMs - 30_000);
  // The eviction's grace period (the pod asks for 600 s) fits in that budget.
  expect(k8s.deletedPods()[0]!.gracePeriodSeconds).toBeLessThanOrEqual(Math.ceil(hook.budgetMs! / 1000));
  expect(child.stderr()).toMatch(/"timeoutMs":\d+.*"msg":"running hook"/);
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
});

it('a Terminate seen with 40 s left: the short-notice margin (5 s) applies, the hook gets under 35 s and the drain fits', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  workload(k8s);
  sim = await startSimulator({ vmName: 'myvmss_1', timeScale: 0 });
  const { child, out } = await startForwarder();
  sim.admin.injectEvent({
    id: 'E-TERMINATE',
    type: 'Terminate',
    resources: ['myvmss_1'],
    eventSource: 'User',
    noticeSeconds: '40s',
  });
  const { hook } = await drainedAndApproved(out, 'E-TERMINATE');
  const scheduled = recordIn(out, 'E-TERMINATE', 'scheduled')!;
  const noticeMs = (scheduled.data.timing.noticeSeconds as number) * 1000;
  expect(noticeMs).toBeLessThanOrEqual(40_000);
  // Not cut to nothing by the 30 s safety margin (notice < 2 × 30 s): NotBefore − 5 s − now.
  expect(hook.budgetMs).toBeGreaterThan(0);
  expect(hook.budgetMs).toBeLessThan(noticeMs);
  const notBeforeMs = Date.parse(scheduled.data.notBeforeUtc!);
  expect(Date.parse(scheduled.time) + hook.budgetMs!).toBeLessThanOrEqual(notBeforeMs - 5_000);
  expect(k8s.deletedPods()[0]!.gracePeriodSeconds).toBeLessThanOrEqual(35);
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
});

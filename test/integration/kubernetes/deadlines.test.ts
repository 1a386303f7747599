/**
 * #30 item 1: the built-in node hook holds its deadline. A real `run` child against the IMDS simulator and the
 * Kubernetes API double; one eviction hangs (a slow admission webhook) far longer than the hook's budget: the hook
 * ends at its deadline with `timedOut: true`, the hung request is abandoned (the double sees the client go away),
 * nothing is approved, and the node's annotation still says what was done, so the recover hook undoes it.
 */
import { expect, it } from 'vitest';
import type { RecordedApproval } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  podFixture,
  startKubernetesDouble,
} from '../../support/kubernetes-double/index.ts';
import { kubernetesRuns, nodeHookSections, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const VM = 'aks-nodepool1-0_0';
const HANG_MS = 25_000;
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-deadline-', async () => {
  await sim?.close();
  await k8s?.close();
});

it('an eviction that hangs 25 s: the hook ends at its 4 s deadline with timedOut, the annotation says what was done, recover undoes it', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  k8s.addPod(
    podFixture({
      name: 'web-1',
      namespace: 'app',
      nodeName: NODE,
      owner: { kind: 'ReplicaSet', name: 'web' },
      terminationGracePeriodSeconds: 2, // fits the 4 s budget: the eviction is sent (and hangs)
    }),
  );
  k8s.injectFault({ method: 'POST', path: '/pods/web-1/eviction', delayMs: HANG_MS });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await runs.start(sim.url, (dir) =>
    nodeHookSections(k8s!, dir, { nodeName: NODE, prepareTimeoutMs: 4000 }),
  );
  sim.admin.injectEvent({ id: 'E-HANG', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });

  const approved = await waitFor(() => recordIn(out, 'E-HANG', 'approved'), 'the not-posted record');
  const approval = approved.data.approval as RecordedApproval;
  expect(approval.posted).toBe(false);
  const [hook] = approval.hooks;
  expect(hook).toMatchObject({ name: 'node', ok: false, timedOut: true, budgetMs: 4000 });
  // Ended at its deadline, not when the eviction would have answered.
  expect(hook!.durationMs).toBeGreaterThanOrEqual(4000);
  expect(hook!.durationMs).toBeLessThan(HANG_MS);
  expect(hook!.detail).toContain("stopped at the hook's deadline");
  expect(hook!.detail).toContain('cordoned');
  expect(sim.admin.approvals()).toEqual([]);
  // The signal reached the request: the client went away while the double held it, and nothing was evicted.
  await waitFor(
    () =>
      k8s!.requests().some((r) => r.reason === 'ClientClosedRequest' && r.path.endsWith('/web-1/eviction')),
    'the hung eviction abandoned by the client',
  );
  expect(k8s.deletedPods()).toEqual([]);
  // What was done is on the node: cordon and taint, with the annotation saying so.
  const node = k8s.node(NODE)!;
  expect(node.spec.unschedulable).toBe(true);
  expect(JSON.parse(node.metadata.annotations['scheduled-events-forwarder/actions'])).toMatchObject({
    eventId: 'E-HANG',
    cordoned: true,
    taint: { key: 'scheduled-events-forwarder/maintenance' },
  });
  await waitFor(
    () => k8s!.events().some((e) => e.reason === 'VMEventNodePrepareFailed'),
    'the prepare-failed node Event',
  );

  // The event runs without our approval and ends: recover undoes exactly what the annotation lists.
  sim.admin.setStatus('E-HANG', 'Started');
  await waitFor(() => recordIn(out, 'E-HANG', 'started'), 'the started record');
  sim.admin.removeEvent('E-HANG');
  await waitFor(() => k8s!.node(NODE)!.spec.unschedulable !== true, 'the uncordon');
  expect(k8s.node(NODE)!.spec.taints ?? []).toEqual([]);
  expect(k8s.node(NODE)!.metadata.annotations['scheduled-events-forwarder/actions']).toBeUndefined();
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
});

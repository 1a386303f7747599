/**
 * #30 item 3: what the node shows is true. A real `run` child against the IMDS simulator and the Kubernetes API
 * double: the VMEventScheduled condition's lastTransitionTime moves only when its status changes (not when another
 * pending event changes its message), and Events go to `kubernetes.eventNamespace` `kube-system` too (accepted
 * there because they carry eventTime; the double validates Events as the API server does).
 */
import { expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  startKubernetesDouble,
} from '../../support/kubernetes-double/index.ts';
import { kubernetesRuns, kubernetesSectionFor, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const VM = 'aks-nodepool1-0_0';
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-events-', async () => {
  await sim?.close();
  await k8s?.close();
});

interface Condition {
  type: string;
  status: string;
  message: string;
  lastTransitionTime: string;
  lastHeartbeatTime: string;
}
const condition = () =>
  (k8s!.node(NODE)!.status.conditions as Condition[]).find((c) => c.type === 'VMEventScheduled');

it('the condition keeps its lastTransitionTime while its status stays; Events land in kube-system', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await runs.start(sim.url, (dir) => ({
    kubernetes: kubernetesSectionFor(k8s!, dir, {
      nodeName: NODE,
      kubernetes: { eventNamespace: 'kube-system' },
    }),
  }));
  sim.admin.injectEvent({ id: 'E-ONE', type: 'Freeze', resources: [VM], noticeSeconds: '15m' });
  const first = await waitFor(
    () => (condition()?.status === 'True' ? condition() : undefined),
    'condition True',
  );
  // A second pending event: the message (and heartbeat) change, the status does not, nor its transition time.
  sim.admin.injectEvent({ id: 'E-TWO', type: 'Reboot', resources: [VM], noticeSeconds: '15m' });
  const second = await waitFor(
    () => (condition()?.message.includes('E-TWO') ? condition() : undefined),
    'the condition naming both events',
  );
  expect(second.status).toBe('True');
  expect(second.lastTransitionTime).toBe(first.lastTransitionTime);
  expect(Date.parse(second.lastHeartbeatTime)).toBeGreaterThan(Date.parse(first.lastHeartbeatTime));
  // Both gone: False, and now the transition time moves.
  sim.admin.removeEvent('E-ONE');
  sim.admin.removeEvent('E-TWO');
  const cleared = await waitFor(
    () => (condition()?.status === 'False' ? condition() : undefined),
    'condition False',
  );
  expect(Date.parse(cleared.lastTransitionTime)).toBeGreaterThan(Date.parse(first.lastTransitionTime));

  await waitFor(() => recordIn(out, 'E-TWO', 'canceled'), 'the canceled record');
  const reasons = () => k8s!.events('kube-system').map((e) => `${e.reason} ${e.involvedObject.name}`);
  await waitFor(() => reasons().includes(`VMEventCanceled ${NODE}`), 'the Events in kube-system');
  expect(reasons()).toEqual(expect.arrayContaining([`VMEventScheduled ${NODE}`]));
  expect(k8s.events('default')).toEqual([]);
  const event = k8s.events('kube-system')[0]!;
  expect(event.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  expect(event).toMatchObject({ reportingComponent: 'scheduled-events-forwarder', reportingInstance: NODE });
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
});

/**
 * Record enrichment end to end: a real `node src/cli/main.ts run` child against the IMDS simulator over HTTP and
 * the Kubernetes API test double (HTTPS, kubeconfig with a bearer token). With `kubernetes.enabled` every record
 * carries `data.kubernetes` (node name from the downward API's NODE_NAME, the configured cluster name, the
 * configured labels' values read from the Node); without it records carry nothing of the kind.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { readFileSinkRecords } from '../../support/child.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../support/kubernetes-double/index.ts';
import { kubernetesRuns, recordIn } from '../../support/kubernetes-runs.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const VM = 'aks-nodepool1-0_0';
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
const runs = kubernetesRuns('sef-k8s-enrich-', async () => {
  await sim?.close();
  await k8s?.close();
  sim = undefined;
  k8s = undefined;
});

/** The forwarder with these `kubernetes` settings (and a kubeconfig for the double, when one runs). */
function startForwarder(kubernetes: Record<string, unknown>, env: Record<string, string> = {}) {
  return runs.start(
    sim!.url,
    (dir) => ({
      kubernetes: {
        ...kubernetes,
        ...(k8s === undefined
          ? {}
          : { kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s, k8s.adminToken) }),
      },
    }),
    env,
  );
}

it('kubernetes.enabled: every record carries the node name (NODE_NAME), the cluster name and the configured labels read from the Node', async () => {
  k8s = await startKubernetesDouble({
    nodes: [nodeFixture(NODE, { labels: { 'topology.kubernetes.io/zone': 'westeurope-2' } })],
  });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder(
    {
      enabled: true,
      clusterName: 'prod-weu',
      labels: [
        'topology.kubernetes.io/zone',
        'kubernetes.azure.com/agentpool',
        'node.kubernetes.io/instance-type',
        'example.com/not-on-this-node',
      ],
      events: false,
      condition: false,
    },
    // The downward API's fieldRef spec.nodeName, as packaging/kubernetes sets it.
    { NODE_NAME: NODE },
  );
  sim.admin.injectEvent({ id: 'E-FREEZE', type: 'Freeze', resources: [VM], noticeSeconds: '15m' });
  const scheduled = await waitFor(() => recordIn(out, 'E-FREEZE', 'scheduled'), 'the scheduled record');
  const expected = {
    nodeName: NODE,
    clusterName: 'prod-weu',
    labels: {
      'topology.kubernetes.io/zone': 'westeurope-2',
      'kubernetes.azure.com/agentpool': 'nodepool1',
      'node.kubernetes.io/instance-type': 'Standard_D2s_v5',
    },
  };
  expect(scheduled.data.kubernetes).toEqual(expected);
  // In the configured order (the key missing on the Node left out).
  expect(Object.keys(scheduled.data.kubernetes!.labels!)).toEqual([
    'topology.kubernetes.io/zone',
    'kubernetes.azure.com/agentpool',
    'node.kubernetes.io/instance-type',
  ]);
  expect(validateRecord(scheduled)).toEqual([]);
  // The labels came from the API server: one GET of this Node by the forwarder's token.
  expect(
    k8s
      .requests()
      .filter((r) => r.verb === 'get' && r.resource === 'nodes')
      .map((r) => [r.name, r.status]),
  ).toContainEqual([NODE, 200]);

  sim.admin.setStatus('E-FREEZE', 'Started');
  await waitFor(() => recordIn(out, 'E-FREEZE', 'started'), 'the started record');
  sim.admin.removeEvent('E-FREEZE');
  const completed = await waitFor(() => recordIn(out, 'E-FREEZE', 'completed'), 'the completed record');
  for (const r of readFileSinkRecords(out)) {
    expect(r.data.kubernetes).toEqual(expected);
    expect(validateRecord(r)).toEqual([]);
  }
  expect(completed.data.kubernetes).toEqual(expected);
  child.child.kill('SIGTERM');
  expect(await child.exited).toEqual({ code: 0, signal: null });
});

it('kubernetes.enabled without labels: node and cluster only, and no API call is made for them', async () => {
  k8s = await startKubernetesDouble({ nodes: [nodeFixture(NODE)] });
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder({
    enabled: true,
    nodeName: NODE,
    events: false,
    condition: false,
  });
  sim.admin.injectEvent({ id: 'E-NOLABELS', type: 'Freeze', resources: [VM], noticeSeconds: '15m' });
  const scheduled = await waitFor(() => recordIn(out, 'E-NOLABELS', 'scheduled'), 'the scheduled record');
  expect(scheduled.data.kubernetes).toEqual({ nodeName: NODE });
  expect(k8s.requests()).toEqual([]);
  child.child.kill('SIGTERM');
  await child.exited;
});

it('outside Kubernetes (kubernetes.enabled false, even with NODE_NAME, clusterName and labels set): no data.kubernetes', async () => {
  sim = await startSimulator({ vmName: VM, timeScale: 0 });
  const { child, out } = await startForwarder(
    { enabled: false, clusterName: 'prod-weu', labels: ['kubernetes.azure.com/agentpool'] },
    { NODE_NAME: NODE },
  );
  sim.admin.injectEvent({ id: 'E-PLAIN', type: 'Freeze', resources: [VM], noticeSeconds: '15m' });
  const scheduled = await waitFor(() => recordIn(out, 'E-PLAIN', 'scheduled'), 'the scheduled record');
  expect(Object.hasOwn(scheduled.data, 'kubernetes')).toBe(false);
  expect(JSON.stringify(scheduled)).not.toMatch(/nodeName|prod-weu|agentpool/);
  expect(validateRecord(scheduled)).toEqual([]);
  child.child.kill('SIGTERM');
  await child.exited;
});

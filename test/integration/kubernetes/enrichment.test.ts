/**
 * Record enrichment end to end: a real `node src/cli/main.ts run` child against the IMDS simulator over HTTP and
 * the Kubernetes API test double (HTTPS, kubeconfig with a bearer token). With `kubernetes.enabled` every record
 * carries `data.kubernetes` (node name from the downward API's NODE_NAME, the configured cluster name, the
 * configured labels' values read from the Node); without it records carry nothing of the kind.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, fileSinkRecords, spawnCli } from '../../support/child.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../support/kubernetes-double/index.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const NODE = 'aks-nodepool1-0';
const VM = 'aks-nodepool1-0_0';
const tmp = makeTempDir('sef-k8s-enrich-');
const children: ForwarderChild[] = [];
let sim: RunningSimulator | undefined;
let k8s: KubernetesDouble | undefined;
afterEach(async () => {
  for (const c of children.splice(0))
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await sim?.close();
  await k8s?.close();
  sim = undefined;
  k8s = undefined;
});
afterAll(() => tmp.cleanup());

const lines = (file: string): LifecycleRecord[] =>
  existsSync(file) ? fileSinkRecords<LifecycleRecord>(readFileSync(file, 'utf8')).records : [];
const record = (file: string, id: string, transition: string) =>
  lines(file).find((r) => r.subject === id && r.transition === transition);

let runs = 0;
async function startForwarder(kubernetes: Record<string, unknown>, env: Record<string, string> = {}) {
  const dir = join(tmp.dir, `run-${++runs}`);
  mkdirSync(dir);
  const out = join(dir, 'records.jsonl');
  const configFile = join(dir, 'forwarder.yaml');
  const kubeconfig =
    k8s === undefined ? {} : { kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s, k8s.adminToken) };
  writeFileSync(
    configFile,
    stringify({
      imds: { endpoint: sim!.url, pollIntervalMs: 200 },
      stateDir: join(dir, 'state'),
      sinks: [{ name: 'file', type: 'file', path: out }],
      kubernetes: { ...kubernetes, ...kubeconfig },
    }),
  );
  const child = spawnCli(['run', '--config', configFile], env);
  children.push(child);
  await child.ready;
  return { child, out };
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
  const scheduled = await waitFor(() => record(out, 'E-FREEZE', 'scheduled'), 'the scheduled record');
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
  await waitFor(() => record(out, 'E-FREEZE', 'started'), 'the started record');
  sim.admin.removeEvent('E-FREEZE');
  const completed = await waitFor(() => record(out, 'E-FREEZE', 'completed'), 'the completed record');
  for (const r of lines(out)) {
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
  const scheduled = await waitFor(() => record(out, 'E-NOLABELS', 'scheduled'), 'the scheduled record');
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
  const scheduled = await waitFor(() => record(out, 'E-PLAIN', 'scheduled'), 'the scheduled record');
  expect(Object.hasOwn(scheduled.data, 'kubernetes')).toBe(false);
  expect(JSON.stringify(scheduled)).not.toMatch(/nodeName|prod-weu|agentpool/);
  expect(validateRecord(scheduled)).toEqual([]);
  child.child.kill('SIGTERM');
  await child.exited;
});

/**
 * ClusterPeers.check (src/kubernetes/cluster-approval.ts) against an in-memory API server stand-in: which affected
 * VMs are ready, waiting or blocking, including VMs that are not nodes of this cluster.
 */
import { describe, expect, it } from 'vitest';
import { KubernetesError, type NodeApi } from '../../../src/kubernetes/client.ts';
import { ClusterPeers } from '../../../src/kubernetes/cluster-approval.ts';
import { kubernetesSection, PREPARE_ANNOTATION } from '../../../src/kubernetes/config.ts';
import type { NodeView } from '../../../src/kubernetes/node-actions.ts';
import { createLogger } from '../../../src/log.ts';

const SS = 'aks-nodepool1-12345678-vmss';
const node = (
  instance: number,
  prepare?: Record<string, unknown>,
  providerInstance = instance,
): NodeView => ({
  name: `${SS}00000${instance}`,
  unschedulable: false,
  taints: [],
  labels: {},
  annotations: prepare === undefined ? {} : { [PREPARE_ANNOTATION]: JSON.stringify(prepare) },
  providerID: `azure:///subscriptions/s/resourceGroups/mc/providers/Microsoft.Compute/virtualMachineScaleSets/${SS}/virtualMachines/${providerInstance}`,
});

function peers(nodes: NodeView[], vmsOutsideCluster: 'block' | 'ignore' = 'block') {
  const api = {
    readNode: async (name: string) => {
      const found = nodes.find((n) => n.name === name);
      if (found === undefined) throw new KubernetesError(`nodes "${name}" not found`, 404, 'get', 'nodes');
      return found;
    },
  } as unknown as NodeApi;
  const config = kubernetesSection.parse({ clusterApproval: { vmsOutsideCluster } }).clusterApproval;
  return new ClusterPeers({
    api: async () => api,
    nodeName: `${SS}000000`,
    config,
    logger: createLogger({ level: 'silent' }),
  });
}
const signal = new AbortController().signal;

describe('ClusterPeers.check', () => {
  it('ready, preparing, failed and silent nodes', async () => {
    const gate = peers([
      node(1, { E1: { state: 'ready', at: 't' } }),
      node(2, { E1: { state: 'preparing', at: '2030-01-01T00:00:00.000Z' } }),
      node(3, { E1: { state: 'failed', detail: 'prepare hook "node" failed: drain refused' } }),
      node(4, { OTHER: { state: 'ready' } }),
    ]);
    const check = await gate.check(
      'E1',
      [1, 2, 3, 4].map((i) => `${SS}_${i}`),
      signal,
    );
    expect(check.blocked).toEqual([
      {
        vm: `${SS}_3`,
        where: `node ${SS}000003`,
        why: 'its preparation failed: prepare hook "node" failed: drain refused',
      },
    ]);
    expect(check.waiting.map((w) => [w.vm, w.why])).toEqual([
      [`${SS}_2`, 'preparing since 2030-01-01T00:00:00.000Z'],
      [`${SS}_4`, expect.stringContaining('no prepare state published for this event yet')],
    ]);
  });

  it('a VM that is not a node of this cluster blocks (block), or is left out (ignore)', async () => {
    const nodes = [node(1, { E1: { state: 'ready' } }, 7)]; // the name of instance 1, the providerID of instance 7
    const blocked = await peers(nodes).check('E1', [`${SS}_1`, `${SS}_5`], signal);
    expect(blocked.blocked.map((b) => b.why)).toEqual([
      expect.stringMatching(
        /^not a node of this cluster \(node .*000001 is another VM: providerID .*virtualMachines\/7\)/,
      ),
      expect.stringMatching(
        /^not a node of this cluster \(no node .*000005\): its preparation cannot be seen/,
      ),
    ]);
    const ignored = await peers(nodes, 'ignore').check('E1', [`${SS}_1`, `${SS}_5`], signal);
    expect(ignored).toEqual({ blocked: [], waiting: [] });
  });

  it('a node that cannot be read is waited for, not taken as ready', async () => {
    const api = {
      readNode: async () => {
        throw new KubernetesError(
          'Kubernetes get nodes failed: no answer within 30000 ms',
          0,
          'get',
          'nodes',
          {
            timedOut: true,
          },
        );
      },
    } as unknown as NodeApi;
    const config = kubernetesSection.parse({}).clusterApproval;
    const gate = new ClusterPeers({
      api: async () => api,
      nodeName: 'n',
      config,
      logger: createLogger({ level: 'silent' }),
    });
    const check = await gate.check('E1', [`${SS}_1`], signal);
    expect(check.blocked).toEqual([]);
    expect(check.waiting[0]!.why).toContain('cannot read node');
  });
});

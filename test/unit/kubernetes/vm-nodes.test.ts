/**
 * Which node a VM in Resources is (src/kubernetes/vm-nodes.ts): AKS node names from scale-set instance names,
 * confirmed by spec.providerID; and the prepare states nodes publish.
 */
import { describe, expect, it } from 'vitest';
import {
  nodeIsVm,
  nodeNameForVm,
  publishedStates,
  publishValue,
  vmOfProviderId,
} from '../../../src/kubernetes/vm-nodes.ts';

const SS = 'aks-nodepool1-12345678-vmss';
const providerId = (tail: string) =>
  `azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mc_rg_aks_westeurope/providers/Microsoft.Compute/${tail}`;

describe('nodeNameForVm', () => {
  it.each([
    [`${SS}_0`, `${SS}000000`],
    [`${SS}_1`, `${SS}000001`],
    [`${SS}_10`, `${SS}00000a`],
    [`${SS}_36`, `${SS}000010`],
    [`_${SS}_2`, `${SS}000002`], // pre-2017-08-01 api-versions prefix names with _
    ['AKS-NodePool1-12345678-0', 'aks-nodepool1-12345678-0'], // availability-set pools: the VM name, lower case
  ])('%s → %s', (vm, node) => {
    expect(nodeNameForVm(vm)).toBe(node);
  });
});

describe('providerID', () => {
  it('names scale-set instances and plain VMs; the node must be the VM', () => {
    expect(vmOfProviderId(providerId(`virtualMachineScaleSets/${SS}/virtualMachines/10`))).toBe(`${SS}_10`);
    expect(vmOfProviderId(providerId('virtualMachines/AKS-NodePool1-12345678-0'))).toBe(
      'aks-nodepool1-12345678-0',
    );
    expect(vmOfProviderId(undefined)).toBeUndefined();
    expect(vmOfProviderId('kind://docker/kind/kind-control-plane')).toBeUndefined();
    const node = { providerID: providerId(`virtualMachineScaleSets/${SS}/virtualMachines/1`) };
    expect(nodeIsVm(node, `${SS}_1`)).toBe(true);
    expect(nodeIsVm(node, `${SS.toUpperCase()}_1`)).toBe(true);
    // A node that only shares the name (another scale set's instance, another cluster's VM) is not the VM.
    expect(nodeIsVm(node, `${SS}_2`)).toBe(false);
    expect(nodeIsVm({ providerID: undefined }, `${SS}_1`)).toBe(false);
  });
});

describe('published prepare states', () => {
  it('round-trips, keeps the time of an unchanged state and drops unreadable entries', () => {
    const first = publishValue(
      new Map([
        ['E2', { state: 'preparing' as const }],
        ['E1', { state: 'ready' as const }],
      ]),
      {},
      '2030-01-01T00:00:00.000Z',
    )!;
    const annotations = { 'scheduled-events-forwarder/prepare': first };
    expect(publishedStates({ annotations })).toEqual({
      E1: { state: 'ready', at: '2030-01-01T00:00:00.000Z' },
      E2: { state: 'preparing', at: '2030-01-01T00:00:00.000Z' },
    });
    const second = publishValue(
      new Map([
        ['E1', { state: 'ready' as const }],
        ['E2', { state: 'failed' as const, detail: 'prepare hook "node" failed: drain refused' }],
      ]),
      publishedStates({ annotations }),
      '2030-01-01T00:01:00.000Z',
    )!;
    expect(publishedStates({ annotations: { 'scheduled-events-forwarder/prepare': second } })).toEqual({
      E1: { state: 'ready', at: '2030-01-01T00:00:00.000Z' },
      E2: {
        state: 'failed',
        detail: 'prepare hook "node" failed: drain refused',
        at: '2030-01-01T00:01:00.000Z',
      },
    });
    expect(publishValue(new Map(), {}, 'x')).toBeNull();
    expect(
      publishedStates({ annotations: { 'scheduled-events-forwarder/prepare': '{"E1":{"state":"done"}}' } }),
    ).toEqual({});
    expect(publishedStates({ annotations: { 'scheduled-events-forwarder/prepare': 'not json' } })).toEqual(
      {},
    );
  });
});

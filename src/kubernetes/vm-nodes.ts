/**
 * Which Node of this cluster a VM named in a Scheduled Event's Resources is, and what its forwarder published about
 * its preparation — pure, for cluster-aware approval (src/kubernetes/cluster-approval.ts, docs/kubernetes.md).
 *
 * The mapping follows AKS: a scale-set instance `<scaleSet>_<instanceId>` runs the node `<scaleSet>` followed by the
 * instance id in base 36, six digits (`aks-nodepool1-12345678-vmss_10` → `aks-nodepool1-12345678-vmss00000a`, the
 * computer name Azure gives it, which the kubelet registers); any other VM runs the node of its own name, in lower
 * case (availability-set node pools). The node found under that name must say it is that VM: its
 * `spec.providerID` (`azure:///subscriptions/…/virtualMachineScaleSets/<scaleSet>/virtualMachines/<id>` or
 * `…/virtualMachines/<name>`) names the same scale set and instance, or the same VM. So reading one node by name
 * (the `get nodes` the forwarder already has) is enough, and a node that happens to share a name is never taken
 * for the VM.
 */
import type { PrepareState } from '../approval/index.ts';
import { PREPARE_ANNOTATION } from './config.ts';
import type { NodeView } from './node-actions.ts';

const SCALE_SET_INSTANCE = /^(.+)_(\d+)$/;

/** Resource-name comparison as everywhere: case-insensitive, without the pre-2017 leading '_'. */
const normalise = (name: string) => name.replace(/^_/, '').toLowerCase();

/** The node name AKS gives the VM `vmName` (see the module comment). */
export function nodeNameForVm(vmName: string): string {
  const name = normalise(vmName);
  const instance = SCALE_SET_INSTANCE.exec(name);
  if (instance === null) return name;
  return `${instance[1]}${Number(instance[2]).toString(36).padStart(6, '0')}`;
}

/** The VM an Azure providerID names (`<scaleSet>_<instanceId>` or the VM name), lower case; undefined if none. */
export function vmOfProviderId(providerID: string | undefined): string | undefined {
  if (providerID === undefined) return undefined;
  const path = providerID.replace(/^azure:\/\//i, '');
  const scaleSet = /\/virtualMachineScaleSets\/([^/]+)\/virtualMachines\/(\d+)$/i.exec(path);
  if (scaleSet !== null) return `${scaleSet[1]}_${Number(scaleSet[2])}`.toLowerCase();
  const vm = /\/virtualMachines\/([^/]+)$/i.exec(path);
  return vm === null ? undefined : vm[1]!.toLowerCase();
}

/** Whether `node` is the VM `vmName` (its providerID names it). */
export function nodeIsVm(node: Pick<NodeView, 'providerID'>, vmName: string): boolean {
  return vmOfProviderId(node.providerID) === normalise(vmName);
}

/** The prepare states a node's forwarder published (PREPARE_ANNOTATION), by EventId; unreadable: none. */
export function publishedStates(node: Pick<NodeView, 'annotations'>): Record<string, PublishedState> {
  const text = node.annotations[PREPARE_ANNOTATION];
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    const states: Record<string, PublishedState> = {};
    for (const [eventId, entry] of Object.entries(value as Record<string, unknown>)) {
      const state = (entry as { state?: unknown } | null)?.state;
      if (state !== 'preparing' && state !== 'ready' && state !== 'failed') continue;
      const { detail, at } = entry as { detail?: unknown; at?: unknown };
      states[eventId] = {
        state,
        ...(typeof detail === 'string' ? { detail } : {}),
        ...(typeof at === 'string' ? { at } : {}),
      };
    }
    return states;
  } catch {
    return {};
  }
}

/** A prepare state as published on a Node: when it became that (ISO). */
export interface PublishedState extends PrepareState {
  at?: string;
}

/**
 * The annotation value publishing `states` (JSON by EventId, each with the time it became that state: the time
 * of `previous` when unchanged, else `nowIso`), or null when there is nothing to publish (the annotation is removed).
 */
export function publishValue(
  states: ReadonlyMap<string, PrepareState>,
  previous: Readonly<Record<string, PublishedState>>,
  nowIso: string,
): string | null {
  if (states.size === 0) return null;
  const out: Record<string, PublishedState> = {};
  for (const [eventId, state] of [...states].sort(([a], [b]) => a.localeCompare(b))) {
    const before = previous[eventId];
    const same = before !== undefined && before.state === state.state && before.detail === state.detail;
    out[eventId] = {
      state: state.state,
      ...(state.detail === undefined ? {} : { detail: state.detail.slice(0, 512) }),
      at: same && before.at !== undefined ? before.at : nowIso,
    };
  }
  return JSON.stringify(out);
}

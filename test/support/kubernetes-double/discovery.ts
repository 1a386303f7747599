/**
 * The resources the double serves and their discovery documents (the legacy, non-aggregated format: kubectl and
 * client-go ask for aggregated discovery first and fall back to these when the server answers plain JSON, as an
 * API server without aggregated discovery does).
 */

export interface ResourceDef {
  group: string; // '' for core
  version: string;
  resource: string; // plural: nodes, pods, ...
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  verbs: string[];
  subresources: Record<string, { kind: string; group?: string; version?: string; verbs: string[] }>;
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const RESOURCES: ResourceDef[] = [
  {
    group: '',
    version: 'v1',
    resource: 'nodes',
    singular: 'node',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    verbs: ALL_VERBS,
    subresources: { status: { kind: 'Node', verbs: ['get', 'patch', 'update'] } },
  },
  {
    group: '',
    version: 'v1',
    resource: 'pods',
    singular: 'pod',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    verbs: ALL_VERBS,
    subresources: {
      eviction: { kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
      status: { kind: 'Pod', verbs: ['get', 'patch', 'update'] },
    },
  },
  {
    group: '',
    version: 'v1',
    resource: 'events',
    singular: 'event',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    verbs: ALL_VERBS,
    subresources: {},
  },
  {
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    singular: 'daemonset',
    kind: 'DaemonSet',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    verbs: ALL_VERBS,
    subresources: { status: { kind: 'DaemonSet', verbs: ['get', 'patch', 'update'] } },
  },
  {
    group: 'policy',
    version: 'v1',
    resource: 'poddisruptionbudgets',
    singular: 'poddisruptionbudget',
    kind: 'PodDisruptionBudget',
    namespaced: true,
    shortNames: ['pdb'],
    verbs: ALL_VERBS,
    subresources: { status: { kind: 'PodDisruptionBudget', verbs: ['get', 'patch', 'update'] } },
  },
  {
    group: 'events.k8s.io',
    version: 'v1',
    resource: 'events',
    singular: 'event',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    verbs: ALL_VERBS,
    subresources: {},
  },
];

export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.4',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-04-22T00:00:00Z',
  goVersion: 'go1.23.8',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export function coreVersions(serverAddress: string): unknown {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupDoc(name: string): unknown {
  const versions = [...new Set(RESOURCES.filter((r) => r.group === name).map((r) => r.version))];
  const entries = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: entries, preferredVersion: entries[0] };
}

export function groupNames(): string[] {
  return [...new Set(RESOURCES.map((r) => r.group).filter((g) => g !== ''))];
}

export function apiGroupList(): unknown {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groupNames().map(groupDoc) };
}

export function apiGroup(name: string): unknown {
  return { kind: 'APIGroup', apiVersion: 'v1', ...(groupDoc(name) as object) };
}

export function resourceList(group: string, version: string): unknown | undefined {
  const defs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (defs.length === 0) return undefined;
  const resources: unknown[] = [];
  for (const def of defs) {
    resources.push({
      name: def.resource,
      singularName: def.singular,
      namespaced: def.namespaced,
      kind: def.kind,
      verbs: def.verbs,
      ...(def.shortNames ? { shortNames: def.shortNames } : {}),
      ...(def.categories ? { categories: def.categories } : {}),
      storageVersionHash: Buffer.from(`${group}/${def.resource}`).toString('base64').slice(0, 11),
    });
    for (const [name, sub] of Object.entries(def.subresources)) {
      resources.push({
        name: `${def.resource}/${name}`,
        singularName: '',
        namespaced: def.namespaced,
        ...(sub.group !== undefined ? { group: sub.group, version: sub.version } : {}),
        kind: sub.kind,
        verbs: sub.verbs,
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources,
  };
}

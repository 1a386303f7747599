/**
 * The Kubernetes API permissions the forwarder's node actions need — exactly what the ClusterRole in
 * packaging/kubernetes/rbac.yaml grants (test/integration/deployment/kubernetes-manifests.test.ts checks that the
 * role covers this list and grants nothing more). Keep it true to the calls src/kubernetes makes: a new API call
 * adds its (verb, group, resource) here and to the ClusterRole.
 */

/** One RBAC permission: a verb on a resource (or resource/subresource) of an API group ('' = core). */
export interface KubernetesPermission {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
}

export const REQUIRED_PERMISSIONS: readonly KubernetesPermission[] = [
  // Read the node, cordon / taint / label / annotate it.
  { verb: 'get', group: '', resource: 'nodes' },
  { verb: 'patch', group: '', resource: 'nodes' },
  // The node condition that says an event is scheduled.
  { verb: 'patch', group: '', resource: 'nodes/status' },
  // Drain: the node's pods (field selector spec.nodeName, listed again while they terminate), and evictions.
  { verb: 'list', group: '', resource: 'pods' },
  { verb: 'create', group: '', resource: 'pods/eviction' },
  // Kubernetes Events about the node (core/v1).
  { verb: 'create', group: '', resource: 'events' },
];

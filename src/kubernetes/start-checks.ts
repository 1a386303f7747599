/**
 * What `kubernetes.enabled` needs before the agent can start, checked without the network and without loading any
 * other Kubernetes module (the start path and `config validate` import this file only): the node name, and a
 * credential to reach the API server — the kubeconfig file of `kubernetes.kubeconfig`, else the in-cluster
 * ServiceAccount (KUBERNETES_SERVICE_HOST/PORT set by the kubelet, the token mounted in the pod). Each problem is one
 * line naming what is missing and the fix. See docs/kubernetes.md#credentials.
 */
import type { KubernetesConfig } from './config.ts';

type Env = Record<string, string | undefined>;

/** Where the kubelet mounts a pod's ServiceAccount token (the path @kubernetes/client-node's in-cluster config reads). */
export const SERVICE_ACCOUNT_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** The node name: `kubernetes.nodeName`, else NODE_NAME (downward API). */
export function resolveNodeName(config: KubernetesConfig, env: Env = process.env): string | undefined {
  return config.nodeName ?? (env.NODE_NAME === '' ? undefined : env.NODE_NAME);
}

const fileExists = (path: string): boolean => process.getBuiltinModule('node:fs').existsSync(path);

/**
 * Why the agent cannot start with `config` in `env` (none when `kubernetes.enabled` is false): the node name is
 * unknown; no credential (no `kubernetes.kubeconfig`, and not in a pod with a ServiceAccount); a configured
 * kubeconfig file that does not exist.
 */
export function kubernetesStartProblems(
  config: KubernetesConfig,
  env: Env = process.env,
  exists: (path: string) => boolean = fileExists,
): string[] {
  if (!config.enabled) return [];
  const problems: string[] = [];
  if (resolveNodeName(config, env) === undefined) {
    problems.push(
      'kubernetes.enabled: the node name is unknown: set kubernetes.nodeName or the NODE_NAME environment variable (downward API: fieldRef spec.nodeName)',
    );
  }
  const credential = credentialProblem(config, env, exists);
  if (credential !== undefined) problems.push(credential);
  return problems;
}

function credentialProblem(
  config: KubernetesConfig,
  env: Env,
  exists: (path: string) => boolean,
): string | undefined {
  if (config.kubeconfig !== undefined) {
    if (exists(config.kubeconfig)) return undefined;
    return `kubernetes.kubeconfig: the file ${config.kubeconfig} does not exist: give the path of a kubeconfig file, or remove the key inside a pod to use its ServiceAccount`;
  }
  const missing: string[] = [];
  if (!env.KUBERNETES_SERVICE_HOST) missing.push('KUBERNETES_SERVICE_HOST is not set');
  if (!env.KUBERNETES_SERVICE_PORT) missing.push('KUBERNETES_SERVICE_PORT is not set');
  if (!exists(SERVICE_ACCOUNT_TOKEN_PATH))
    missing.push(`there is no ServiceAccount token at ${SERVICE_ACCOUNT_TOKEN_PATH}`);
  if (missing.length === 0) return undefined;
  return (
    `kubernetes.enabled: no credential for the Kubernetes API server: kubernetes.kubeconfig is not set and this is not a pod with a ServiceAccount (${missing.join('; ')}): ` +
    'run the forwarder as the DaemonSet in packaging/kubernetes (the kubelet sets KUBERNETES_SERVICE_HOST/PORT and mounts the token; keep automountServiceAccountToken on), ' +
    'or set kubernetes.kubeconfig to a kubeconfig file for this node'
  );
}

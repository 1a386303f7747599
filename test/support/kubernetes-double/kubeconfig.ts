/**
 * A kubeconfig for the Kubernetes double: the double's certificate as certificate-authority-data (no
 * insecure-skip-tls-verify needed) and a bearer token. Read by kubectl and by @kubernetes/client-node's
 * KubeConfig.loadFromFile / loadFromString.
 */
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

export function kubeconfigYaml(
  double: { url: string; ca: string },
  token: string,
  options: { namespace?: string; user?: string } = {},
): string {
  const user = options.user ?? 'test-user';
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'kubernetes-double',
        cluster: {
          server: double.url,
          'certificate-authority-data': Buffer.from(double.ca).toString('base64'),
        },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [
      {
        name: 'kubernetes-double',
        context: {
          cluster: 'kubernetes-double',
          user,
          ...(options.namespace ? { namespace: options.namespace } : {}),
        },
      },
    ],
    'current-context': 'kubernetes-double',
    preferences: {},
  });
}

/** Writes the kubeconfig to `file` (mode 0600) and returns `file`. */
export function writeKubeconfig(
  file: string,
  double: { url: string; ca: string },
  token: string,
  options: { namespace?: string; user?: string } = {},
): string {
  writeFileSync(file, kubeconfigYaml(double, token, options), { mode: 0o600 });
  return file;
}

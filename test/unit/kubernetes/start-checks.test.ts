/**
 * What `kubernetes.enabled` needs before the agent starts, checked without the network (src/kubernetes/start-checks.ts):
 * a node name and a credential — each missing one named with its fix.
 */
import { describe, expect, it } from 'vitest';
import { kubernetesSection } from '../../../src/kubernetes/config.ts';
import { kubernetesStartProblems, SERVICE_ACCOUNT_TOKEN_PATH } from '../../../src/kubernetes/start-checks.ts';

const config = (section: Record<string, unknown>) => kubernetesSection.parse({ enabled: true, ...section });
const inPod = {
  NODE_NAME: 'aks-nodepool1-0',
  KUBERNETES_SERVICE_HOST: '10.0.0.1',
  KUBERNETES_SERVICE_PORT: '443',
};
const tokenMounted = (path: string) => path === SERVICE_ACCOUNT_TOKEN_PATH;
const nothing = () => false;

describe('kubernetesStartProblems', () => {
  it('accepts a pod with its ServiceAccount, and a kubeconfig file that exists', () => {
    expect(kubernetesStartProblems(config({}), inPod, tokenMounted)).toEqual([]);
    expect(
      kubernetesStartProblems(
        config({ kubeconfig: '/etc/k/config' }),
        { NODE_NAME: 'n' },
        (p) => p === '/etc/k/config',
      ),
    ).toEqual([]);
  });

  it('checks nothing when kubernetes is not enabled', () => {
    expect(kubernetesStartProblems(kubernetesSection.parse({}), {}, nothing)).toEqual([]);
  });

  it('NODE_NAME set, no kubeconfig, no ServiceAccount: names each missing part and both fixes', () => {
    const [problem, ...rest] = kubernetesStartProblems(config({}), { NODE_NAME: 'aks-nodepool1-0' }, nothing);
    expect(rest).toEqual([]);
    expect(problem).toContain('no credential for the Kubernetes API server');
    expect(problem).toContain('KUBERNETES_SERVICE_HOST is not set');
    expect(problem).toContain(`there is no ServiceAccount token at ${SERVICE_ACCOUNT_TOKEN_PATH}`);
    expect(problem).toContain('packaging/kubernetes');
    expect(problem).toContain('set kubernetes.kubeconfig');
  });

  it('a pod whose token is not mounted (automountServiceAccountToken: false) is told so', () => {
    const problems = kubernetesStartProblems(config({}), inPod, nothing);
    expect(problems).toHaveLength(1);
    expect(problems[0]).not.toContain('KUBERNETES_SERVICE_HOST is not set');
    expect(problems[0]).toContain('automountServiceAccountToken');
  });

  it('a kubeconfig path that does not exist, and an unknown node name, are both reported', () => {
    expect(kubernetesStartProblems(config({ kubeconfig: '/nope/kubeconfig' }), {}, nothing)).toEqual([
      expect.stringContaining('the node name is unknown'),
      expect.stringMatching(/^kubernetes\.kubeconfig: the file \/nope\/kubeconfig does not exist/),
    ]);
  });
});

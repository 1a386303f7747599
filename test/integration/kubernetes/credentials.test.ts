/**
 * #32 item 5: `run` with `kubernetes.enabled` and NODE_NAME set, but neither a kubeconfig nor an in-cluster
 * ServiceAccount, refuses to start (exit 2) naming the missing credential and the fix — instead of running on with
 * "Kubernetes get nodes failed: Invalid URL" in its logs.
 */
import { afterAll, expect, it } from 'vitest';
import { runCli } from '../../support/child.ts';
import { configFileWriter } from '../../support/config-files.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-k8s-cred-');
afterAll(() => tmp.cleanup());
const writeConfig = configFileWriter(tmp.dir);

it('NODE_NAME set, no kubeconfig, no ServiceAccount: run exits 2 naming the missing credential and the fix', async () => {
  const config = writeConfig({
    imds: { endpoint: 'http://127.0.0.1:9' },
    sinks: [{ name: 'out', type: 'stdout' }],
    kubernetes: { enabled: true },
  });
  const { code, stderr } = await runCli(['run', '--config', config], {
    NODE_NAME: 'aks-nodepool1-12345678-vmss000000',
    KUBERNETES_SERVICE_HOST: '',
    KUBERNETES_SERVICE_PORT: '',
  });
  expect(code).toBe(2);
  expect(stderr).toContain('no credential for the Kubernetes API server');
  expect(stderr).toContain('KUBERNETES_SERVICE_HOST is not set');
  expect(stderr).toContain('set kubernetes.kubeconfig');
  expect(stderr).not.toContain('Invalid URL');
});

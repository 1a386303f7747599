/**
 * The Kubernetes manifests in packaging/kubernetes: every document parses, has a known kind and apiVersion, the
 * DaemonSets (Linux and Windows) run as the ServiceAccount the ClusterRoleBinding binds, get NODE_NAME from the
 * downward API and stay on the host network, and the ClusterRole grants exactly REQUIRED_PERMISSIONS
 * (src/kubernetes/rbac.ts): everything node actions call, nothing more (least privilege).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REQUIRED_PERMISSIONS } from '../../../src/kubernetes/rbac.ts';
import { REPO } from '../../support/child.ts';

const DIR = join(REPO, 'packaging', 'kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are open-ended YAML; the assertions check their shape.
type Manifest = { [key: string]: any };

const API_VERSIONS: Record<string, string> = {
  Namespace: 'v1',
  ConfigMap: 'v1',
  ServiceAccount: 'v1',
  ClusterRole: 'rbac.authorization.k8s.io/v1',
  ClusterRoleBinding: 'rbac.authorization.k8s.io/v1',
  DaemonSet: 'apps/v1',
  PodMonitor: 'monitoring.coreos.com/v1',
};
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'));
const manifests: (Manifest & { file: string })[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(join(DIR, file), 'utf8'), { uniqueKeys: true }).map((doc, index) => {
    if (doc.errors.length > 0)
      throw new Error(`${file} document ${index}: ${doc.errors.map(String).join('; ')}`);
    if (doc.warnings.length > 0)
      throw new Error(`${file} document ${index}: ${doc.warnings.map(String).join('; ')}`);
    return { ...(doc.toJS() as Manifest), file };
  }),
);
const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const one = (kind: string) => {
  const found = ofKind(kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
};

const key = (p: { verb: string; group: string; resource: string }) =>
  `${p.verb} ${p.group || 'core'} ${p.resource}`;

/** Expands ClusterRole rules into (verb, group, resource) triples. */
function granted(role: Manifest): string[] {
  const out: string[] = [];
  for (const rule of role.rules ?? []) {
    for (const group of rule.apiGroups ?? [])
      for (const resource of rule.resources ?? [])
        for (const verb of rule.verbs ?? []) out.push(key({ verb, group, resource }));
  }
  return out.sort();
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

describe('packaging/kubernetes manifests', () => {
  it('parse, and every document has a known kind, its apiVersion, a name and the right scope', () => {
    expect(files.sort()).toEqual([
      'daemonset-windows.yaml',
      'daemonset.yaml',
      'podmonitor.yaml',
      'rbac.yaml',
    ]);
    for (const m of manifests) {
      expect(API_VERSIONS[m.kind], `${m.file}: kind ${m.kind}`).toBeDefined();
      expect(m.apiVersion, `${m.file}: ${m.kind}`).toBe(API_VERSIONS[m.kind]);
      expect(m.metadata?.name, `${m.file}: ${m.kind} name`).toMatch(/^[a-z0-9-]+$/);
      if (CLUSTER_SCOPED.has(m.kind)) expect(m.metadata.namespace, `${m.file}: ${m.kind}`).toBeUndefined();
      else expect(m.metadata.namespace, `${m.file}: ${m.kind}`).toBe(one('Namespace').metadata.name);
    }
    expect(ofKind('DaemonSet')).toHaveLength(2);
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'PodMonitor', 'ConfigMap'])
      one(kind);
  });

  it('binds the ClusterRole to the ServiceAccount', () => {
    const account = one('ServiceAccount');
    const binding = one('ClusterRoleBinding');
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: one('ClusterRole').metadata.name,
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: account.metadata.name, namespace: account.metadata.namespace },
    ]);
  });

  it('the ClusterRole grants every permission node actions need, and nothing more', () => {
    const role = one('ClusterRole');
    const required = REQUIRED_PERMISSIONS.map(key).sort();
    const grants = granted(role);
    for (const permission of required) expect(grants, `missing ${permission}`).toContain(permission);
    // Least privilege: no extra verb or resource, no wildcard, no resourceNames/nonResourceURLs surprises.
    expect(grants).toEqual(required);
    expect(JSON.stringify(role.rules)).not.toContain('*');
    expect(role.aggregationRule).toBeUndefined();
    for (const rule of role.rules)
      expect(Object.keys(rule).sort()).toEqual(['apiGroups', 'resources', 'verbs']);
    // And the list is a least-privilege list too: no duplicates, no write verb on pods themselves.
    expect(new Set(required).size).toBe(required.length);
    expect(required.filter((p) => / core pods$/.test(p))).toEqual(['list core pods']);
  });

  describe.each([
    ['linux', 'daemonset.yaml'],
    ['windows', 'daemonset-windows.yaml'],
  ])('the %s DaemonSet', (os, file) => {
    const ds = () => ofKind('DaemonSet').find((d) => d.file === file)!;
    const pod = () => ds().spec.template.spec;

    it(`runs on ${os} nodes only, as the ServiceAccount, on the host network (IMDS answers only the VM)`, () => {
      expect(pod().nodeSelector).toEqual({ 'kubernetes.io/os': os });
      expect(pod().serviceAccountName).toBe(one('ServiceAccount').metadata.name);
      expect(pod().automountServiceAccountToken).not.toBe(false);
      expect(pod().hostNetwork).toBe(true);
      expect(pod().tolerations).toContainEqual({ operator: 'Exists' });
    });

    it('sets NODE_NAME from the downward API (spec.nodeName)', () => {
      const [container] = pod().containers;
      expect(container.env).toContainEqual({
        name: 'NODE_NAME',
        valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
      });
    });

    it('selects its own pods and only those', () => {
      const labels = ds().spec.template.metadata.labels;
      expect(matches(ds().spec.selector.matchLabels, labels)).toBe(true);
      for (const other of ofKind('DaemonSet').filter((d) => d !== ds())) {
        expect(matches(ds().spec.selector.matchLabels, other.spec.template.metadata.labels)).toBe(false);
      }
    });

    it('mounts the ConfigMap and exposes the telemetry port the PodMonitor scrapes', () => {
      const configVolume = pod().volumes.find((v: Manifest) => v.configMap);
      expect(configVolume.configMap.name).toBe(one('ConfigMap').metadata.name);
      const [container] = pod().containers;
      expect(container.ports).toContainEqual({ name: 'telemetry', containerPort: 9464 });
      expect(matches(one('PodMonitor').spec.selector.matchLabels, ds().spec.template.metadata.labels)).toBe(
        true,
      );
    });
  });

  it('the Windows DaemonSet is a HostProcess pod', () => {
    const ds = ofKind('DaemonSet').find((d) => d.file === 'daemonset-windows.yaml')!;
    expect(ds.spec.template.spec.securityContext.windowsOptions).toMatchObject({ hostProcess: true });
    expect(one('Namespace').metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'privileged',
    });
  });

  it('the PodMonitor scrapes /metrics on the telemetry port in the forwarder namespace', () => {
    const monitor = one('PodMonitor');
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: [one('Namespace').metadata.name] });
    expect(monitor.spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({ port: 'telemetry', path: '/metrics', scheme: 'http' }),
    ]);
  });
});

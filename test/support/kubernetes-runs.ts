/**
 * The Kubernetes tier's end-to-end runs: a real `node src/cli/main.ts run --config` child per run, polling the
 * IMDS simulator every 200 ms and writing records to a file sink, with the test's own `kubernetes` (and
 * `approval`) sections. Registers the cleanup (SIGKILL of every child still running, the test's own servers via
 * `closeServers`, the temporary directory) with the calling test file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { stringify } from 'yaml';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { type ForwarderChild, readFileSinkRecords, spawnCli } from './child.ts';
import { type KubernetesDouble, writeKubeconfig } from './kubernetes-double/index.ts';
import { makeTempDir } from './tmp.ts';

export interface KubernetesRun {
  child: ForwarderChild;
  /** The file sink's JSONL. */
  out: string;
  configFile: string;
  /** This run's own directory (for a kubeconfig and the state directory). */
  dir: string;
}

export interface KubernetesRuns {
  /**
   * Writes the configuration (`sections(dir)` beside imds, stateDir and the file sink) and starts `run --config`;
   * resolves once the child is ready.
   */
  start(
    imdsUrl: string,
    sections: (dir: string) => Record<string, unknown>,
    env?: Record<string, string>,
  ): Promise<KubernetesRun>;
  /** Starts `run --config` again on an earlier run's configuration (a restart); resolves once it is ready. */
  restart(run: KubernetesRun): Promise<ForwarderChild>;
}

export function kubernetesRuns(prefix: string, closeServers: () => Promise<void>): KubernetesRuns {
  const tmp = makeTempDir(prefix);
  const children: ForwarderChild[] = [];
  let runs = 0;
  afterEach(async () => {
    for (const c of children.splice(0))
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await closeServers();
  });
  afterAll(() => tmp.cleanup());
  const spawnRun = async (configFile: string, env: Record<string, string> = {}) => {
    const child = spawnCli(['run', '--config', configFile], env);
    children.push(child);
    await child.ready;
    return child;
  };
  return {
    async start(imdsUrl, sections, env = {}) {
      const dir = join(tmp.dir, `run-${++runs}`);
      mkdirSync(dir);
      const out = join(dir, 'records.jsonl');
      const configFile = join(dir, 'forwarder.yaml');
      writeFileSync(
        configFile,
        stringify({
          imds: { endpoint: imdsUrl, pollIntervalMs: 200 },
          stateDir: join(dir, 'state'),
          sinks: [{ name: 'file', type: 'file', path: out }],
          ...sections(dir),
        }),
      );
      return { child: await spawnRun(configFile, env), out, configFile, dir };
    },
    restart: (run) => spawnRun(run.configFile),
  };
}

/** The record of `id` (a subject) with `transition` the file sink holds, if any. */
export function recordIn(file: string, id: string, transition: string): LifecycleRecord | undefined {
  return readFileSinkRecords(file).find((r) => r.subject === id && r.transition === transition);
}

export interface NodeHookSectionsOptions {
  /** The node this forwarder runs on (kubernetes.nodeName). */
  nodeName: string;
  /** Bearer token of the kubeconfig (default the double's admin token). */
  token?: string;
  /** kubernetes.actions (merged over a fast PDB retry of 100 ms). */
  actions?: Record<string, unknown>;
  /** Further keys of the kubernetes section. */
  kubernetes?: Record<string, unknown>;
  /** Further keys of the approval section (leader, rerunHooksAfterRestart, ...). */
  approval?: Record<string, unknown>;
  /** The prepare hook's timeoutMs (default the schema's). */
  prepareTimeoutMs?: number;
}

/**
 * The `kubernetes` and `approval` sections of a forwarder that drains its node before approving every event: one
 * rule `drain-then-approve` (approve-after-hooks), the built-in `kubernetes-node` hook in prepare and recover, a
 * kubeconfig for the double written into `dir`.
 */
export function nodeHookSections(
  k8s: KubernetesDouble,
  dir: string,
  options: NodeHookSectionsOptions,
): Record<string, unknown> {
  return {
    kubernetes: kubernetesSectionFor(k8s, dir, options),
    approval: {
      rules: [{ name: 'drain-then-approve', match: {}, action: 'approve-after-hooks' }],
      hooks: {
        prepare: [
          {
            name: 'node',
            builtin: 'kubernetes-node',
            ...(options.prepareTimeoutMs === undefined ? {} : { timeoutMs: options.prepareTimeoutMs }),
          },
        ],
        recover: [{ name: 'node', builtin: 'kubernetes-node' }],
      },
      ...options.approval,
    },
  };
}

/**
 * A `kubernetes` section for the node `options.nodeName` of the double (a kubeconfig with the admin token, or
 * `options.token`, written into `dir`; drain PDB retries every 100 ms), with `options.kubernetes` over it.
 */
export function kubernetesSectionFor(
  k8s: KubernetesDouble,
  dir: string,
  options: Pick<NodeHookSectionsOptions, 'nodeName' | 'token' | 'actions' | 'kubernetes'>,
): Record<string, unknown> {
  const { drain, ...actions } = (options.actions ?? {}) as { drain?: Record<string, unknown> };
  return {
    enabled: true,
    nodeName: options.nodeName,
    kubeconfig: writeKubeconfig(join(dir, 'kubeconfig'), k8s, options.token ?? k8s.adminToken),
    actions: { ...actions, drain: { retryIntervalMs: 100, ...drain } },
    ...options.kubernetes,
  };
}

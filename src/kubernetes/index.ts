/**
 * Kubernetes node agent (docs/kubernetes.md): the built-in `kubernetes-node` hook for approval, the reporter of
 * node Events and the VMEventScheduled condition, and the node context put in records (enrichment.ts). Nothing
 * here loads @kubernetes/client-node: the client module (src/kubernetes/client.ts) is imported on the first API
 * call, and only when `kubernetes.enabled` is true.
 */
import type { ApprovalNotice, BuiltinHooks, CommitObserver, PeerGate } from '../approval/index.ts';
import type { KubernetesRecordContext } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { NodeApi } from './client.ts';
import { ClusterPeers } from './cluster-approval.ts';
import type { KubernetesConfig } from './config.ts';
import { NodeEnrichment } from './enrichment.ts';
import { noticeEvent } from './node-actions.ts';
import { runNodeHook } from './node-hook.ts';
import { NodeReporter } from './reporter.ts';
import { kubernetesStartProblems, resolveNodeName } from './start-checks.ts';

export {
  ACTIONS_ANNOTATION,
  CONDITION_TYPE,
  DEFAULT_PER_EVENT_TYPE,
  EXCLUDE_LB_LABEL,
  type KubernetesConfig,
  kubernetesSection,
} from './config.ts';
export { kubernetesStartProblems, resolveNodeName } from './start-checks.ts';

export interface KubernetesAgent {
  nodeName: string;
  builtins: BuiltinHooks;
  observer: CommitObserver;
  /** Cluster-aware approval (kubernetes.clusterApproval; undefined when disabled). */
  peers: PeerGate | undefined;
  /** Approval's notices as node Events (ApprovalRunnerOptions.notify). */
  notify(notice: ApprovalNotice, notBefore: string | null): void;
  /** `data.kubernetes` for the records made now (an input of the transform; cached, no I/O). */
  recordContext(): KubernetesRecordContext;
  /**
   * Starts the enrichment: the first read of the node labels (when `kubernetes.labels` is set) and its periodic
   * refresh. Resolves after that first read (or its bounded wait); never rejects.
   */
  start(): Promise<void>;
  stop(): void;
}

export interface KubernetesAgentOptions {
  logger: Logger;
  /** This VM's name (IMDS compute.name), to tell which events affect this node. */
  vmName: () => string | undefined;
  env?: Record<string, string | undefined>;
  /** Tests: an API instead of the client built from the configuration. */
  api?: () => Promise<NodeApi>;
  /** Tests: whether a file exists (the credential check; default the file system). */
  exists?: (path: string) => boolean;
}

/**
 * The agent, or undefined when `kubernetes.enabled` is false. Throws, naming every problem, when it cannot start
 * (src/kubernetes/start-checks.ts: the node name is unknown, no credential for the API server).
 */
export function createKubernetesAgent(
  config: KubernetesConfig,
  options: KubernetesAgentOptions,
): KubernetesAgent | undefined {
  if (!config.enabled) return undefined;
  const problems = kubernetesStartProblems(config, options.env, options.exists);
  const nodeName = resolveNodeName(config, options.env);
  if (problems.length > 0 || nodeName === undefined) throw new Error(problems.join('; '));
  let loaded: Promise<NodeApi> | undefined;
  const api =
    options.api ??
    (() => {
      loaded ??= import('./client.ts').then(
        (m) => m.createNodeApi(config.kubeconfig, config.requestTimeoutMs),
        (error: unknown) => {
          throw missingClientError(error) ?? error;
        },
      );
      return loaded;
    });
  const reporter = new NodeReporter({
    api,
    nodeName,
    config,
    logger: options.logger,
    vmName: options.vmName,
  });
  const enrichment = new NodeEnrichment({ api, nodeName, config, logger: options.logger });
  const peers = config.clusterApproval.enabled
    ? new ClusterPeers({ api, nodeName, config: config.clusterApproval, logger: options.logger })
    : undefined;
  return {
    nodeName,
    recordContext: () => enrichment.current(),
    start: () => enrichment.start(),
    stop: () => {
      enrichment.stop();
      void peers?.stop();
    },
    peers,
    builtins: {
      run: (hook, run) =>
        runNodeHook(hook, run, {
          api,
          nodeName,
          config,
          report: (reason, message, type) => reporter.report(reason, message, type),
        }),
    },
    observer: reporter,
    notify: (notice, notBefore) => {
      const { reason, type, message } = noticeEvent(notice, notBefore);
      reporter.report(reason, message, type);
    },
  };
}

/**
 * @kubernetes/client-node is an optional peer dependency of the npm package (only Kubernetes nodes need it:
 * docs/dependencies.md); the release executable and the container image include it. When it is missing, every
 * node action and label read fails with what to install.
 */
export function missingClientError(error: unknown): Error | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined;
  if (!errorMessage(error).includes('@kubernetes/client-node')) return undefined;
  return new Error(
    'kubernetes.enabled needs @kubernetes/client-node, an optional peer dependency that npm does not install: run ' +
      '`npm install -g @kubernetes/client-node@2` beside a global scheduled-events-forwarder (in a project, the same ' +
      'without -g), or use the release executable or the container image, which include it',
  );
}

/**
 * The start checks: everything `run` refuses before its first poll without using the network, beyond the config
 * schema (which `loadConfig` applies for both). One function for both: the Forwarder calls it before it opens the
 * store, `config validate` calls it after the schema, so a file `validate` accepts starts, and one it refuses,
 * `run` refuses with the same lines (test/integration/cli/start-checks.test.ts). It reads the environment it runs
 * in, as `run` does (proxy variables, NODE_NAME), and the state directory as it is now:
 *
 * - each enabled sink's SinkFactory.startProblems (e.g. azuremonitor `tls` behind an HTTPS proxy);
 * - Kubernetes (src/kubernetes/start-checks.ts): `kubernetes.enabled` without a node name (kubernetes.nodeName or
 *   NODE_NAME), or without a credential (no kubeconfig file, and not a pod with a ServiceAccount);
 * - the state directory: a path that is not a directory, a directory other users can write to, a database
 *   written by a newer forwarder (the temporary-disk refusal is the schema's).
 *
 * Not checked, because they depend on who asks and when: whether this user may write the state directory (the
 * service's user may differ), the lock a running forwarder holds, a telemetry port in use (by the running
 * forwarder, typically). Checks that need the network (credentials, endpoints) are the sinks' and Kubernetes'
 * own, at run time.
 */
import { ConfigError } from '../config/errors.ts';
import type { Config } from '../config/index.ts';
import { SINK_FACTORIES } from '../sinks/registry.ts';
import type { SinkFactory } from '../sinks/types.ts';
import { stateDirStartProblems } from '../store/index.ts';

export type Env = Record<string, string | undefined>;

/**
 * Every start problem of `config` here and now, one line each (key path first where there is one). The Kubernetes
 * checks load only with `kubernetes.enabled` (a forwarder without Kubernetes loads nothing of it).
 */
export async function startProblems(
  config: Config,
  env: Env = process.env,
  findFactory: (type: string) => SinkFactory | undefined = (type) =>
    SINK_FACTORIES.find((f) => f.type === type),
): Promise<string[]> {
  const problems: string[] = [];
  config.sinks.forEach((sink, index) => {
    if (!sink.enabled) return;
    for (const problem of findFactory(sink.type)?.startProblems?.(sink.name, sink.options, env) ?? []) {
      problems.push(`sinks[${index}]: ${problem}`);
    }
  });
  if (config.kubernetes.enabled) {
    const { kubernetesStartProblems } = await import('../kubernetes/start-checks.ts');
    problems.push(...kubernetesStartProblems(config.kubernetes, env));
  }
  for (const problem of stateDirStartProblems(config.stateDir)) problems.push(`stateDir: ${problem}`);
  return problems;
}

/** Throws the ConfigError (exit code 2) naming every start problem, if there is one. */
export async function assertStartable(
  config: Config,
  env: Env = process.env,
  findFactory?: (type: string) => SinkFactory | undefined,
): Promise<void> {
  const problems = await startProblems(config, env, findFactory);
  if (problems.length === 0) return;
  const origin = config.configFile === undefined ? 'command-line options' : config.configFile;
  throw new ConfigError(`the forwarder cannot start with this configuration (${origin}):`, problems);
}

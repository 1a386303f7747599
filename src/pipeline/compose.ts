/**
 * Building the pipeline from configuration: the source (from the source registry), the sinks (from the sink
 * registry) with their delivery settings, and approval. The run loop (src/pipeline/forwarder.ts) calls these;
 * the per-outcome step is src/pipeline/step.ts.
 */
import { ApprovalCoordinator } from '../approval/index.ts';
import { ConfigError } from '../config/errors.ts';
import type { Config, SinkConfig } from '../config/index.ts';
import type { EngineSink } from '../delivery/index.ts';
import type { VmIdentity } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { KubernetesAgent } from '../kubernetes/index.ts';
import type { Logger } from '../log.ts';
import type { Sink, SinkFactory } from '../sinks/types.ts';
import { imdsMaxGapMs } from '../sources/imds-protocol/imds-settings.ts';
import { findSourceFactory } from '../sources/registry.ts';
import type { BuiltSource, IdentitySource, Source } from '../sources/types.ts';
import type { Store } from '../store/index.ts';
import { type ForwarderState, initialState, restoreState } from '../transform/index.ts';
import type { ApprovalParticipant } from './participants.ts';

/** Builds the configured source through the source registry (src/sources/registry.ts). */
export async function buildSource(
  config: Config,
  logger: Logger,
  vm: () => VmIdentity | undefined,
): Promise<BuiltSource> {
  const factory = findSourceFactory(config.source.type);
  if (factory === undefined) {
    throw new ConfigError(`unknown source type "${config.source.type}"`, []);
  }
  return factory.create(config.source, { logger, vm, settings: config });
}

/**
 * A Source given directly (ForwarderOptions.source, tests): it polls like the IMDS poller configured in the
 * `imds` section, so it gets that source's gap limit, poll interval and first-outcome wait; no identity, no
 * approval client.
 */
export function givenSource(source: Source, config: Config): BuiltSource {
  return {
    source,
    maxGapMs: imdsMaxGapMs(config.imds),
    pollIntervalMs: config.imds.pollIntervalMs,
    firstOutcomeWaitMs: config.imds.pollIntervalMs,
  };
}

/**
 * The Kubernetes node agent (src/kubernetes, docs/kubernetes.md), or undefined when `kubernetes.enabled` is
 * false. Its built-in hook and reporter go to approval, its node context to every record. The agent's modules are
 * imported here, only when enabled: a forwarder without Kubernetes never loads them.
 */
export async function buildKubernetes(
  config: Config,
  identity: () => VmIdentity | undefined,
  logger: Logger,
): Promise<KubernetesAgent | undefined> {
  if (!config.kubernetes.enabled) return undefined;
  const { createKubernetesAgent } = await import('../kubernetes/index.ts');
  try {
    return createKubernetesAgent(config.kubernetes, {
      logger: logger.child({ component: 'kubernetes' }),
      vmName: () => identity()?.name,
    });
  } catch (error) {
    throw new ConfigError(errorMessage(error), []);
  }
}

/** Approval (src/approval, docs/approval.md): resumes persisted progress against the loaded state. */
export function buildApproval(
  config: Config,
  store: Store,
  source: Pick<BuiltSource, 'approval'>,
  identity: () => VmIdentity | undefined,
  logger: Logger,
  kubernetes: KubernetesAgent | undefined,
): ApprovalParticipant {
  return new ApprovalCoordinator({
    config: config.approval,
    store,
    client: source.approval,
    identity,
    pollIntervalMs: source.approval?.minIntervalMs ?? 0, // unused without a client: nothing is POSTed
    logger: logger.child({ component: 'approval' }),
    builtins: kubernetes?.builtins,
    observer: kubernetes?.observer,
    notify: kubernetes?.notify,
    peers: kubernetes?.peers,
  });
}

/** Builds one sink; a factory loads its implementation here (see SinkFactory.create). */
export async function createSink(
  sink: SinkConfig,
  find: (type: string) => SinkFactory | undefined,
  context: { logger: Logger; identity: IdentitySource | undefined; stateDir: string; imdsEndpoint: string },
): Promise<Sink> {
  const factory = find(sink.type);
  if (factory === undefined) throw new ConfigError(`sink ${sink.name}: unknown sink type "${sink.type}"`, []);
  try {
    return await factory.create(sink.name, sink.options, {
      logger: context.logger.child({ component: 'sink', sink: sink.name }),
      vm: () => context.identity?.current(),
      stateDir: context.stateDir,
      imdsEndpoint: context.imdsEndpoint,
    });
  } catch (error) {
    // A sink that cannot be built from its options is a configuration error (exit code 2, like `config validate`).
    throw new ConfigError(errorMessage(error), []);
  }
}

/** Engine configuration for one sink (config maxAgeHours → the store's maxAgeMs; the dead-letter caps as they are). */
export function engineSink(config: SinkConfig, sink: Sink): EngineSink {
  const { delivery } = config;
  return {
    sink,
    ...(delivery.maxBatch === undefined ? {} : { maxBatch: delivery.maxBatch }),
    backoff: delivery.backoff,
    probeBackoff: delivery.probe,
    caps: {
      maxPendingRows: delivery.caps.maxPendingRows,
      maxPendingBytes: delivery.caps.maxPendingBytes,
      maxDeadLetterRows: delivery.caps.maxDeadLetterRows,
      maxDeadLetterBytes: delivery.caps.maxDeadLetterBytes,
      ...(delivery.caps.maxAgeHours === undefined
        ? {} // default: records never expire by age
        : { maxAgeMs: Math.round(delivery.caps.maxAgeHours * 3_600_000) }),
    },
  };
}

/** The committed state, or the initial one (also when this build cannot read the saved state). */
export function loadState(store: Store, logger: Logger): ForwarderState {
  const saved = store.loadState<unknown>();
  if (saved === undefined) return initialState();
  try {
    return restoreState(saved);
  } catch (error) {
    // Never crash-loop on a state this build cannot read: start fresh and say so loudly.
    logger.error(
      { err: errorMessage(error) },
      'cannot use the saved forwarder state; starting from an empty state (events seen again produce records again)',
    );
    return initialState();
  }
}

/** Pending records of sinks no longer configured stay in the outbox: say so. */
export function warnAboutOrphanedQueues(store: Store, configured: Set<string>, logger: Logger): void {
  for (const queue of store.stats()) {
    if (!configured.has(queue.sink) && queue.pending > 0) {
      logger.warn(
        { sink: queue.sink, pending: queue.pending },
        'pending records for a sink that is no longer configured stay in the outbox (see `outbox status`)',
      );
    }
  }
}

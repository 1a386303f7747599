/**
 * The run's ONE PeriodicSender (src/delivery/periodic.ts): every periodic, state-derived send to a sink outside
 * the outbox, collected here from the features that have them, started once the delivery engine has started and
 * stopped before it (so that the sends made at a clean stop go out while the sinks are open).
 *
 * Features and where their sends come from:
 * - the alert re-sends (src/pipeline/alert-refresh.ts), from the committed state;
 * - heartbeats (docs/record-format.md, Heartbeats): ForwarderOptions.periodicSends, built by
 *   src/telemetry/heartbeat.ts from the parts below (the CLI wires it, with the health tracker it reads).
 *
 * A feature that derives its sends from the forwarder's state adds its factory to the list the Forwarder passes
 * to collectPeriodicSends (Forwarder.#startPeriodicSends).
 */
import type { Config, SinkConfig } from '../config/index.ts';
import { type PeriodicSend, type PeriodicSendEvent, PeriodicSender } from '../delivery/index.ts';
import type { KubernetesRecordContext, VmIdentity } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import type { Sink } from '../sinks/types.ts';
import type { Store } from '../store/index.ts';
import type { ForwarderState } from '../transform/index.ts';
import type { RunningPipeline } from './running.ts';

/** What a feature's periodic sends are built from. */
export interface PeriodicParts {
  /** The enabled sinks, built, with their configuration, in configuration order. */
  sinks: ReadonlyArray<{ config: SinkConfig; sink: Sink }>;
  /** The configuration in effect (the start-up one, or what a reload applied). */
  config: Config;
  store: Store;
  /** The VM identity as currently known. */
  identity: () => VmIdentity | undefined;
  /** The Kubernetes node context (kubernetes.enabled), else undefined. */
  kubernetes: () => KubernetesRecordContext | undefined;
  /** The source's name (imds, replay). */
  source: string;
  /** The last committed forwarder state (what survives a restart). */
  committedState: () => ForwarderState;
}

/** Builds a feature's periodic sends from the started pipeline's parts. */
export type PeriodicSendsFactory = (parts: PeriodicParts) => PeriodicSend[];

/** Every feature's sends for this run. */
export function collectPeriodicSends(
  parts: PeriodicParts,
  factories: ReadonlyArray<PeriodicSendsFactory | undefined>,
): PeriodicSend[] {
  return factories.flatMap((factory) => factory?.(parts) ?? []);
}

/**
 * Creates the run's PeriodicSender over `sends` (maybe none yet: a reload may add some) and registers its stop,
 * given `deadlineMs`, with `running`: registered after the delivery engine's, it stops before the engine closes
 * the sinks. It starts with startPeriodicSender.
 */
export function createPeriodicSender(
  sends: readonly PeriodicSend[],
  options: {
    running: RunningPipeline;
    logger: Logger;
    /** The shutdown deadline in effect when the sender stops. */
    deadlineMs: () => number;
    observer?: ((event: PeriodicSendEvent) => void) | undefined;
  },
): PeriodicSender {
  const sender = new PeriodicSender({
    sends,
    logger: options.logger,
    ...(options.observer === undefined ? {} : { observer: options.observer }),
  });
  options.running.onStop(() => sender.stop(options.deadlineMs()));
  return sender;
}

/** Starts `sender` (its start sends go out now) and logs what it sends, when it sends anything. */
export function startPeriodicSender(sender: PeriodicSender, logger: Logger): void {
  sender.start();
  if (sender.sends.length === 0) return;
  logger.info(
    {
      periodic: sender.sends.map((s) => ({
        kind: s.kind,
        sink: s.sink,
        intervalSeconds: s.intervalMs / 1000,
      })),
    },
    'periodic sends started',
  );
}

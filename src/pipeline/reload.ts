/**
 * Reloading a running forwarder's configuration (SIGHUP; docs/install.md "Reloading the configuration"). The file is
 * read and validated again; a file that fails, or a sink that cannot be built from it, changes nothing (the
 * running configuration stays, the log names the problem and the fix). Otherwise the plan (reload-plan.ts) is
 * applied through the same parts start-up uses: sinks are built with createSink, workers come and go through
 * DeliveryEngine.addSink/removeSink, routing through PipelineStep.reroute, approval through
 * ApprovalParticipant.reconfigure, the periodic sends (alert re-sends) stopped and started again over the new sinks. No outbox row is written, dropped or re-sent by a reload:
 * - a removed (or disabled) sink's worker stops like at shutdown (its in-flight delivery settles or is aborted);
 *   its pending rows stay in the outbox, logged and shown by `outbox status`, until the sink is configured again;
 * - an unchanged sink keeps its client, worker and position;
 * - a rebuilt sink's old worker ends first (an acknowledged row is gone from the queue), then the new one
 *   continues from the pending rows;
 * - an added sink receives the records of the next commit.
 * Reloads run one at a time; requests made while one waits to begin join it.
 */
import { type Config, ConfigError, type SinkConfig } from '../config/index.ts';
import { configWarnings } from '../config/warnings.ts';
import type { DeliveryEngine } from '../delivery/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { redactedMessage } from '../redact.ts';
import type { Sink } from '../sinks/types.ts';
import type { StoreInspection } from '../store/index.ts';
import { engineSink } from './compose.ts';
import type { PipelineObserver } from './observer.ts';
import type { ApprovalParticipant } from './participants.ts';
import {
  appliesChanges,
  planReload,
  type ReloadOutcome,
  type ReloadPlan,
  type ReloadReport,
} from './reload-plan.ts';
import type { RoutedSink } from './route.ts';
import type { PipelineStep } from './step.ts';

/**
 * The periodic sends over the running sinks (src/delivery/periodic.ts: the alert re-sends): stopped before a reload
 * changes the sinks (nothing is sent to a sink being closed), started again over the sinks that run afterwards.
 */
export interface PeriodicSends {
  stop(): Promise<void>;
  /** Starts the sends of `sinks` under `config`, the configuration in effect after the reload. */
  start(sinks: ReadonlyArray<{ config: SinkConfig; sink: Sink }>, config: Config): void;
}

/** The running parts a reload changes (see the module comment). */
export interface ReloadParts {
  engine: Pick<DeliveryEngine, 'addSink' | 'removeSink' | 'sinks' | 'sink'>;
  step: Pick<PipelineStep, 'reroute'>;
  approval: Pick<ApprovalParticipant, 'reconfigure'>;
  store: Pick<StoreInspection, 'stats'>;
  periodic?: PeriodicSends | undefined;
  /** Builds one sink the way start-up does (createSink: the registry, the identity, the state directory). */
  buildSink(config: SinkConfig): Promise<Sink>;
  /** True once shutdown began: a reload then stops where it is. */
  stopping(): boolean;
  logger: Logger;
  observer?: PipelineObserver | undefined;
}

export class Reloader {
  readonly #parts: ReloadParts;
  #config: Config;
  /** The reload running now, if any. */
  #current: Promise<unknown> = Promise.resolve();
  /** A reload requested while another runs, not begun yet: later requests join it. */
  #next: Promise<ReloadReport | undefined> | undefined;

  constructor(config: Config, parts: ReloadParts) {
    this.#config = config;
    this.#parts = parts;
  }

  /** The configuration in effect (the start-up one, changed by every applied reload). */
  get config(): Config {
    return this.#config;
  }

  /**
   * Reloads with `load` (reads and validates the file; throws ConfigError when it is invalid). Resolves with what
   * was done, or undefined when shutdown began first.
   */
  request(load: () => Promise<Config>): Promise<ReloadReport | undefined> {
    if (this.#next !== undefined) return this.#next;
    const next = this.#current.then(() => {
      this.#next = undefined;
      return this.#reload(load);
    });
    this.#next = next;
    this.#current = next.catch(() => {});
    return next;
  }

  async #reload(load: () => Promise<Config>): Promise<ReloadReport | undefined> {
    if (this.#parts.stopping()) return undefined;
    let next: Config;
    try {
      next = await load();
    } catch (error) {
      return this.#refuse(error, 'the configuration file is invalid');
    }
    const plan = planReload(this.#config, next);
    if (!appliesChanges(plan)) {
      this.#config = plan.effective;
      return this.#finish(plan, plan.needsRestart.length === 0 ? 'unchanged' : 'needs-restart');
    }
    // Every new sink is built before anything changes: one that cannot be built refuses the whole reload.
    const built = new Map<string, Sink>();
    try {
      for (const sink of [...plan.sinks.added, ...plan.sinks.rebuilt]) {
        built.set(sink.name, await this.#parts.buildSink(sink));
      }
    } catch (error) {
      await closeSinks([...built.values()]);
      return this.#refuse(error, 'a sink of the new configuration cannot be built');
    }
    // What start-up warns about, for the configuration that is about to run.
    for (const warning of configWarnings(next))
      this.#parts.logger.warn({ configKey: warning.path }, warning.message);
    return this.#apply(plan, next, built);
  }

  async #apply(plan: ReloadPlan, next: Config, built: Map<string, Sink>): Promise<ReloadReport | undefined> {
    const { engine, step, approval, stopping, periodic } = this.#parts;
    const deadlineMs = next.shutdownDeadlineMs;
    const { added, removed, rebuilt, refiltered } = plan.sinks;
    const sinksChange = added.length + removed.length + rebuilt.length + refiltered.length > 0;
    if (sinksChange) await periodic?.stop();
    // From the next commit on, records go to the new set of sinks; rows for a sink whose worker is being replaced
    // wait in its queue meanwhile.
    step.reroute(routedSinks(next));
    for (const sink of plan.sinks.removed) await engine.removeSink(sink.name, deadlineMs);
    for (const sink of [...plan.sinks.rebuilt, ...plan.sinks.added]) {
      const client = built.get(sink.name) as Sink;
      built.delete(sink.name);
      // The old worker ends before the new one starts, so no row is delivered by both.
      await engine.removeSink(sink.name, deadlineMs);
      if (stopping()) {
        await closeSinks([client]);
        continue;
      }
      try {
        engine.addSink(engineSink(sink, client));
      } catch (error) {
        // The engine stopped meanwhile (shutdown): nothing delivers to these.
        await closeSinks([client, ...built.values()]);
        throw error;
      }
    }
    if (plan.approval) approval.reconfigure(next.approval);
    this.#config = plan.effective;
    if (stopping()) return undefined;
    if (sinksChange) periodic?.start(runningSinks(next, engine), this.#config);
    this.#reportRemoved(plan.sinks.removed);
    return this.#finish(plan, 'applied');
  }

  /** Each removed sink's pending rows stay in the outbox: say how many and what brings them out. */
  #reportRemoved(removed: readonly SinkConfig[]): void {
    if (removed.length === 0) return;
    const stats = new Map(this.#parts.store.stats().map((s) => [s.sink, s]));
    for (const sink of removed) {
      const pending = stats.get(sink.name)?.pending ?? 0;
      const fields = { sink: sink.name, pending };
      if (pending === 0)
        this.#parts.logger.info(fields, 'sink removed by the reload; nothing was pending for it');
      else
        this.#parts.logger.warn(
          fields,
          `sink removed by the reload: its ${pending} pending record(s) stay in the outbox (see \`outbox status\`) ` +
            'and are delivered when a sink of that name is configured again',
        );
    }
  }

  #finish(plan: ReloadPlan, outcome: Exclude<ReloadOutcome, 'invalid'>): ReloadReport {
    const names = (list: readonly SinkConfig[]) => list.map((s) => s.name);
    const report: ReloadReport = {
      outcome,
      added: names(plan.sinks.added),
      removed: names(plan.sinks.removed),
      rebuilt: names(plan.sinks.rebuilt),
      refiltered: names(plan.sinks.refiltered),
      approval: plan.approval,
      shutdownDeadlineMs: plan.shutdownDeadlineMs,
      needsRestart: plan.needsRestart,
      problems: [],
      sinks: this.#parts.engine.sinks,
    };
    const { logger } = this.#parts;
    const { problems: _none, sinks, ...fields } = report;
    if (outcome === 'unchanged') {
      logger.info({ outcome, sinks }, 'configuration reloaded: nothing changed, nothing done');
    } else if (outcome === 'applied') {
      logger.info({ ...fields, sinks }, `configuration reloaded: ${describeApplied(report)}`);
    }
    if (plan.needsRestart.length > 0) {
      logger.warn(
        { outcome, needsRestart: plan.needsRestart },
        `configuration reloaded, but ${plan.needsRestart.join(', ')} changed and ${
          plan.needsRestart.length === 1 ? 'applies' : 'apply'
        } only at the next start: they keep their running values until the forwarder is restarted (e.g. ` +
          '`systemctl restart scheduled-events-forwarder`)',
      );
    }
    this.#parts.observer?.reloaded?.(report);
    return report;
  }

  #refuse(error: unknown, what: string): ReloadReport {
    const problems =
      error instanceof ConfigError && error.problems.length > 0
        ? [...error.problems]
        : [redactedMessage(error).split('\n')[0] ?? errorMessage(error)];
    const heading =
      error instanceof ConfigError ? (redactedMessage(error).split('\n')[0] ?? what).replace(/:$/, '') : what;
    const file = this.#config.configFile;
    this.#parts.logger.error(
      { outcome: 'invalid', problems },
      `configuration reload refused: ${heading}: ${problems.join('; ')}. The running configuration stays ` +
        `unchanged. Fix the file, check it with \`scheduled-events-forwarder config validate${
          file === undefined ? '' : ` --config ${file}`
        }\`, then reload again`,
    );
    const report: ReloadReport = {
      outcome: 'invalid',
      added: [],
      removed: [],
      rebuilt: [],
      refiltered: [],
      approval: false,
      shutdownDeadlineMs: false,
      needsRestart: [],
      problems,
      sinks: this.#parts.engine.sinks,
    };
    this.#parts.observer?.reloaded?.(report);
    return report;
  }
}

/** The enabled sinks of `config` that the engine delivers to, with their configuration. */
function runningSinks(
  config: Config,
  engine: Pick<DeliveryEngine, 'sink'>,
): Array<{ config: SinkConfig; sink: Sink }> {
  return config.sinks.flatMap((sink) => {
    const running = sink.enabled ? engine.sink(sink.name) : undefined;
    return running === undefined ? [] : [{ config: sink, sink: running }];
  });
}

/** The enabled sinks of `config` as routing sees them. */
export function routedSinks(config: Config): RoutedSink[] {
  return config.sinks.filter((s) => s.enabled).map((s) => ({ name: s.name, filter: s.filter }));
}

function describeApplied(report: ReloadReport): string {
  const parts: string[] = [];
  const list = (what: string, names: readonly string[]) => {
    if (names.length > 0) parts.push(`${what} ${names.join(', ')}`);
  };
  list('added', report.added);
  list('removed', report.removed);
  list('rebuilt', report.rebuilt);
  list('new filter for', report.refiltered);
  if (report.approval) parts.push('approval settings applied');
  if (report.shutdownDeadlineMs) parts.push('shutdownDeadlineMs applied');
  return parts.join('; ');
}

async function closeSinks(sinks: readonly Sink[]): Promise<void> {
  await Promise.allSettled(sinks.map((s) => s.close?.()));
}

/**
 * What a reload changes (SIGHUP; docs/install.md "Reloading the configuration"): a pure comparison of the running
 * configuration with the file read again. Applied live: the sinks (added, removed or disabled, rebuilt when their
 * type, options, secrets or delivery settings changed, re-routed when only their filter changed), `approval`, and
 * `shutdownDeadlineMs`. Every other setting (stateDir, imds, source, telemetry, log, kubernetes, and any section
 * added later until it is listed here) takes effect at the next start: a reload reports it as "needs a restart"
 * and leaves it as it runs. src/pipeline/reload.ts applies the plan.
 */
import type { ApprovalConfig } from '../approval/index.ts';
import { sameSetting } from '../config/equal.ts';
import type { Config, SinkConfig } from '../config/index.ts';

/** Top-level settings a reload applies (everything else needs a restart). */
export const LIVE_SETTINGS = ['sinks', 'approval', 'shutdownDeadlineMs'] as const;
/** Not settings: where the configuration came from. */
const NOT_SETTINGS = new Set(['configFile']);

/** How the running sinks change. Each list holds the new file's entry (`removed`: the running one's). */
export interface SinkChanges {
  /** Enabled in the file, not running: a worker starts; it receives records from the next commit. */
  added: SinkConfig[];
  /** Running, but gone from the file or disabled there: its worker stops; its pending rows stay in the outbox. */
  removed: SinkConfig[];
  /** Running with a different type, options (secrets included) or delivery: built again, continues its queue. */
  rebuilt: SinkConfig[];
  /** Only the filter changed: the running sink and its worker stay; routing changes from the next commit. */
  refiltered: SinkConfig[];
  /** Running and the same: queue, worker and position untouched. */
  unchanged: string[];
}

export interface ReloadPlan {
  sinks: SinkChanges;
  /** Apply the file's `approval` section. */
  approval: boolean;
  /** The file's shutdownDeadlineMs differs. */
  shutdownDeadlineMs: boolean;
  /** Key paths that changed in the file but apply only at the next start (e.g. `stateDir`, `imds.endpoint`). */
  needsRestart: string[];
  /** The configuration in effect once applied: the file's live settings, the running restart-only ones. */
  effective: Config;
}

/** Compares the running configuration with `next` (the file read again and validated). */
export function planReload(running: Config, next: Config): ReloadPlan {
  const needsRestart = restartOnlyChanges(running, next);
  const approvalChanged = !sameSetting(running.approval, next.approval);
  // The built-in kubernetes-node hook is the Kubernetes agent's, built at start: with Kubernetes off in the running
  // forwarder, rules that need it wait for the restart that turns Kubernetes on.
  const approvalWaits = approvalChanged && usesKubernetesHook(next.approval) && !running.kubernetes.enabled;
  if (approvalWaits) needsRestart.push('approval');
  const approval = approvalChanged && !approvalWaits;
  return {
    sinks: sinkChanges(running.sinks, next.sinks),
    approval,
    shutdownDeadlineMs: running.shutdownDeadlineMs !== next.shutdownDeadlineMs,
    needsRestart,
    effective: {
      ...running,
      sinks: next.sinks,
      shutdownDeadlineMs: next.shutdownDeadlineMs,
      approval: approval ? next.approval : running.approval,
      configFile: next.configFile,
    },
  };
}

/** Whether the plan applies anything at all. */
export function appliesChanges(plan: ReloadPlan): boolean {
  const { added, removed, rebuilt, refiltered } = plan.sinks;
  return (
    added.length + removed.length + rebuilt.length + refiltered.length > 0 ||
    plan.approval ||
    plan.shutdownDeadlineMs
  );
}

function sinkChanges(running: readonly SinkConfig[], next: readonly SinkConfig[]): SinkChanges {
  const before = new Map(running.filter((s) => s.enabled).map((s) => [s.name, s]));
  const after = next.filter((s) => s.enabled);
  const changes: SinkChanges = { added: [], removed: [], rebuilt: [], refiltered: [], unchanged: [] };
  for (const sink of after) {
    const old = before.get(sink.name);
    if (old === undefined) changes.added.push(sink);
    else if (
      old.type !== sink.type ||
      !sameSetting(old.options, sink.options) ||
      !sameSetting(old.delivery, sink.delivery)
    )
      changes.rebuilt.push(sink);
    else if (!sameSetting(old.filter, sink.filter)) changes.refiltered.push(sink);
    else changes.unchanged.push(sink.name);
  }
  const kept = new Set(after.map((s) => s.name));
  changes.removed = [...before.values()].filter((s) => !kept.has(s.name));
  return changes;
}

/**
 * The restart-only settings that differ: `section.key` for a changed key of a mapping section (`imds.endpoint`,
 * `telemetry.listen`), the name alone for anything else (`stateDir`).
 */
function restartOnlyChanges(running: Config, next: Config): string[] {
  const live = new Set<string>(LIVE_SETTINGS);
  const keys = new Set([...Object.keys(running), ...Object.keys(next)]);
  const changed: string[] = [];
  for (const key of keys) {
    if (live.has(key) || NOT_SETTINGS.has(key)) continue;
    const a = (running as Record<string, unknown>)[key];
    const b = (next as Record<string, unknown>)[key];
    if (sameSetting(a, b)) continue;
    if (isMapping(a) && isMapping(b)) {
      for (const sub of new Set([...Object.keys(a), ...Object.keys(b)])) {
        if (!sameSetting(a[sub], b[sub])) changed.push(`${key}.${sub}`);
      }
    } else changed.push(key);
  }
  return changed;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function usesKubernetesHook(approval: ApprovalConfig): boolean {
  return [...approval.hooks.prepare, ...approval.hooks.recover].some((h) => h.builtin === 'kubernetes-node');
}

/**
 * applied: the live changes were made (settings that need a restart may be listed too); unchanged: the file says
 * what runs; needs-restart: only settings that apply at the next start changed; invalid: the file (or a sink built
 * from it) was refused and the running configuration stays.
 */
export const RELOAD_OUTCOMES = ['applied', 'unchanged', 'needs-restart', 'invalid'] as const;
export type ReloadOutcome = (typeof RELOAD_OUTCOMES)[number];

/** What a reload did (the log line, the metrics and /readyz are built from it). */
export interface ReloadReport {
  outcome: ReloadOutcome;
  added: string[];
  removed: string[];
  rebuilt: string[];
  refiltered: string[];
  approval: boolean;
  shutdownDeadlineMs: boolean;
  needsRestart: string[];
  /** invalid: one line per problem. */
  problems: string[];
  /** The sinks delivered to afterwards. */
  sinks: string[];
}

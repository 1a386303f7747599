/**
 * The built-in `kubernetes-node` hook: the I/O around the pure planning of src/kubernetes/node-actions.ts. In
 * prepare it cordons, taints and labels the node (annotation saying what it added) and, for `drain`, evicts the
 * node's pods through the Eviction API until none is left or the hook's deadline (a PodDisruptionBudget refusal,
 * 429, is retried until then; the failure says which pods and budgets blocked). In recover it undoes exactly what
 * the annotation lists. It runs under approval's rules: `run.timeoutMs` is its budget, and `run.signal` (aborted at
 * the deadline and when the forwarder stops: src/approval/hooks.ts) reaches every request it makes, so it returns at
 * once then, saying what it did. What it did on the node is always in the actions annotation — written in the same
 * patch as the cordon, taint and label — so a recover undoes exactly that, whenever the hook was cut short.
 */
import { type HookConfig, HookDeadlineError, type HookRun } from '../approval/index.ts';
import { errorMessage } from '../errors.ts';
import type { ApprovalHookResult } from '../transform/index.ts';
import type { NodeApi } from './client.ts';
import type { KubernetesConfig } from './config.ts';
import { DrainFailure, drainNode } from './drain.ts';
import { type EventFacts, eventMessage, type NodeView, planPrepare, planRecover } from './node-actions.ts';

export interface NodeHookContext {
  api: () => Promise<NodeApi>;
  nodeName: string;
  config: KubernetesConfig;
  /** Writes a node Event (queued; never throws). */
  report: (reason: string, message: string, type: 'Normal' | 'Warning') => void;
  now?: () => number;
}

/** Runs the built-in node hook for `run.phase`; never throws (a failure is a failed hook with its reason). */
export async function runNodeHook(
  hook: HookConfig,
  run: HookRun,
  ctx: NodeHookContext,
): Promise<ApprovalHookResult> {
  const now = ctx.now ?? Date.now;
  const started = now();
  const deadlineMs = started + run.timeoutMs;
  const facts: EventFacts = {
    eventId: run.event.EventId,
    eventType: run.event.EventType,
    notBefore: run.event.notBeforeUtc,
  };
  /** What was done so far, for the detail of a hook that fails or is cut short. */
  const done: string[] = [];
  const result = (ok: boolean, detail: string, timedOut = false): ApprovalHookResult => ({
    name: hook.name,
    ok,
    exitCode: null,
    durationMs: Math.round(now() - started),
    timedOut,
    detail: detail.slice(0, 2000),
  });
  try {
    const api = await ctx.api();
    const detail =
      run.phase === 'prepare'
        ? await prepare(api, ctx, run, facts, deadlineMs, now, done)
        : await recover(api, ctx, facts, run.signal);
    return result(true, detail);
  } catch (error) {
    const cutShort = run.signal?.aborted === true;
    const timedOut = (error instanceof DrainFailure && now() >= deadlineMs) || cutShort;
    const why = cutShort ? stoppedBecause(run.signal) : errorMessage(error);
    const message = done.length > 0 ? `${why} (done: ${done.join('; ')})` : why;
    ctx.report(
      run.phase === 'prepare' ? 'VMEventNodePrepareFailed' : 'VMEventNodeRecoverFailed',
      eventMessage(message, facts),
      'Warning',
    );
    return result(false, message, timedOut);
  }
}

/** Why the hook's signal aborted: its deadline, or the forwarder stopping. */
function stoppedBecause(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof HookDeadlineError) return `stopped at the hook's deadline: ${reason.message}`;
  return 'stopped: the forwarder is shutting down';
}

/** Reads the node and applies `plan(node)`'s patch; on a concurrent change (409) reads again (a few times). */
async function patchWithRetry<T extends { patch: unknown }>(
  api: NodeApi,
  name: string,
  plan: (node: NodeView) => T,
  signal: AbortSignal | undefined,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const planned = plan(await api.readNode(name, signal));
    if (planned.patch === null) return planned;
    try {
      await api.patchNode(name, planned.patch as never, signal);
      return planned;
    } catch (error) {
      if ((error as { status?: number }).status !== 409 || attempt >= 5) throw error;
    }
  }
}

async function prepare(
  api: NodeApi,
  ctx: NodeHookContext,
  run: HookRun,
  facts: EventFacts,
  deadlineMs: number,
  now: () => number,
  done: string[],
): Promise<string> {
  const actions = ctx.config.actions;
  const planned = await patchWithRetry(
    api,
    ctx.nodeName,
    (node) => planPrepare(node, { eventId: facts.eventId, eventType: facts.eventType }, actions),
    run.signal,
  );
  if (planned.action === 'none') {
    return `${facts.eventType}: notify only (kubernetes.actions.perEventType)`;
  }
  const applied = planned.applied!;
  const parts = [
    applied.alreadyCordoned ? 'node was already cordoned (left as it is)' : 'cordoned',
    ...(applied.taint ? [`tainted ${applied.taint.key}:${applied.taint.effect}`] : []),
    ...(applied.label ? [`labelled ${applied.label}`] : []),
  ];
  if (planned.patch !== null)
    ctx.report('VMEventNodeCordoned', eventMessage(parts.join(', '), facts), 'Normal');
  done.push(parts.join(', '));
  if (planned.action === 'cordon') return parts.join(', ');
  const slot = done.length;
  const evicted = await drainNode({
    api,
    nodeName: ctx.nodeName,
    settings: actions.drain,
    deadlineMs,
    now,
    signal: run.signal,
    logger: run.logger.child({ eventId: facts.eventId }),
    progress: (what) => {
      done[slot] = what;
    },
  });
  const summary = `${parts.join(', ')}; drained (${evicted} pod(s) evicted)`;
  ctx.report('VMEventNodeDrained', eventMessage(summary, facts), 'Normal');
  return summary;
}

async function recover(
  api: NodeApi,
  ctx: NodeHookContext,
  facts: EventFacts,
  signal: AbortSignal | undefined,
): Promise<string> {
  const planned = await patchWithRetry(api, ctx.nodeName, (node) => planRecover(node, facts.eventId), signal);
  if (planned.patch === null) return 'nothing of this event to undo';
  if (planned.stillHeldBy.length > 0) {
    return `still prepared for ${planned.stillHeldBy.join(', ')}: left as it is`;
  }
  const { undone } = planned;
  const parts = [
    undone.uncordoned ? 'uncordoned' : undone.leftCordoned ? 'left cordoned (cordoned before the event)' : '',
    undone.taint ? `taint ${undone.taint.key}:${undone.taint.effect} removed` : '',
    undone.label ? `label ${undone.label} removed` : '',
  ].filter((p) => p !== '');
  const summary = parts.length > 0 ? parts.join(', ') : 'annotation removed';
  ctx.report('VMEventNodeRecovered', eventMessage(summary, facts), 'Normal');
  return summary;
}

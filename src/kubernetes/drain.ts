/**
 * Draining a node as kubectl drain does, within a hook's deadline: the pods on the node are listed and planned
 * (src/kubernetes/node-actions.ts planDrain: what is skipped, what blocks the drain, what waits), then evicted
 * through the Eviction API — at most `maxConcurrentEvictions` at a time, each pod by its own worker that retries its
 * own PodDisruptionBudget refusals (429) and unanswered requests every `retryIntervalMs` — and the drain waits
 * until every evicted or terminating pod is gone. No eviction asks for less than min(the pod's grace period,
 * `minGracePeriodSeconds`), never 0 (evictionGrace): when less time is left, the drain stops and fails, naming each
 * pod left and why. The signal (the hook's deadline, the forwarder stopping) reaches every request and wait.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import type { NodeApi } from './client.ts';
import type { NodeActionsConfig } from './config.ts';
import { evictionGrace, type PodView, planDrain, podName } from './node-actions.ts';

/** How often the pods are listed again while evicted or terminating pods are still on the node. */
const GONE_POLL_MS = 250;

export interface DrainContext {
  api: NodeApi;
  nodeName: string;
  settings: NodeActionsConfig['drain'];
  /** Epoch ms by which the drain must be done (the hook's deadline). */
  deadlineMs: number;
  now: () => number;
  signal: AbortSignal | undefined;
  logger: Logger;
  /** Told what the drain has done so far (for the detail of a hook that is cut short). */
  progress: (what: string) => void;
}

/** The drain cannot succeed: why (pods named). */
export class DrainFailure extends Error {}

/** How one pod's eviction ended. */
type PodOutcome =
  | { kind: 'evicted'; seconds: number }
  | { kind: 'gone' }
  /** Not evicted: the reason names the pod's problem (too late, refused, an error). */
  | { kind: 'left'; why: string };

/** Drains the node (see the module comment); resolves with the number of pods evicted, or throws DrainFailure. */
export async function drainNode(ctx: DrainContext): Promise<number> {
  const { api, settings, signal } = ctx;
  let evicted = 0;
  for (;;) {
    signal?.throwIfAborted();
    const plan = planDrain(await api.listPodsOnNode(ctx.nodeName, signal), settings);
    if (plan.blocked.length > 0) {
      throw new DrainFailure(
        `drain refused, nothing evicted: ${plan.blocked.map((b) => `${b.pod} ${b.why}`).join('; ')}`,
      );
    }
    if (plan.evict.length === 0 && plan.waitFor.length === 0) return evicted;
    if (plan.evict.length > 0) {
      const outcomes = await inParallel(plan.evict, settings.maxConcurrentEvictions, (pod) =>
        evictPod(ctx, pod),
      );
      signal?.throwIfAborted();
      evicted += outcomes.filter((o) => o.kind === 'evicted').length;
      ctx.progress(`evicted ${evicted} pod(s)`);
      const left = plan.evict.flatMap((pod, i) => {
        const outcome = outcomes[i]!;
        return outcome.kind === 'left' ? [`${podName(pod)}: ${outcome.why}`] : [];
      });
      if (left.length > 0) {
        throw new DrainFailure(
          `drain stopped with ${left.length} pod(s) not evicted (${evicted} evicted): ${left.join('; ')}`,
        );
      }
    }
    const remaining = ctx.deadlineMs - ctx.now();
    if (remaining <= 0) {
      const terminating = plan.waitFor.map(podName);
      throw new DrainFailure(
        `drain did not finish before the hook's deadline: ${
          terminating.length > 0 ? `still terminating: ${terminating.join(', ')}` : 'pods still on the node'
        }`,
      );
    }
    if (plan.waitFor.length > 0)
      ctx.progress(
        `evicted ${evicted} pod(s); waiting for ${plan.waitFor.map(podName).join(', ')} to terminate`,
      );
    await sleep(Math.min(GONE_POLL_MS, remaining), undefined, { signal }).catch(() => {});
  }
}

/** One pod's worker: evicts it, retrying refusals and unanswered requests until it is too late. */
async function evictPod(ctx: DrainContext, pod: PodView): Promise<PodOutcome> {
  const { settings, signal } = ctx;
  const log = ctx.logger.child({ pod: podName(pod) });
  let lastRefusal: string | undefined;
  for (;;) {
    if (signal?.aborted) return { kind: 'left', why: 'stopped' };
    const grace = evictionGrace(
      pod,
      settings.gracePeriodSeconds,
      ctx.deadlineMs - ctx.now(),
      settings.minGracePeriodSeconds,
    );
    if ('tooLate' in grace) {
      return {
        kind: 'left',
        why:
          `not evicted: it must be given ${grace.needs} s to stop (its grace period, at most ` +
          `kubernetes.actions.drain.minGracePeriodSeconds ${settings.minGracePeriodSeconds} s) and ${grace.left} s are ` +
          `left before the hook's deadline` +
          (lastRefusal === undefined ? '' : `; last attempt: ${lastRefusal}`),
      };
    }
    try {
      const outcome = await ctx.api.evictPod(pod, grace.seconds, signal);
      if (outcome.kind === 'evicted') {
        log.info({ gracePeriodSeconds: grace.seconds }, 'pod evicted');
        return { kind: 'evicted', seconds: grace.seconds };
      }
      if (outcome.kind === 'gone') return { kind: 'gone' };
      lastRefusal = `refused (429): ${outcome.message}`;
      log.info({ refused: outcome.message }, 'eviction refused (PodDisruptionBudget); retrying');
    } catch (error) {
      const e = error as { status?: number; timedOut?: boolean; aborted?: boolean; message: string };
      if (e.aborted === true || signal?.aborted) return { kind: 'left', why: 'stopped' };
      if (!retryable(e)) return { kind: 'left', why: `eviction failed: ${e.message}` };
      lastRefusal = e.message;
      log.warn({ err: e.message }, 'eviction request failed; retrying');
    }
    // Wait for the next attempt, but not past the moment the pod could still be given its grace period.
    const untilTooLate =
      ctx.deadlineMs - ctx.now() - Math.min(graceWanted(ctx, pod), settings.minGracePeriodSeconds) * 1000;
    await sleep(Math.max(0, Math.min(settings.retryIntervalMs, untilTooLate)), undefined, { signal }).catch(
      () => {},
    );
  }
}

function graceWanted(ctx: DrainContext, pod: PodView): number {
  return Math.max(1, ctx.settings.gracePeriodSeconds ?? pod.terminationGracePeriodSeconds ?? 30);
}

/** No answer (timeout, connection) or a 502/503/504: worth another attempt. Anything else fails the pod. */
function retryable(error: { status?: number; timedOut?: boolean }): boolean {
  return error.timedOut === true || error.status === 0 || [502, 503, 504].includes(error.status ?? -1);
}

/** Runs `work` for every item, at most `limit` at a time; the outcomes in item order. */
async function inParallel<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * The history's retention: what it keeps is recorded (`history_settings`, shown by `fleet report` and the
 * dashboard) and what is older is pruned. `fleet run` applies it at start and prunes every hour; `fleet import`
 * applies it once its files are in (docs/fleet.md, "Retention").
 */

import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { parseDuration } from '../simulator/clock.ts';
import type { FleetHistory, PruneResult } from './history/index.ts';

/** How often a running consumer prunes history older than the retention. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** Prunes what `retention` does not keep any more (measured back from `nowMs`). */
function pruneOlder(history: FleetHistory, retention: string, nowMs: number): Promise<PruneResult> {
  return history.prune(new Date(nowMs - parseDuration(retention, 'retention')));
}

/** Records `retention` as what the history keeps and prunes what is older, once. */
export async function applyRetention(
  history: FleetHistory,
  retention: string,
  nowMs: number = Date.now(),
): Promise<PruneResult> {
  await history.setRetention(retention);
  return pruneOlder(history, retention, nowMs);
}

/** Prunes history older than the retention now and then every hour; returns the stop function. */
export function startRetention(
  history: FleetHistory,
  retention: string,
  logger: Logger,
): () => Promise<void> {
  parseDuration(retention, 'retention'); // a bad value fails here, not in the first prune
  let running: Promise<void> = Promise.resolve();
  const prune = () => {
    running = running.then(async () => {
      try {
        const removed = await pruneOlder(history, retention, Date.now());
        if (removed.events + removed.rejected + removed.vms + removed.heartbeats + removed.coverageDays > 0)
          logger.info({ retention, ...removed }, 'pruned fleet history older than the retention');
      } catch (error) {
        logger.warn({ err: errorMessage(error) }, 'pruning the fleet history failed; will try again');
      }
    });
  };
  prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/**
 * When the forwarder writes its state (pure policy; see docs/record-format.md "State (for the store)").
 *
 * The transform state lives in memory and runs ahead of the committed one. A poll whose document changed (or
 * that produced records) is committed at once. A poll whose document did not change moves only the
 * observation time and the Started-window measurements; those are made durable with the next commit, on
 * graceful shutdown, and by the observation checkpoint below — never per poll.
 *
 * Why a stale durable `lastObservedAtMs` is safe: after a restart the transform diffs against the committed
 * state, so the restart's gap is measured from the committed observation time, which is never later than the
 * last real observation. The gap can only be over-estimated: more `observation-gap` inferences, never a
 * `canceled` the forwarder cannot justify. A reboot is recognised because the first document of every run is
 * committed (it always counts as changed), so the committed observation time is always after this run's boot.
 */
import type { ForwarderState } from '../transform/index.ts';

/** While an event is tracked, the in-memory observation time is committed at least this often. */
export const OBSERVATION_CHECKPOINT_MS = 60_000;

/** At most this many transitions wait in memory while commits fail (then the pipeline falls back, see docs). */
export const MAX_WAITING_RECORDS = 1_000;

/**
 * Whether a poll that changed nothing but the observation time should still commit the state now (the
 * observation checkpoint). Never while no event is tracked: then no rule reads the observation time (there is
 * nothing to end, cancel or measure), so an idle forwarder writes nothing at all. While an event is tracked:
 * when the committed observation time is `everyMs` old or more (or in the future: the wall clock stepped
 * back), which bounds how far a restart's gap is over-estimated after a crash.
 */
export function observationCheckpointDue(
  state: ForwarderState,
  durableObservedAtMs: number | null,
  nowMs: number,
  everyMs: number = OBSERVATION_CHECKPOINT_MS,
): boolean {
  if (state.events.length === 0) return false;
  if (durableObservedAtMs === null) return true;
  return nowMs - durableObservedAtMs >= everyMs || nowMs < durableObservedAtMs;
}

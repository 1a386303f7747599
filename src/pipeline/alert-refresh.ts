/**
 * The alert re-sends (#31 item 1; docs/sinks-alerting.md): one periodic send of kind 'alert-refresh' per sink
 * that has `refreshPending` (the Alertmanager sink), run by the pipeline's PeriodicSender
 * (src/delivery/periodic.ts) outside the outbox. What a re-send carries comes from the committed state, which is
 * what a restart loads, so re-sends go on across restarts: every event still pending, as the record of its
 * current status (src/transform pendingEventRecords, with the identity and node records are built with), that
 * passes the sink's filter. Read lazily, when the sink's turn comes (after a delivery in flight), and without I/O.
 */
import type { SinkConfig } from '../config/index.ts';
import type { PeriodicSend } from '../delivery/index.ts';
import type { KubernetesRecordContext, LifecycleRecord, VmIdentity } from '../domain/index.ts';
import type { Sink, SinkFilter } from '../sinks/types.ts';
import { type ForwarderState, pendingEventRecords, recordSource } from '../transform/index.ts';
import { matchesFilter } from './route.ts';

/** What the re-sends are built from. */
export interface AlertRefreshParts {
  /** The enabled sinks, built, with their configuration. */
  sinks: ReadonlyArray<{ config: SinkConfig; sink: Sink }>;
  /** The last committed state. */
  committedState: () => ForwarderState;
  /** The VM identity as currently known. */
  identity: () => VmIdentity | undefined;
  /** The Kubernetes node context of records (`kubernetes.enabled`), else undefined. */
  kubernetes: () => KubernetesRecordContext | undefined;
}

/** Kind of the periodic sends built here (logs, events). */
export const ALERT_REFRESH_KIND = 'alert-refresh';

/** One 'alert-refresh' send per sink with refreshPending; none (no timer at all) without such a sink. */
export function alertRefreshSends(parts: AlertRefreshParts): PeriodicSend[] {
  return parts.sinks.flatMap(({ config, sink }): PeriodicSend[] => {
    const refresh = sink.refreshPending;
    if (refresh === undefined) return [];
    return [
      {
        kind: ALERT_REFRESH_KIND,
        sink: sink.name,
        intervalMs: refresh.intervalMs,
        send: (_trigger, signal) => refresh.send(() => pendingRecords(parts, config.filter), signal),
      },
    ];
  });
}

/** The record of every event pending in the committed state that passes `filter`, in first-seen order. */
export function pendingRecords(
  parts: Pick<AlertRefreshParts, 'committedState' | 'identity' | 'kubernetes'>,
  filter: SinkFilter,
): LifecycleRecord[] {
  const state = parts.committedState();
  if (state.events.length === 0) return [];
  const vm = parts.identity();
  const records = pendingEventRecords(state, {
    vm,
    source: recordSource(vm),
    kubernetes: parts.kubernetes(),
  });
  return records.filter((record) => matchesFilter(record, filter));
}

/**
 * Routing: which sinks receive a record, by each sink's filter (transitions, IMDS event types, scope).
 * Pure functions; the pipeline turns the result into outbox rows in the same transaction as the state.
 */

import type { LifecycleRecord } from '../domain/index.ts';
import type { SinkFilter } from '../sinks/types.ts';

/** A sink as routing sees it. */
export interface RoutedSink {
  name: string;
  filter: SinkFilter;
}

/** True when `record` passes `filter`. Event types compare case-insensitively; an empty list means every type. */
export function matchesFilter(record: LifecycleRecord, filter: SinkFilter): boolean {
  if (!filter.transitions.includes(record.transition)) return false;
  if (filter.eventTypes.length > 0) {
    const type = String(record.data.EventType).toLowerCase();
    if (!filter.eventTypes.some((t) => t.toLowerCase() === type)) return false;
  }
  return filter.scope === 'all' || record.data.affectsThisVm === true;
}

/** One delivery per record with the names of the sinks it goes to (possibly none: the record is still committed). */
export function routeRecords(
  records: readonly LifecycleRecord[],
  sinks: readonly RoutedSink[],
): Array<{ record: LifecycleRecord; sinks: string[] }> {
  return records.map((record) => ({
    record,
    sinks: sinks.filter((sink) => matchesFilter(record, sink.filter)).map((sink) => sink.name),
  }));
}

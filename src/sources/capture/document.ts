/** Content comparison of parsed Scheduled Events documents (not by DocumentIncarnation alone). */
import type { ScheduledEventsDocument } from '../../domain/index.ts';

/** Deterministic JSON: object keys sorted at every level. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}

/** A string that is equal for two documents exactly when their incarnation and events are equal. */
export function documentFingerprint(document: ScheduledEventsDocument): string {
  return stableJson(document);
}

/** True when both documents have the same incarnation and the same events (same order, same fields). */
export function sameDocument(a: ScheduledEventsDocument | undefined, b: ScheduledEventsDocument): boolean {
  return a !== undefined && documentFingerprint(a) === documentFingerprint(b);
}

/** `fleet report`: the text rendering of a FleetSummary (the JSON form is the summary itself). */

import type { Distribution, FleetSummary } from './history/index.ts';

function counts(title: string, values: Record<string, number>): string[] {
  const entries = Object.entries(values);
  if (entries.length === 0) return [`${title}: none`];
  const width = Math.max(...entries.map(([k]) => k.length));
  return [`${title}:`, ...entries.map(([k, n]) => `  ${k.padEnd(width)}  ${n}`)];
}

function dist(title: string, d: Distribution, unit: string): string {
  if (d.count === 0) return `${title}: no data`;
  return `${title} (${d.count} events, ${unit}): min ${d.min}, median ${d.p50}, p90 ${d.p90}, max ${d.max}, mean ${d.mean}`;
}

/** Plain-text report of a summary: counts by type / region / zone / scale set, notice, impact, approvals, pending. */
export function formatReport(s: FleetSummary): string {
  const window = `${s.filter.since ?? 'the beginning'} .. ${s.filter.until ?? 'now'}`;
  const filters = Object.entries(s.filter)
    .filter(([k, v]) => k !== 'since' && k !== 'until' && v !== undefined && v !== false)
    .map(([k, v]) => `${k}=${v}`);
  const kept =
    s.retention === null
      ? 'the history keeps everything (no retention set)'
      : `the history keeps ${s.retention}${s.oldestEventAt === null ? '' : `, oldest event first seen ${s.oldestEventAt}`}`;
  const lines = [
    `Fleet maintenance report, first seen ${window} (generated ${s.generatedAt})`,
    ...(filters.length > 0 ? [`Filters: ${filters.join(', ')}`] : []),
    `Window kept: ${kept}`,
    `${s.events} maintenance events (each counted once) affecting ${s.vms} reporting VMs ` +
      `(${s.affectedVmEvents} VM-events); ${s.reportingVms} VMs report; ${s.records} records ` +
      `(ingested ${s.ingest.accepted}, duplicates ignored ${s.ingest.duplicates}, rejected ${s.ingest.rejected})`,
    '',
    ...counts('By status', s.byStatus),
    ...counts('By type', s.byType),
    ...counts('By transition (records)', s.byTransition),
    ...counts('By region', s.byLocation),
    ...counts('By zone', s.byZone),
    ...counts('By scale set', s.byScaleSet),
    '',
    dist('Notice lead time (NotBefore - first seen)', s.noticeSeconds, 's'),
    dist('Advertised impact (DurationInSeconds)', s.advertisedSeconds, 's'),
    dist('Observed impact (downtime or longest freeze)', s.observedSeconds, 's'),
    `Observed impact exceeded the advertised duration in ${s.impactVsAdvertised.exceeded} of ${s.impactVsAdvertised.compared} comparable events`,
    '',
    ...counts('Approvals', s.approvals),
    ...counts('Inferred endings', s.inferredEndings),
    `Events with missing transitions: ${s.missingTransitions}; on VMs deleted by Preempt/Terminate: ${s.vmDeleted}`,
    '',
    `Pending now: ${s.pendingTotal}${s.pendingTotal > s.pending.length ? ` (first ${s.pending.length} listed)` : ''}`,
    ...s.pending.map(
      (e) =>
        `  ${e.eventId}  ${e.eventType}  ${e.status}  NotBefore ${e.notBefore ?? '-'}  ` +
        `affects ${e.affectedVms} VM${e.affectedVms === 1 ? '' : 's'}: ${e.affectedNames.slice(0, 5).join(' ')}${e.affectedNames.length > 5 ? ' …' : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

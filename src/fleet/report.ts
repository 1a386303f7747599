/** `fleet report`: the text rendering of a FleetSummary (the JSON form is the summary itself). */
import type { Distribution, FleetSummary } from './queries.ts';

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
  const lines = [
    `Fleet maintenance report, first seen ${window} (generated ${s.generatedAt})`,
    `${s.events} events on ${s.vms} VMs from ${s.records} records ` +
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
    `Pending now: ${s.pending.length}`,
    ...s.pending.map(
      (e) =>
        `  ${e.vmName || e.source}  ${e.eventId}  ${e.eventType}  ${e.status}  NotBefore ${e.notBefore ?? '-'}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

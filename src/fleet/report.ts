/**
 * `fleet report`: the text rendering of a FleetSummary, and with `--coverage` of a CoverageReport (the JSON
 * forms are the objects themselves).
 */

import type { CoverageReport, CoverageVm, Distribution, FleetSummary, StateCounts } from './history/index.ts';

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
    `Coverage: ${s.coveredVms} VM${s.coveredVms === 1 ? '' : 's'} sent a heartbeat in this window ` +
      '(`fleet report --coverage`: which are silent or unhealthy now)',
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
    `Pending now: ${s.pendingTotal}${s.pendingTotal > s.pending.length ? ` (the ${s.pending.length} due soonest listed; all of them: /api/pending)` : ''}`,
    ...s.pending.map(
      (e) =>
        `  ${e.eventId}  ${e.eventType}  ${e.status}  NotBefore ${e.notBefore ?? '-'}  ` +
        `affects ${e.affectedVms} VM${e.affectedVms === 1 ? '' : 's'}: ${e.affectedNames.slice(0, 5).join(' ')}${e.affectedNames.length > 5 ? ' …' : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

const STATE_ORDER = ['reporting', 'unhealthy', 'silent', 'gone'] as const;

function stateLine(counts: StateCounts): string {
  return STATE_ORDER.map((state) => `${counts[state]} ${state}`).join(', ');
}

function stateTable(title: string, values: Record<string, StateCounts>): string[] {
  const entries = Object.entries(values);
  if (entries.length === 0) return [`${title}: none`];
  const width = Math.max(...entries.map(([k]) => k.length));
  return [`${title}:`, ...entries.map(([k, c]) => `  ${k.padEnd(width)}  ${stateLine(c)}`)];
}

function vmLines(vms: readonly CoverageVm[]): string[] {
  return vms.map((vm) => {
    const where = [vm.location, vm.zone === '' ? undefined : `zone ${vm.zone}`, vm.scaleSet || undefined]
      .filter((x) => x !== undefined && x !== '')
      .join(', ');
    return `  ${vm.vmName}  ${where}  ${vm.version}  ${vm.reason}`;
  });
}

/** Plain-text report of coverage: VMs by state, version, region and scale set; the silent and unhealthy ones. */
export function formatCoverageReport(c: CoverageReport): string {
  const filters = Object.entries(c.filter)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`);
  const lagging = c.partitions.filter((p) => p.lagSeconds > c.settings.silentMarginSeconds);
  const more = (page: { items: unknown[]; total: number }) =>
    page.total > page.items.length ? ` (first ${page.items.length} listed)` : '';
  const lines = [
    `Fleet coverage (generated ${c.generatedAt})`,
    ...(filters.length > 0 ? [`Filters: ${filters.join(', ')}`] : []),
    `${c.vms} VMs send heartbeats: ${stateLine(c.byState)}; ${c.withoutHeartbeat} VMs sent records but never a ` +
      'heartbeat (a forwarder without heartbeats, or heartbeats off)',
    `Silent: no heartbeat for longer than the interval + ${c.settings.silentMarginSeconds} s; gone: quiet for ` +
      `more than ${c.settings.goneAfterSeconds} s or deleted by Azure; unhealthy: its last heartbeat reported a problem`,
    lagging.length === 0
      ? 'Partitions: every partition read to within the silent margin'
      : `Partitions behind (silence is measured up to where each was read): ${lagging
          .map((p) => `${p.partitionId} (${p.lagSeconds} s)`)
          .join(', ')}`,
    '',
    ...stateTable('By version', c.byVersion),
    ...stateTable('By region', c.byLocation),
    ...stateTable('By scale set', c.byScaleSet),
    '',
    `Silent now: ${c.silent.total}${more(c.silent)}`,
    ...vmLines(c.silent.items),
    `Unhealthy now: ${c.unhealthy.total}${more(c.unhealthy)}`,
    ...vmLines(c.unhealthy.items),
  ];
  return `${lines.join('\n')}\n`;
}

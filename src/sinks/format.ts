/**
 * Pure text helpers shared by the sinks that write for people (Slack, Teams, Alertmanager, PagerDuty): safe
 * truncation, relative times, durations, severity and the human summary of a lifecycle record. No I/O; every time is relative to the record's own
 * `time`, so output is deterministic.
 */
import type { LifecycleRecord } from '../domain/index.ts';
import { formatDurationSeconds } from '../duration.ts';

const ELLIPSIS = '…';

/**
 * Shortens `text` to at most `max` UTF-16 code units (the unit Slack and Teams count), ending with "…" when
 * cut. Never splits a surrogate pair.
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  if (max === 1) return ELLIPSIS;
  let end = max - ELLIPSIS.length;
  const code = text.charCodeAt(end - 1);
  // A high surrogate at the cut point would be left without its low half: drop it too.
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end) + ELLIPSIS;
}

/**
 * Joins a list into one string no longer than `max`, ending with "… and N more" when items are left out.
 */
export function joinLimited(items: readonly string[], max: number, separator = ', '): string {
  if (items.length === 0) return '';
  const full = items.join(separator);
  if (full.length <= max) return full;
  if (items.length === 1) return truncateText(full, max);
  let used = '';
  for (let i = 0; i < items.length; i++) {
    const candidate = used === '' ? items[i]! : used + separator + items[i]!;
    const suffix = ` … and ${items.length - i - 1} more`;
    if (candidate.length + suffix.length > max) {
      const rest = ` … and ${items.length - i} more`;
      if (used === '') return truncateText(items[0]!, max - suffix.length) + suffix;
      return used + rest;
    }
    used = candidate;
  }
  return truncateText(full, max);
}

/** "in 14 min", "3 h 5 min ago", "now": the distance from `fromIso` to `toIso`. Null when either is invalid. */
export function relativeTime(toIso: string | null, fromIso: string): string | null {
  if (!toIso) return null;
  const to = Date.parse(toIso);
  const from = Date.parse(fromIso);
  if (Number.isNaN(to) || Number.isNaN(from)) return null;
  const seconds = Math.round((to - from) / 1000);
  if (Math.abs(seconds) < 30) return 'now';
  const text = formatDurationSeconds(Math.abs(seconds));
  return seconds > 0 ? `in ${text}` : `${text} ago`;
}

/** Expected impact duration as reported by Azure (DurationInSeconds; -1 = unknown). */
export function formatExpectedDuration(durationInSeconds: number): string {
  if (durationInSeconds < 0) return 'not reported';
  if (durationInSeconds === 0) return '0 s';
  return formatDurationSeconds(durationInSeconds);
}

/** An ISO instant as "Fri, 19 Sep 2025 18:29:47 UTC"; falls back to the raw string. */
export function formatUtc(iso: string | null, raw: string): string {
  if (iso) {
    const ms = Date.parse(iso);
    if (!Number.isNaN(ms)) return new Date(ms).toUTCString().replace(/GMT$/, 'UTC');
  }
  return raw === '' ? 'not set' : raw;
}

export type Severity = 'critical' | 'warning' | 'info' | 'resolved';

/**
 * How alarming an event type is: Preempt/Terminate are critical (the VM goes away); Reboot/Redeploy are
 * warnings; Freeze and anything else informational.
 */
export function eventTypeSeverity(eventType: string): Exclude<Severity, 'resolved'> {
  switch (eventType) {
    case 'Preempt':
    case 'Terminate':
      return 'critical';
    case 'Reboot':
    case 'Redeploy':
      return 'warning';
    default:
      return 'info';
  }
}

/** How alarming a record is: completed/canceled are resolved, the others as their event type. */
export function severityOf(record: LifecycleRecord): Severity {
  if (record.transition === 'completed' || record.transition === 'canceled') return 'resolved';
  return eventTypeSeverity(record.data.EventType);
}

/** Slack emoji shortcodes by severity. */
export const SLACK_EMOJI: Record<Severity, string> = {
  critical: ':rotating_light:',
  warning: ':warning:',
  info: ':information_source:',
  resolved: ':white_check_mark:',
};

/** Unicode emoji by severity (Teams does not expand shortcodes). */
export const UNICODE_EMOJI: Record<Severity, string> = {
  critical: '🚨',
  warning: '⚠️',
  info: 'ℹ️',
  resolved: '✅',
};

const TRANSITION_WORDS: Record<string, string> = {
  scheduled: 'scheduled',
  started: 'started',
  completed: 'completed',
  canceled: 'canceled',
  updated: 'updated',
  approved: 'approved',
};

/** Best display name of the VM the record is about. */
export function vmDisplayName(record: LifecycleRecord): string {
  const vm = record.data.vm;
  return vm.name || vm.computerName || vm.vmId || record.vmid || 'unknown VM';
}

/** "vm-web-01 (rg-web-prod, westeurope, zone 2)" with the parts that are known. */
export function vmDescription(record: LifecycleRecord): string {
  const vm = record.data.vm;
  const parts = [vm.resourceGroup, vm.location, vm.zone ? `zone ${vm.zone}` : ''].filter((p) => p !== '');
  if (vm.vmScaleSetName) parts.unshift(`scale set ${vm.vmScaleSetName}`);
  return parts.length === 0 ? vmDisplayName(record) : `${vmDisplayName(record)} (${parts.join(', ')})`;
}

/**
 * The Kubernetes node of the record (`data.kubernetes`, docs/kubernetes.md): "aks-nodepool1-0 (cluster
 * prod-weu)", or null outside Kubernetes.
 */
export function kubernetesNodeText(record: LifecycleRecord): string | null {
  const k8s = record.data.kubernetes;
  if (k8s === undefined || k8s.nodeName === '') return null;
  return k8s.clusterName ? `${k8s.nodeName} (cluster ${k8s.clusterName})` : k8s.nodeName;
}

/** "Azure maintenance scheduled: Reboot on vm-web-01" */
export function titleOf(record: LifecycleRecord): string {
  const word = TRANSITION_WORDS[record.transition] ?? record.transition;
  return `Azure maintenance ${word}: ${record.data.EventType} on ${vmDisplayName(record)}`;
}

/** NotBefore in UTC plus the distance from the record's time, e.g. "Fri, … UTC (in 14 min)". */
export function notBeforeText(record: LifecycleRecord): string {
  const utc = formatUtc(record.data.notBeforeUtc, record.data.NotBefore);
  const rel = relativeTime(record.data.notBeforeUtc, record.time);
  return rel ? `${utc} (${rel})` : utc;
}

/** Plain one-line summary used as Slack fallback text and notification text. */
export function summaryLine(record: LifecycleRecord): string {
  const d = record.data;
  const status = d.EventStatus ? ` [${d.EventStatus}]` : '';
  return `${titleOf(record)}${status}, not before ${notBeforeText(record)} (event ${d.EventId})`;
}

/**
 * Azure portal link for the VM, or null when the resource ID is unknown. Every segment of the resource ID is
 * percent-encoded, so a resource group or VM name with a space, `#`, `%`, `|` or `>` keeps the link whole (in
 * Slack's `<url|label>`, a Teams action, Alertmanager's generatorURL); the portal decodes it back.
 */
export function portalUrl(record: LifecycleRecord): string | null {
  const id = record.data.vm.resourceId;
  if (!id.startsWith('/subscriptions/')) return null;
  return `https://portal.azure.com/#@/resource${id.split('/').map(encodeURIComponent).join('/')}`;
}

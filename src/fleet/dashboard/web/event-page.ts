/**
 * The event page (`#event=<EventId>:<occurrence>`, linkable): the event's affected VMs and observers
 * (/api/event), its approvals (/api/event/approvals) and each affected VM's records of it as a timeline
 * (/api/event/records, paged).
 */
import { type EventApprovals, type EventDetail, type EventRecord, getJson, getPage } from './api.ts';
import { laneChart } from './charts.ts';
import { byId, setPager, tableBody } from './dom.ts';
import { cell, duration, esc, shortTime } from './format.ts';
import { vmLink } from './overview.ts';
import { records } from './state.ts';

const RECORDS_PAGE = 200;

/** The event the address names, or null on the overview. */
export function eventFromHash(): { id: string; occurrence: string } | null {
  const m = /^#event=(.+):(\d+)$/.exec(location.hash);
  if (!m) return null;
  try {
    return { id: decodeURIComponent(m[1]!), occurrence: m[2]! };
  } catch {
    return null;
  }
}

function renderApprovals(a: EventApprovals): void {
  let text = `outcome: ${a.outcome || 'none yet'}`;
  if (a.rule) text += `, rule ${a.rule}`;
  if (a.approvedAt) text += `, approved ${shortTime(a.approvedAt)}`;
  text += a.lapsed.length ? `; lapsed on ${a.lapsed.join(', ')}` : '; no lapsed approval';
  if (a.truncated) text += ` (only the first ${a.records.length} approved records are listed)`;
  byId('approvals-summary').textContent = text;
  const body = tableBody('approvals');
  if (a.records.length === 0) {
    body.innerHTML = '<tr><td colspan="7" class="empty">no approved records</td></tr>';
    return;
  }
  body.innerHTML = a.records
    .map(
      (r) =>
        `<tr data-vm="${esc(r.vmName)}" data-posted="${r.posted ? 'true' : 'false'}"><td>${vmLink(r.source, r.vmName || r.source)}</td>` +
        cell(shortTime(r.time)) +
        cell(r.rule || '–') +
        cell(r.leader === null ? '?' : r.leader ? 'leader' : 'not leader', 'leader') +
        cell(r.posted ? 'posted' : 'not posted', 'posted') +
        cell(r.dryRun ? 'dry run' : '') +
        cell(r.hooks ? `${r.hooks} (${r.hooksFailed} failed)` : '–') +
        '</tr>',
    )
    .join('');
}

function recordRow(t: EventRecord): string {
  return (
    `<tr data-vm="${esc(t.vmName)}" data-transition="${esc(t.transition)}" data-affects="${t.affectsVm ? 'true' : 'false'}">` +
    `<td>${vmLink(t.source, t.vmName || t.source)}${t.affectsVm ? '' : ' <span class="muted">(observer)</span>'}</td>` +
    cell(shortTime(t.time)) +
    cell(t.transition, `status-${t.transition}`) +
    cell(t.detail) +
    '</tr>'
  );
}

/** Shows page n of the event's records (its cursor is records.cursors[n - 1]). */
export async function loadRecords(n: number): Promise<void> {
  const cursor = records.cursors[n - 1];
  const { id, occurrence } = records;
  const path =
    `/api/event/records?id=${encodeURIComponent(id)}&occurrence=${encodeURIComponent(occurrence)}&limit=${RECORDS_PAGE}` +
    (byId<HTMLInputElement>('records-observers').checked ? '&affectsOnly=false' : '') +
    (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
  const answer = await getPage<EventRecord>(path);
  if (id !== records.id || occurrence !== records.occurrence) return;
  records.cursors.length = n;
  records.next = answer.next;
  const body = tableBody('event-records');
  if (answer.items.length === 0) body.innerHTML = '<tr><td colspan="4" class="empty">no records</td></tr>';
  else body.innerHTML = answer.items.map(recordRow).join('');
  laneChart(
    byId('event-timeline-chart'),
    answer.items,
    (t) => t.vmName || t.source,
    "timelines of the event's VMs",
  );
  setPager('records', n, answer.next);
}

function renderDetail(d: EventDetail): void {
  const e = d.event;
  byId('detail-title').textContent =
    `${e.eventId}${e.occurrence > 1 ? ` #${e.occurrence}` : ''} — ${e.eventType}, ${e.status}`;
  byId('detail-summary').textContent =
    `affects ${e.affectedVms} VM(s): ${e.affectedNames.join(', ') || '–'}` +
    `; reported by ${e.reportingVms} VM(s), ${e.observers} of them observers; first seen ${shortTime(e.firstSeenAt)}` +
    `; NotBefore ${shortTime(e.notBefore) || '–'}; notice ${duration(e.noticeSeconds)}; observed impact ` +
    `${duration(e.observedSeconds)}; region ${e.location || '–'}, zone ${e.zone || '–'}, scale set ` +
    `${e.scaleSet || '–'}; ${e.description || ''}`;
  tableBody('detail').innerHTML = d.observations
    .map((o) => {
      const ending =
        o.status === 'completed'
          ? o.inferred
            ? `inferred: ${o.reason}`
            : 'observed'
          : o.vmDeleted
            ? 'VM deleted'
            : '';
      return (
        `<tr data-affects="${o.affectsVm ? 'true' : 'false'}"><td>${vmLink(o.source, o.vmName || o.source)}</td>` +
        cell(o.affectsVm ? 'yes' : 'observer') +
        cell(o.status, `status-${o.status}`) +
        cell(shortTime(o.firstSeenAt)) +
        cell(o.noticeSeconds, 'num') +
        cell(o.observedSeconds, 'num') +
        cell(o.approval) +
        cell(ending) +
        cell(o.missing.join(' ')) +
        '</tr>'
      );
    })
    .join('');
}

async function showEvent(id: string, occurrence: string): Promise<void> {
  const section = byId('detail-section');
  if (records.id !== id || records.occurrence !== occurrence) {
    records.id = id;
    records.occurrence = occurrence;
    records.cursors = [''];
    section.removeAttribute('data-event-ready');
  }
  const q = `id=${encodeURIComponent(id)}&occurrence=${encodeURIComponent(occurrence)}`;
  const [detail, approvals] = await Promise.all([
    getJson<EventDetail>(`/api/event?${q}`),
    getJson<EventApprovals>(`/api/event/approvals?${q}`),
    loadRecords(records.cursors.length),
  ]);
  if (records.id !== id) return;
  renderDetail(detail);
  renderApprovals(approvals);
  section.setAttribute('data-event-ready', `${id}:${occurrence}`);
}

/** Shows the event page when the address names an event, the overview otherwise. */
export async function route(): Promise<void> {
  const e = eventFromHash();
  byId('overview').hidden = !!e;
  byId('detail-section').hidden = !e;
  if (!e) return;
  window.scrollTo(0, 0);
  await showEvent(e.id, e.occurrence);
}

/**
 * The overview: the window note, the cards, the pending and events tables, the blast radius, the lead-time
 * table, a VM's timeline and the filter drop-downs. Every loader drops an answer that arrives after a newer
 * refresh (page.generation).
 */
import {
  type BlastRadiusRow,
  type CoverageReport,
  type CoverageVm,
  type FleetSummary,
  getJson,
  getPage,
  type LeadTimeAndImpact,
  type ListPage,
  type MaintenanceView,
  type TimelineEntry,
  type VmView,
} from './api.ts';
import { laneChart, renderLeadTimeChart } from './charts.ts';
import { byId, field, filterWindow, form, setPager, tableBody } from './dom.ts';
import { cell, duration, esc, option, regionName, shortTime } from './format.ts';
import { blast, events, page, pending } from './state.ts';

const PENDING_PAGE = 50;
const MAX_NAMES = 12;
const SCOPE_NAMES: Record<string, string> = { scaleSet: 'scale set', zone: 'zone', location: 'region' };
/** The filter fields with drop-downs (their values from /api/values). */
export const FIELDS = ['type', 'location', 'zone', 'scaleSet', 'status'] as const;

export function renderNote(s: FleetSummary): void {
  const { since, until } = filterWindow();
  let text = since
    ? `showing events first seen since ${shortTime(since)}`
    : 'showing events of the whole history';
  if (until) text += `, before ${shortTime(until)}`;
  text += `; the history keeps ${s.retention ? `the last ${s.retention}` : 'everything'}`;
  if (s.oldestEventAt) text += ` (oldest kept event first seen ${shortTime(s.oldestEventAt)})`;
  text += `; ${covered(s.coveredVms)}`;
  byId('window-note').textContent = `${text}.`;
}

/** What every maintenance view says about the window: how many VMs' forwarders were watching. */
export function covered(n: number): string {
  return `${n} VM${n === 1 ? '' : 's'} covered in this window (sent a heartbeat)`;
}

/** A view's own note of the VMs covered in its window. */
export function renderCovered(id: string, n: number): void {
  const note = byId(id);
  note.textContent = `(${covered(n)})`;
  note.setAttribute('data-covered', String(n));
}

const STATE_ORDER = ['reporting', 'unhealthy', 'silent', 'gone'] as const;

function coverageRow(vm: CoverageVm): string {
  return (
    `<tr data-vm="${esc(vm.vmName)}" data-state="${esc(vm.state)}" class="coverage-${esc(vm.state)}">` +
    `<td>${vmLink(vm.source, vm.vmName || vm.source)}</td>` +
    cell(vm.state, `state state-${vm.state}`) +
    cell(vm.location) +
    cell(vm.zone || '(none)') +
    cell(vm.scaleSet || '(none)') +
    cell(vm.version) +
    cell(shortTime(vm.lastHeartbeatAt)) +
    cell(duration(vm.quietSeconds), 'num') +
    cell(vm.reason, 'why') +
    '</tr>'
  );
}

/** The coverage card (VMs per state) and table (the silent and unhealthy VMs, with why), for the scope filters. */
export async function loadCoverage(): Promise<void> {
  const mine = page.generation;
  const params = new URLSearchParams(events.query);
  const scope = new URLSearchParams();
  for (const key of ['location', 'zone', 'scaleSet', 'vm']) {
    const value = params.get(key);
    if (value) scope.set(key, value);
  }
  const c = await getJson<CoverageReport>(`/api/coverage?${scope.toString()}`);
  if (mine !== page.generation) return;
  const cards: Array<[label: string, value: number, id: string]> = [
    ...STATE_ORDER.map((s): [string, number, string] => [s, c.byState[s], s]),
    ['without heartbeat', c.withoutHeartbeat, 'without'],
  ];
  byId('coverage-cards').innerHTML = cards
    .map(
      ([label, value, id]) =>
        `<div class="card coverage-card state-${id}" data-testid="coverage-${id}" data-value="${value}">` +
        `${esc(label)}<b>${esc(value)}</b></div>`,
    )
    .join('');
  const lag = Math.max(0, ...c.partitions.map((p) => p.lagSeconds));
  const note = byId('coverage-note');
  note.textContent =
    `(${c.vms} VMs send heartbeats; consumer read to within ${duration(lag)}` +
    `${lag > c.settings.silentMarginSeconds ? ': behind, silence is measured up to where it read' : ''})`;
  note.setAttribute('data-vms', String(c.vms));
  const rows = [...c.silent.items, ...c.unhealthy.items];
  const body = tableBody('coverage-table');
  body.innerHTML =
    rows.length === 0
      ? '<tr><td colspan="9" class="empty">every VM with a heartbeat reports</td></tr>'
      : rows.map(coverageRow).join('');
}

/** Cards of the filtered events; the last two are fleet-wide (all time) and say so. */
export function renderCards(s: FleetSummary): void {
  const cards: Array<[label: string, value: unknown, id: string, fleetWide?: string]> = [
    ['Maintenance events', s.events, 'events'],
    ['Affected VMs', s.vms, 'vms'],
    ['Pending now', s.pendingTotal, 'pending'],
    ['Affected VM-events', s.affectedVmEvents, 'affected-vm-events'],
    ['Approved by us', s.approvals.us || 0, 'approved-us'],
    ['Lapsed approvals', s.approvals.lapsed || 0, 'lapsed'],
    ['VM deleted', s.vmDeleted, 'vm-deleted'],
    ['Missing transitions', s.missingTransitions, 'missing'],
    ['Median notice', duration(s.noticeSeconds.p50), 'notice-p50'],
    ['Median observed impact', duration(s.observedSeconds.p50), 'observed-p50'],
    [
      'Impact over advert',
      `${s.impactVsAdvertised.exceeded} of ${s.impactVsAdvertised.compared}`,
      'impact-exceeded',
    ],
    ['Records', s.records, 'records'],
    ['VMs covered', s.coveredVms, 'covered-vms'],
    ['Reporting VMs', s.reportingVms, 'reporting-vms', 'fleet-wide, all time'],
    ['Duplicates ignored', s.ingest.duplicates, 'duplicates', 'fleet-wide, all time'],
  ];
  byId('cards').innerHTML = cards
    .map(([label, value, id, fleetWide]) => {
      const fleet = fleetWide !== undefined;
      return (
        `<div class="card${fleet ? ' fleet-wide' : ''}" data-testid="card-${id}" data-scope="${fleet ? 'fleet' : 'filter'}"` +
        `${fleet ? ' title="not filtered: counted over the whole fleet and history"' : ''}>` +
        `${esc(label)}${fleet ? `<small>${esc(fleetWide)}</small>` : ''}<b>${esc(value)}</b></div>`
      );
    })
    .join('');
}

/** The event page's address: `#event=<EventId>:<occurrence>`. */
export function eventHash(id: string, occurrence: number): string {
  return `#event=${encodeURIComponent(id)}:${occurrence}`;
}

/** A cell linking to the event's page. */
export function eventLink(e: { eventId: string; occurrence: number }): string {
  return (
    `<td><a class="event" href="${esc(eventHash(e.eventId, e.occurrence))}" data-id="${esc(e.eventId)}"` +
    ` data-occurrence="${esc(e.occurrence)}">${esc(e.eventId)}${e.occurrence > 1 ? ` #${esc(e.occurrence)}` : ''}</a></td>`
  );
}

/** A link to a VM's timeline (a click shows it). */
export function vmLink(vm: string, label: string): string {
  return `<a class="vm" data-vm="${esc(vm)}">${esc(label)}</a>`;
}

function vmLinks(names: string[]): string {
  const shown = names.slice(0, MAX_NAMES).map((n) => vmLink(n, n));
  if (names.length > MAX_NAMES) shown.push(`<span class="muted">+${names.length - MAX_NAMES} more</span>`);
  return `<td class="names">${shown.join(' ')}</td>`;
}

function pendingRows(rows: MaintenanceView[]): string {
  return rows
    .map(
      (e) =>
        `<tr data-event="${esc(e.eventId)}">${eventLink(e)}${cell(e.eventType)}` +
        cell(e.status, `status-${e.status}`) +
        cell(shortTime(e.notBefore)) +
        cell(e.noticeSeconds, 'num') +
        cell(e.affectedVms, 'num affected') +
        vmLinks(e.affectedNames) +
        cell(e.observers, 'num') +
        cell(e.location) +
        cell(e.zone) +
        '</tr>',
    )
    .join('');
}

/** The pending table: its first page, or (more) the next page appended. */
export async function loadPending(more: boolean): Promise<void> {
  const mine = page.generation;
  const path =
    `/api/pending?${events.query}&limit=${PENDING_PAGE}` +
    (more && pending.next ? `&cursor=${encodeURIComponent(pending.next)}` : '');
  const answer = await getPage<MaintenanceView>(path);
  if (mine !== page.generation) return;
  const body = tableBody('pending');
  if (!more) pending.shown = 0;
  pending.shown += answer.items.length;
  pending.next = answer.next;
  if (!more && answer.items.length === 0)
    body.innerHTML = '<tr><td colspan="10" class="empty">nothing pending</td></tr>';
  else if (more) body.insertAdjacentHTML('beforeend', pendingRows(answer.items));
  else body.innerHTML = pendingRows(answer.items);
  byId('pending-count').textContent = `(${answer.total === null ? pending.shown : answer.total})`;
  byId('pending-more').hidden = !answer.next;
}

function renderEvents(rows: MaintenanceView[]): void {
  const body = tableBody('events');
  if (rows.length === 0) {
    body.innerHTML = '<tr><td colspan="11" class="empty">no events match</td></tr>';
    return;
  }
  body.innerHTML = rows
    .map(
      (e) =>
        `<tr data-event="${esc(e.eventId)}" data-type="${esc(e.eventType)}">${eventLink(e)}` +
        cell(e.eventType) +
        cell(e.status, `status-${e.status}`) +
        cell(shortTime(e.firstSeenAt)) +
        cell(shortTime(e.notBefore)) +
        cell(e.affectedVms, 'num affected') +
        cell(e.observers, 'num') +
        cell(e.noticeSeconds, 'num') +
        cell(e.advertisedSeconds, 'num') +
        cell(e.observedSeconds, 'num') +
        cell(e.approval) +
        '</tr>',
    )
    .join('');
}

/** Shows page number n (1-based) of the events; its cursor is events.cursors[n - 1]. */
export async function loadEvents(n: number): Promise<void> {
  const mine = page.generation;
  const cursor = events.cursors[n - 1];
  const size = byId<HTMLSelectElement>('page-size').value;
  const after = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
  const path = `/api/events?${events.query}&limit=${size}${after}`;
  const answer = await getPage<MaintenanceView>(path);
  if (mine !== page.generation) return;
  events.cursors.length = n;
  events.next = answer.next;
  renderEvents(answer.items);
  setPager('events', n, answer.next);
}

function blastRow(r: BlastRadiusRow): string {
  return (
    `<tr data-scope="${esc(r.scope)}" data-name="${esc(r.name)}" data-over="${r.overThreshold ? 'true' : 'false'}"` +
    `${r.overThreshold ? ' class="over"' : ''}>${cell(SCOPE_NAMES[r.scope] || r.scope)}${cell(r.name)}` +
    cell(r.pendingVms, `num pending${r.pendingOverThreshold ? ' over' : ''}`) +
    cell(r.maxConcurrentVms, `num peak${r.peakOverThreshold ? ' over' : ''}`) +
    cell(shortTime(r.peakAt)) +
    '</tr>'
  );
}

/** Shows page n of the blast radius (its cursor is blast.cursors[n - 1]). */
export async function loadBlast(n: number): Promise<void> {
  const mine = page.generation;
  const cursor = blast.cursors[n - 1];
  const scope = byId<HTMLSelectElement>('blast-scope').value;
  const size = byId<HTMLSelectElement>('blast-size').value;
  const path =
    `/api/blast-radius?${events.query}&limit=${size}${scope ? `&scope=${scope}` : ''}` +
    (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
  const answer = await getPage<BlastRadiusRow>(path);
  if (mine !== page.generation) return;
  blast.cursors.length = n;
  blast.next = answer.next;
  const threshold = answer.headers.get('x-blast-radius-threshold');
  const over = answer.headers.get('x-over-threshold-count');
  const note = byId('blast-note');
  const coveredVms = Number(answer.headers.get('x-covered-vms') ?? 0);
  note.textContent = `(threshold ${threshold} VMs; ${over} of ${answer.total} over it; ${covered(coveredVms)})`;
  note.setAttribute('data-covered', String(coveredVms));
  note.setAttribute('data-threshold', String(threshold));
  note.setAttribute('data-over', String(over));
  const body = tableBody('blast');
  if (answer.items.length === 0)
    body.innerHTML = '<tr><td colspan="5" class="empty">no affected VMs in the window</td></tr>';
  else body.innerHTML = answer.items.map(blastRow).join('');
  setPager('blast', n, answer.next);
}

/** Notice and impact per type and region: the numbers in a table and a range chart on one log axis. */
export function renderLeadTime(view: LeadTimeAndImpact): void {
  const rows = view.rows;
  const body = tableBody('leadtime');
  renderLeadTimeChart(byId('leadtime-chart'), rows);
  if (rows.length === 0) {
    body.innerHTML = '<tr><td colspan="11" class="empty">no events in the window</td></tr>';
    return;
  }
  body.innerHTML = rows
    .map(
      (r) =>
        `<tr data-type="${esc(r.eventType)}" data-location="${esc(r.location)}"${r.location === '(all)' ? ' class="all"' : ''}>` +
        cell(r.eventType) +
        cell(regionName(r.location)) +
        cell(r.events, 'num') +
        cell(r.notice.count, 'num') +
        cell(duration(r.notice.p50), 'num notice-p50') +
        cell(duration(r.notice.p90), 'num') +
        cell(duration(r.notice.max), 'num notice-max') +
        cell(r.observed.count, 'num') +
        cell(duration(r.observed.p50), 'num observed-p50') +
        cell(duration(r.observed.p90), 'num') +
        cell(duration(r.observed.max), 'num observed-max') +
        '</tr>',
    )
    .join('');
}

function renderTimeline(entries: TimelineEntry[]): void {
  tableBody('timeline').innerHTML = entries
    .map(
      (t) =>
        `<tr data-transition="${esc(t.transition)}">${cell(shortTime(t.time))}${cell(t.transition, `status-${t.transition}`)}` +
        eventLink(t) +
        cell(t.eventType) +
        cell(t.detail) +
        '</tr>',
    )
    .join('');
  laneChart(byId('timeline-chart'), entries, (t) => t.eventId, 'VM timeline');
}

/** Shows a VM's timeline (and selects it; a VM clicked in an event that is not among the options is added). */
export async function showTimeline(vm: string): Promise<void> {
  const select = byId<HTMLSelectElement>('timeline-vm');
  select.value = vm;
  if (select.value !== vm) {
    select.insertAdjacentHTML('beforeend', option(vm, vm));
    select.value = vm;
  }
  if (!vm) {
    renderTimeline([]);
    return;
  }
  renderTimeline(await getJson<TimelineEntry[]>(`/api/timeline?vm=${encodeURIComponent(vm)}`));
}

/** The most values a drop-down lists (one page of /api/values); the rest are said to exist. */
const MAX_OPTIONS = 1000;

function fillSelect(name: string, values: ListPage<string>): void {
  const select = field<HTMLSelectElement>(name);
  const current = select.value;
  const more = values.next === null ? '' : `<option disabled>(first ${MAX_OPTIONS} shown)</option>`;
  select.innerHTML = `<option value="">all</option>${values.items.map((v) => option(v, v)).join('')}${more}`;
  select.value = current;
}

/** Fills the filter drop-downs and the timeline's VM list. */
export async function loadOptions(): Promise<void> {
  const [values, vms] = await Promise.all([
    Promise.all(FIELDS.map((f) => getPage<string>(`/api/values?field=${f}&limit=${MAX_OPTIONS}`))),
    getPage<VmView>(`/api/vms?limit=${MAX_OPTIONS}`),
  ]);
  FIELDS.forEach((f, i) => {
    fillSelect(f, values[i]!);
  });
  byId('timeline-vm').innerHTML =
    '<option value="">choose a VM</option>' +
    vms.items.map((v) => option(v.source, `${v.vmName || v.source} (${v.records})`)).join('');
}

/** Resets the filter form to the default window (the last 30 days). */
export function setDefaultWindow(): void {
  form.reset();
  field('since').value = page.defaultSince;
}

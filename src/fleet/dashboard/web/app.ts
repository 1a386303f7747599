/**
 * The fleet dashboard's page script (bundled by src/fleet/dashboard/web-build.ts into /assets/app.js; no CDN, no
 * chart library, no inline script: the page's CSP allows only 'self').
 *
 * The page opens on the last 30 days (of the server's clock; the since filter is pre-filled and can be changed
 * or cleared), fills its drop-downs from /api/values, its cards and charts from /api/summary (maintenance events
 * counted once), pending events from /api/pending and the events table from /api/events, a page at a time with
 * the cursor the server hands out. The operator views honour the same filters: events per day by type with
 * their impact (/api/timeseries, stacked bars), the blast radius per scale set, zone and region with the rows
 * over the threshold highlighted (/api/blast-radius, paged), notice lead time and observed impact per type and
 * region (/api/lead-time) on log scales labelled in auto units (s, min, h, d). Cards that cannot follow the
 * filters (ingest counters, reporting VMs) say they are fleet-wide. Every view says how many VMs were covered
 * (sent a heartbeat) in its window; the coverage card and table (/api/coverage) show which VMs' forwarders
 * report, are silent, unhealthy or gone now.
 *
 * Every event row links to the event's own page (event-page.ts). The page refreshes itself (default every 30 s;
 * interval selector, pause button; `?refresh=N` seconds in the URL; no refresh while the tab is hidden).
 */
import { errorMessage } from '../../../errors.ts';
import { type FleetSummary, getJson, type LeadTimeAndImpact, type Status, type TimeSeries } from './api.ts';
import { DAY_MS, renderImpact, renderNotice, renderTimeSeries } from './charts.ts';
import { byId, field, filterWindow, form } from './dom.ts';
import { eventFromHash, loadRecords, route } from './event-page.ts';
import { isoSeconds, option } from './format.ts';
import {
  loadBlast,
  loadCoverage,
  loadEvents,
  loadOptions,
  loadPending,
  renderCards,
  renderCovered,
  renderLeadTime,
  renderNote,
  setDefaultWindow,
  showTimeline,
} from './overview.ts';
import { blast, events, type Paging, page, records } from './state.ts';

const DEFAULT_WINDOW_DAYS = 30;
const DEFAULT_REFRESH_SECONDS = '30';

const auto: { timer: number | undefined; paused: boolean; ticks: number; running: boolean } = {
  timer: undefined,
  paused: false,
  ticks: 0,
  running: false,
};

/** The filter as a query string; since is kept even when empty (empty: the whole history). */
function query(): string {
  const params = new URLSearchParams();
  new FormData(form).forEach((value, key) => {
    if (value !== '' || key === 'since') params.set(key, String(value));
  });
  return params.toString();
}

function showError(error: unknown): void {
  const status = byId('status');
  status.textContent = `error: ${errorMessage(error)}`;
  status.className = 'error';
}

// ---- Auto-refresh

const refreshInterval = () => byId<HTMLSelectElement>('refresh-interval');

function intervalSeconds(): number {
  return Number(refreshInterval().value) || Number(DEFAULT_REFRESH_SECONDS);
}

function setRefreshState(state: string, text: string): void {
  const el = byId('refresh-state');
  el.setAttribute('data-state', state);
  el.textContent = text;
}

/** (Re)starts the countdown to the next refresh, unless paused or the tab is hidden. */
function schedule(): void {
  window.clearTimeout(auto.timer);
  auto.timer = undefined;
  if (auto.paused) {
    setRefreshState('paused', 'paused');
    return;
  }
  if (document.hidden) {
    setRefreshState('hidden', 'paused while the tab is hidden');
    return;
  }
  if (auto.running) return; // the refresh under way schedules the next one when it ends
  const next = new Date(Date.now() + intervalSeconds() * 1000).toISOString().slice(11, 19);
  setRefreshState('running', `next at ${next}Z`);
  auto.timer = window.setTimeout(tick, intervalSeconds() * 1000);
}

function tick(): void {
  auto.timer = undefined;
  auto.ticks++;
  byId('refresh-state').setAttribute('data-ticks', String(auto.ticks));
  const work = [refresh(true)];
  if (eventFromHash()) work.push(route());
  Promise.all(work).catch(showError);
}

function updateUrl(q: string): void {
  const params = new URLSearchParams(q);
  if (refreshInterval().value !== DEFAULT_REFRESH_SECONDS) params.set('refresh', refreshInterval().value);
  history.replaceState(null, '', `?${params.toString()}${location.hash}`);
}

function setExportLinks(listQuery: string): void {
  const obs = new URLSearchParams(listQuery);
  if (field('affectsOnly').checked) obs.set('affectsOnly', 'true');
  obs.set('view', 'observations');
  byId<HTMLAnchorElement>('export-csv').href = `/api/export.csv?${listQuery}`;
  byId<HTMLAnchorElement>('export-json').href = `/api/export.json?${listQuery}`;
  byId<HTMLAnchorElement>('export-observations-csv').href = `/api/export.csv?${obs.toString()}`;
  byId<HTMLAnchorElement>('export-observations-json').href = `/api/export.json?${obs.toString()}`;
}

function render(
  summary: FleetSummary,
  status: Status,
  series: TimeSeries,
  leadTime: LeadTimeAndImpact,
): void {
  const now = Date.parse(status.now);
  if (!Number.isNaN(now)) page.serverNow = now;
  renderNote(summary);
  renderCards(summary);
  byId('event-count').textContent = `(${summary.events})`;
  renderNotice(byId('notice-chart'), summary.noticeSeconds);
  renderImpact(byId('impact-chart'), summary);
  renderTimeSeries(byId('timeseries-chart'), byId('timeseries-legend'), series, {
    ...filterWindow(),
    now: page.serverNow,
  });
  renderLeadTime(leadTime);
  renderCovered('timeseries-note', series.coveredVms);
  renderCovered('leadtime-note', leadTime.coveredVms);
  const parts = status.partitions ? [`partitions ${status.partitions.join(',') || 'none'}`] : [];
  const ingest = summary.ingest;
  parts.push(
    `fleet-wide: ingested ${ingest.accepted}, duplicates ${ingest.duplicates}, rejected ${ingest.rejected}`,
  );
  const line = byId('status');
  line.textContent = parts.join(' · ');
  line.className = '';
}

/**
 * Reloads every card, chart and table for the filter. soft (the auto-refresh): the same pages of the events
 * and the blast radius as before, unless the filter changed.
 */
async function refresh(soft: boolean): Promise<void> {
  const q = query();
  const mine = ++page.generation;
  const params = new URLSearchParams(q);
  params.delete('affectsOnly');
  const listQuery = params.toString();
  if (!soft || events.query !== listQuery) {
    events.cursors = [''];
    blast.cursors = [''];
  }
  events.query = listQuery;
  setExportLinks(listQuery);
  updateUrl(q);
  auto.running = true;
  window.clearTimeout(auto.timer);
  document.body.setAttribute('data-refreshing', 'true');
  try {
    const [summary, status, series, leadTime] = await Promise.all([
      getJson<FleetSummary>(`/api/summary?${listQuery}`),
      getJson<Status>('/api/status'),
      getJson<TimeSeries>(`/api/timeseries?${listQuery}`),
      getJson<LeadTimeAndImpact>(`/api/lead-time?${listQuery}`),
      loadEvents(events.cursors.length),
      loadPending(false),
      loadBlast(blast.cursors.length),
      loadCoverage(),
    ]);
    if (mine === page.generation) {
      render(summary, status, series, leadTime);
      document.body.setAttribute('data-generation', String(mine));
      document.body.setAttribute('data-ready', 'true');
    }
  } catch (error) {
    showError(error);
  }
  if (mine !== page.generation) return;
  auto.running = false;
  document.body.setAttribute('data-refreshing', 'false');
  schedule();
}

// ---- Wiring

/** A pager's buttons: next (with the cursor the server handed out), previous and first page. */
function pager(prefix: string, state: Paging, load: (n: number) => Promise<void>): void {
  byId(`${prefix}-next`).addEventListener('click', () => {
    if (!state.next) return;
    state.cursors.push(state.next);
    load(state.cursors.length).catch(showError);
  });
  byId(`${prefix}-prev`).addEventListener('click', () => {
    if (state.cursors.length > 1) load(state.cursors.length - 1).catch(showError);
  });
  byId(`${prefix}-first`).addEventListener('click', () => {
    load(1).catch(showError);
  });
}

form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void refresh(false);
});
byId('default-window').addEventListener('click', () => {
  setDefaultWindow();
  void refresh(false);
});
pager('events', events, loadEvents);
pager('blast', blast, loadBlast);
pager('records', records, loadRecords);
const onChange = (id: string, listener: (ev: Event) => void) => byId(id).addEventListener('change', listener);
onChange('page-size', () => loadEvents(1).catch(showError));
onChange('blast-size', () => loadBlast(1).catch(showError));
onChange('blast-scope', () => loadBlast(1).catch(showError));
onChange('records-observers', () => loadRecords(1).catch(showError));
onChange('timeline-vm', (ev) => showTimeline((ev.target as HTMLSelectElement).value).catch(showError));
onChange('refresh-interval', () => {
  updateUrl(query());
  schedule();
});
byId('pending-more').addEventListener('click', () => loadPending(true).catch(showError));
byId('refresh-pause').addEventListener('click', () => {
  auto.paused = !auto.paused;
  const button = byId('refresh-pause');
  button.textContent = auto.paused ? 'resume' : 'pause';
  button.setAttribute('aria-pressed', auto.paused ? 'true' : 'false');
  schedule();
});
document.addEventListener('visibilitychange', schedule);
window.addEventListener('hashchange', () => {
  route().catch(showError);
});
document.addEventListener('click', (ev) => {
  const target = ev.target instanceof Element ? ev.target : null;
  const vm = target?.closest('a.vm');
  if (!vm) return;
  ev.preventDefault();
  if (eventFromHash()) {
    // From the event page to the VM's timeline on the overview.
    history.pushState(null, '', location.pathname + location.search);
    void route();
  }
  showTimeline(vm.getAttribute('data-vm') ?? '')
    .then(() => byId('timeline-vm').scrollIntoView())
    .catch(showError);
});

// ---- Start: the refresh interval from the URL, the server's clock, the drop-downs, then the filter of the URL.

const initial = new URLSearchParams(location.search);
const refreshParam = initial.get('refresh');
if (refreshParam && /^\d{1,5}$/.test(refreshParam) && Number(refreshParam) > 0) {
  const select = refreshInterval();
  select.value = refreshParam;
  if (select.value !== refreshParam) {
    select.insertAdjacentHTML('beforeend', option(refreshParam, `${refreshParam} s`));
    select.value = refreshParam;
  }
}
Promise.all([getJson<Status>('/api/status'), loadOptions()])
  .then(([status]) => {
    const now = Date.parse(status.now);
    if (!Number.isNaN(now)) page.serverNow = now;
    page.defaultSince = isoSeconds(page.serverNow - DEFAULT_WINDOW_DAYS * DAY_MS);
    setDefaultWindow();
    initial.forEach((value, key) => {
      const el = form.elements.namedItem(key);
      if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = value === 'true';
      else if (el instanceof HTMLInputElement || el instanceof HTMLSelectElement) el.value = value;
    });
    return Promise.all([refresh(false), route()]);
  })
  .catch(showError);

/**
 * The dashboard's page, script and stylesheet, bundled as strings so that they ship inside the package (built
 * with tsc, no asset copy step) and are served by the dashboard itself: no CDN, no chart library, no inline
 * script or style (the CSP allows only 'self'). Charts are SVG drawn by the script. (The script avoids template
 * literals: it lives inside one.)
 *
 * The page opens on the last 30 days (of the server's clock; the since filter is pre-filled and can be
 * changed or cleared), fills its drop-downs from /api/values, its cards and charts from /api/summary (maintenance
 * events counted once), pending events from /api/pending and the events table from /api/events, a page at a
 * time with the cursor the server hands out. The operator views honour the same filters: events per day by type
 * with their impact (/api/timeseries, stacked bars), the blast radius per scale set, zone and region with the
 * rows over the threshold highlighted (/api/blast-radius, paged), notice lead time and observed impact per type
 * and region (/api/lead-time) on log scales labelled in auto units (s, min, h, d). Cards that cannot follow the
 * filters (ingest counters, reporting VMs) say they are fleet-wide.
 *
 * Every event row links to the event's own page, `#event=<EventId>:<occurrence>` (linkable): its affected VMs and
 * observers (/api/event), approvals (/api/event/approvals) and each affected VM's records of it as a timeline
 * (/api/event/records, paged). The page refreshes itself (default every 30 s; interval selector, pause button;
 * `?refresh=N` seconds in the URL; no refresh while the tab is hidden).
 */

export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fleet maintenance history</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<header>
  <h1>Fleet maintenance history</h1>
  <span id="status" data-testid="status">loading…</span>
  <span class="refresh" data-testid="refresh">
    <label>Auto-refresh every <select id="refresh-interval" data-testid="refresh-interval">
      <option value="10">10 s</option><option value="30" selected>30 s</option><option value="60">1 min</option><option value="300">5 min</option>
    </select></label>
    <button type="button" id="refresh-pause" data-testid="refresh-pause" aria-pressed="false">pause</button>
    <span id="refresh-state" data-testid="refresh-state" data-state="starting" data-ticks="0"></span>
  </span>
</header>
<form id="filters" data-testid="filters">
  <label>Since <input name="since" placeholder="YYYY-MM-DDThh:mm:ssZ" title="UTC time (ISO 8601); empty: the whole history"></label>
  <label>Until <input name="until" placeholder="YYYY-MM-DDThh:mm:ssZ" title="UTC time (ISO 8601); empty: until now"></label>
  <label>Type <select name="type"><option value="">all</option></select></label>
  <label>Region <select name="location"><option value="">all</option></select></label>
  <label>Zone <select name="zone"><option value="">all</option></select></label>
  <label>Scale set <select name="scaleSet"><option value="">all</option></select></label>
  <label>Status <select name="status"><option value="">all</option></select></label>
  <label>VM <input name="vm" placeholder="name contains"></label>
  <label class="check" title="per-VM exports only: leave out VMs that merely observed another VM's event"><input type="checkbox" name="affectsOnly" value="true"> per-VM export: affected VMs only</label>
  <button type="submit">Apply</button>
  <button type="button" id="default-window" data-testid="default-window">Last 30 days</button>
  <span class="exports">Export
    <a id="export-csv" data-testid="export-csv" href="/api/export.csv" download="fleet-events.csv">CSV</a>
    <a id="export-json" data-testid="export-json" href="/api/export.json" download="fleet-events.json">JSON</a>
    · per VM
    <a id="export-observations-csv" data-testid="export-observations-csv" href="/api/export.csv?view=observations" download="fleet-observations.csv">CSV</a>
    <a id="export-observations-json" data-testid="export-observations-json" href="/api/export.json?view=observations" download="fleet-observations.json">JSON</a>
  </span>
</form>
<main id="overview" data-testid="overview">
<p id="window-note" data-testid="window-note"></p>
<section id="cards" data-testid="cards"></section>
<section>
  <h2>Pending now <span id="pending-count" data-testid="pending-count"></span></h2>
  <table id="pending" data-testid="pending"><thead><tr>
    <th>Event</th><th>Type</th><th>Status</th><th>NotBefore</th><th>Notice (s)</th><th>Affected VMs</th><th>Affected names</th><th>Observers</th><th>Region</th><th>Zone</th>
  </tr></thead><tbody></tbody></table>
  <button type="button" id="pending-more" data-testid="pending-more" hidden>more</button>
</section>
<section class="charts">
  <figure class="wide"><figcaption>Maintenance events per day (UTC, first seen) by type, stacked; below: the day's affected VMs and its longest observed impact (log scale)</figcaption>
    <div id="timeseries-legend" class="legend" data-testid="timeseries-legend"></div>
    <div id="timeseries-chart" data-testid="timeseries-chart"></div></figure>
</section>
<section>
  <h2>Blast radius <span id="blast-note" data-testid="blast-note" class="muted"></span></h2>
  <p class="muted">Per scale set, zone and region of the affected VMs: the VMs pending maintenance now, and the most VMs impacted at once over the window (overlapping started–ended intervals). Rows above the threshold are highlighted.</p>
  <table id="blast" data-testid="blast"><thead><tr>
    <th>Scope</th><th>Name</th><th>Pending VMs now</th><th>Most VMs at once</th><th>Peak at</th>
  </tr></thead><tbody></tbody></table>
  <nav class="pager">
    <button type="button" id="blast-first" data-testid="blast-first" disabled>first page</button>
    <button type="button" id="blast-prev" data-testid="blast-prev" disabled>previous page</button>
    <span id="blast-page" data-testid="blast-page" data-page="1">page 1</span>
    <button type="button" id="blast-next" data-testid="blast-next" disabled>next page</button>
    <label>scope <select id="blast-scope" data-testid="blast-scope">
      <option value="">all</option><option value="scaleSet">scale sets</option><option value="zone">zones</option><option value="location">regions</option></select></label>
    <label>per page <select id="blast-size" data-testid="blast-size">
      <option>5</option><option selected>20</option><option>50</option><option>100</option></select></label>
  </nav>
</section>
<section class="charts">
  <figure><figcaption>Notice lead time (NotBefore − first seen) over the maintenance events, log scale</figcaption>
    <div id="notice-chart" data-testid="notice-chart"></div></figure>
  <figure><figcaption>Advertised (DurationInSeconds) versus observed impact, log scale</figcaption>
    <div id="impact-chart" data-testid="impact-chart"></div></figure>
</section>
<section>
  <h2>Notice and impact per type and region</h2>
  <figure class="wide"><figcaption>Bars: p50 to p90; tick: max; blue: notice lead time, red: observed impact (log scale)</figcaption>
    <div id="leadtime-chart" data-testid="leadtime-chart"></div></figure>
  <table id="leadtime" data-testid="leadtime"><thead><tr>
    <th>Type</th><th>Region</th><th>Events</th><th>Notice n</th><th>p50</th><th>p90</th><th>max</th><th>Observed n</th><th>p50</th><th>p90</th><th>max</th>
  </tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Maintenance events <span id="event-count" data-testid="event-count"></span></h2>
  <table id="events" data-testid="events"><thead><tr>
    <th>Event</th><th>Type</th><th>Status</th><th>First seen</th><th>NotBefore</th><th>Affected VMs</th><th>Observers</th><th>Notice (s)</th><th>Advertised (s)</th><th>Observed impact (s)</th><th>Approval</th>
  </tr></thead><tbody></tbody></table>
  <nav class="pager">
    <button type="button" id="events-first" data-testid="events-first" disabled>first page</button>
    <button type="button" id="events-prev" data-testid="events-prev" disabled>previous page</button>
    <span id="events-page" data-testid="events-page" data-page="1">page 1</span>
    <button type="button" id="events-next" data-testid="events-next" disabled>next page</button>
    <label>per page <select id="page-size" data-testid="page-size">
      <option>20</option><option selected>50</option><option>100</option><option>200</option></select></label>
  </nav>
</section>
<section>
  <h2>VM timeline <select id="timeline-vm" data-testid="timeline-vm"><option value="">choose a VM</option></select></h2>
  <div id="timeline-chart" data-testid="timeline-chart"></div>
  <table id="timeline" data-testid="timeline"><thead><tr>
    <th>Time</th><th>Transition</th><th>Event</th><th>Type</th><th>Detail</th>
  </tr></thead><tbody></tbody></table>
</section>
</main>
<section id="detail-section" data-testid="detail-section" hidden>
  <p><a href="#" id="event-back" data-testid="event-back">← fleet overview</a></p>
  <h2>Event <span id="detail-title" data-testid="detail-title"></span></h2>
  <p id="detail-summary" data-testid="detail-summary"></p>
  <h3>Affected VMs and observers</h3>
  <table id="detail" data-testid="detail"><thead><tr>
    <th>VM</th><th>Affected</th><th>Status</th><th>First seen</th><th>Notice (s)</th><th>Observed (s)</th><th>Approval</th><th>Ending</th><th>Missing</th>
  </tr></thead><tbody></tbody></table>
  <h3>Approvals</h3>
  <p id="approvals-summary" data-testid="approvals-summary"></p>
  <table id="approvals" data-testid="approvals"><thead><tr>
    <th>VM</th><th>Recorded</th><th>Rule</th><th>Leader</th><th>Posted</th><th>Dry run</th><th>Hooks</th>
  </tr></thead><tbody></tbody></table>
  <h3>Timelines <label class="check"><input type="checkbox" id="records-observers" data-testid="records-observers"> include observers</label></h3>
  <div id="event-timeline-chart" data-testid="event-timeline-chart"></div>
  <table id="event-records" data-testid="event-records"><thead><tr>
    <th>VM</th><th>Time</th><th>Transition</th><th>Detail</th>
  </tr></thead><tbody></tbody></table>
  <nav class="pager">
    <button type="button" id="records-first" data-testid="records-first" disabled>first page</button>
    <button type="button" id="records-prev" data-testid="records-prev" disabled>previous page</button>
    <span id="records-page" data-testid="records-page" data-page="1">page 1</span>
    <button type="button" id="records-next" data-testid="records-next" disabled>next page</button>
  </nav>
</section>
<script src="/assets/app.js"></script>
</body>
</html>
`;

export const APP_CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; color: #1b1f24; background: #fafbfc; }
header { display: flex; align-items: baseline; gap: 1rem; flex-wrap: wrap; }
header .refresh { margin-left: auto; font-size: 12px; color: #57606a; display: flex; gap: .5rem; align-items: baseline; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; } h3 { font-size: 1rem; margin-top: 1.2rem; }
#status, #window-note, .muted { color: #57606a; }
form { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; padding: .75rem; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
form label { display: flex; flex-direction: column; font-size: 12px; color: #57606a; }
form label.check { flex-direction: row; align-items: center; gap: .25rem; }
label.check { font-size: 12px; font-weight: normal; color: #57606a; }
form .exports { align-self: center; color: #57606a; }
#cards { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1rem; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; min-width: 8rem; }
.card b { display: block; font-size: 1.4rem; }
.card.fleet-wide { background: #f6f8fa; border-style: dashed; }
.card small { display: block; color: #57606a; font-size: 11px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #eaeef2; padding: .25rem .5rem; text-align: left; white-space: nowrap; }
td.names { white-space: normal; max-width: 28rem; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.over td { background: #ffebe9; }
td.over { color: #cf222e; font-weight: 700; }
.pager { display: flex; gap: .75rem; align-items: center; margin-top: .5rem; }
.pager label { font-size: 12px; color: #57606a; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; margin-top: 1rem; }
figure { margin: 0; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem; flex: 1 1 420px; }
figure.wide { flex-basis: 100%; }
figcaption { font-size: 12px; color: #57606a; }
.legend { display: flex; flex-wrap: wrap; gap: .75rem; font-size: 12px; color: #57606a; margin: .25rem 0; }
.legend svg { vertical-align: middle; margin-right: .25rem; }
svg text { font-size: 10px; fill: #57606a; }
svg line.grid { stroke: #eaeef2; }
.bar { fill: #0969da; } .adv { fill: #8c959f; } .obs { fill: #cf222e; } .notice { fill: #0969da; } .vmbar { fill: #8c959f; }
.status-scheduled { color: #9a6700; } .status-started { color: #cf222e; } .status-completed { color: #1a7f37; } .status-canceled { color: #57606a; }
a.vm, a.event { cursor: pointer; color: #0969da; }
.empty { color: #57606a; font-style: italic; }
.error { color: #cf222e; }
`;

export const APP_JS = String.raw`
(function () {
  'use strict';
  var form = document.getElementById('filters');
  var SVGNS = 'http://www.w3.org/2000/svg';
  var DAY_MS = 86400000;
  var DEFAULT_WINDOW_DAYS = 30;
  var PENDING_PAGE = 50;
  var RECORDS_PAGE = 200;
  var MAX_NAMES = 12;
  /** The time axis fills at most this many days (longer windows: only the days from the first event on). */
  var MAX_AXIS_DAYS = 1000;
  var FIELDS = ['type', 'location', 'zone', 'scaleSet', 'status'];
  var TYPE_COLORS = { Freeze: '#0969da', Reboot: '#cf222e', Redeploy: '#8250df', Preempt: '#bf8700', Terminate: '#57606a' };
  var PALETTE = ['#1a7f37', '#e16f24', '#6639ba', '#0550ae', '#a40e26', '#4d2d00'];
  /** Log-scale ticks: 0.1 s to 30 days. */
  var TICKS = [0.1, 1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000];

  var defaultSince = '';
  var serverNow = Date.now();
  var generation = 0;
  var events = { query: '', cursors: [''], next: null };
  var pending = { query: '', next: null, shown: 0 };
  var blast = { cursors: [''], next: null };
  var records = { id: '', occurrence: '', cursors: [''], next: null };
  var auto = { timer: null, paused: false, ticks: 0, running: false };

  function $(id) { return document.getElementById(id); }
  function esc(value) {
    return String(value === null || value === undefined ? '' : value)
      .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }
  function cell(value, cls) { return '<td' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(value) + '</td>'; }
  function shortTime(iso) { return iso ? String(iso).replace('T', ' ').replace(/\.\d+Z$/, 'Z') : ''; }
  function isoSeconds(ms) { return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z'); }
  function seconds(v) { return v === null || v === undefined ? '–' : String(Math.round(v * 10) / 10); }
  function typeColor(type, types) {
    if (TYPE_COLORS[type]) return TYPE_COLORS[type];
    var i = types ? types.indexOf(type) : 0;
    return PALETTE[(i < 0 ? 0 : i) % PALETTE.length];
  }

  /** The filter as a query string; since is kept even when empty (empty: the whole history). */
  function query() {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) {
      if (value !== '' || key === 'since') params.set(key, String(value));
    });
    return params.toString();
  }
  function failure(res) {
    return res.json().catch(function () { return {}; }).then(function (b) { throw new Error(b.error || res.statusText); });
  }
  function getJson(path) {
    return fetch(path).then(function (res) { return res.ok ? res.json() : failure(res); });
  }
  /** A page of a list endpoint: the body is the items, the next page's cursor is in X-Next-Cursor. */
  function getPage(path) {
    return fetch(path).then(function (res) {
      if (!res.ok) return failure(res);
      return res.json().then(function (items) {
        var total = res.headers.get('x-total-count');
        return { items: items, next: res.headers.get('x-next-cursor'), total: total === null ? null : Number(total), headers: res.headers };
      });
    });
  }
  function setPager(prefix, n, next) {
    var label = $(prefix + '-page');
    label.textContent = 'page ' + n;
    label.setAttribute('data-page', String(n));
    $(prefix + '-next').disabled = !next;
    $(prefix + '-prev').disabled = n <= 1;
    $(prefix + '-first').disabled = n <= 1;
  }

  function fillSelect(name, values) {
    var select = form.elements.namedItem(name);
    var current = select.value;
    var html = '<option value="">all</option>';
    values.forEach(function (v) { html += '<option value="' + esc(v) + '">' + esc(v) + '</option>'; });
    select.innerHTML = html;
    select.value = current;
  }

  function renderNote(s) {
    var since = form.elements.namedItem('since').value;
    var until = form.elements.namedItem('until').value;
    var text = since ? 'showing events first seen since ' + shortTime(since) : 'showing events of the whole history';
    if (until) text += ', before ' + shortTime(until);
    text += '; the history keeps ' + (s.retention ? 'the last ' + s.retention : 'everything');
    if (s.oldestEventAt) text += ' (oldest kept event first seen ' + shortTime(s.oldestEventAt) + ')';
    $('window-note').textContent = text + '.';
  }

  /** Cards of the filtered events; the last two are fleet-wide (all time) and say so. */
  function renderCards(s) {
    var cards = [
      ['Maintenance events', s.events, 'events'], ['Affected VMs', s.vms, 'vms'],
      ['Pending now', s.pendingTotal, 'pending'],
      ['Affected VM-events', s.affectedVmEvents, 'affected-vm-events'],
      ['Approved by us', s.approvals.us || 0, 'approved-us'], ['Lapsed approvals', s.approvals.lapsed || 0, 'lapsed'],
      ['VM deleted', s.vmDeleted, 'vm-deleted'], ['Missing transitions', s.missingTransitions, 'missing'],
      ['Median notice', duration(s.noticeSeconds.p50), 'notice-p50'],
      ['Median observed impact', duration(s.observedSeconds.p50), 'observed-p50'],
      ['Impact over advert', s.impactVsAdvertised.exceeded + ' of ' + s.impactVsAdvertised.compared, 'impact-exceeded'],
      ['Records', s.records, 'records'],
      ['Reporting VMs', s.reportingVms, 'reporting-vms', 'fleet-wide, all time'],
      ['Duplicates ignored', s.ingest.duplicates, 'duplicates', 'fleet-wide, all time']
    ];
    $('cards').innerHTML = cards.map(function (c) {
      var fleet = c.length > 3;
      return '<div class="card' + (fleet ? ' fleet-wide' : '') + '" data-testid="card-' + c[2] + '" data-scope="' +
        (fleet ? 'fleet' : 'filter') + '"' + (fleet ? ' title="not filtered: counted over the whole fleet and history"' : '') + '>' +
        esc(c[0]) + (fleet ? '<small>' + esc(c[3]) + '</small>' : '') + '<b>' + esc(c[1]) + '</b></div>';
    }).join('');
  }

  function eventHash(id, occurrence) { return '#event=' + encodeURIComponent(id) + ':' + occurrence; }
  function eventLink(e) {
    return '<td><a class="event" href="' + esc(eventHash(e.eventId, e.occurrence)) + '" data-id="' + esc(e.eventId) +
      '" data-occurrence="' + esc(e.occurrence) + '">' + esc(e.eventId) + (e.occurrence > 1 ? ' #' + esc(e.occurrence) : '') + '</a></td>';
  }
  function vmLinks(names) {
    var shown = names.slice(0, MAX_NAMES).map(function (n) { return '<a class="vm" data-vm="' + esc(n) + '">' + esc(n) + '</a>'; });
    if (names.length > MAX_NAMES) shown.push('<span class="muted">+' + (names.length - MAX_NAMES) + ' more</span>');
    return '<td class="names">' + shown.join(' ') + '</td>';
  }

  function pendingRows(rows) {
    return rows.map(function (e) {
      return '<tr data-event="' + esc(e.eventId) + '">' + eventLink(e) + cell(e.eventType) +
        cell(e.status, 'status-' + e.status) + cell(shortTime(e.notBefore)) + cell(e.noticeSeconds, 'num') +
        cell(e.affectedVms, 'num affected') + vmLinks(e.affectedNames) + cell(e.observers, 'num') +
        cell(e.location) + cell(e.zone) + '</tr>';
    }).join('');
  }

  function loadPending(more) {
    var mine = generation;
    var q = events.query;
    var path = '/api/pending?' + q + '&limit=' + PENDING_PAGE + (more && pending.next ? '&cursor=' + encodeURIComponent(pending.next) : '');
    return getPage(path).then(function (page) {
      if (mine !== generation) return;
      var body = document.querySelector('#pending tbody');
      if (!more) pending.shown = 0;
      pending.shown += page.items.length;
      pending.next = page.next;
      if (!more && page.items.length === 0) body.innerHTML = '<tr><td colspan="10" class="empty">nothing pending</td></tr>';
      else if (more) body.insertAdjacentHTML('beforeend', pendingRows(page.items));
      else body.innerHTML = pendingRows(page.items);
      $('pending-count').textContent = '(' + (page.total === null ? pending.shown : page.total) + ')';
      $('pending-more').hidden = !page.next;
    });
  }

  function renderEvents(rows) {
    var body = document.querySelector('#events tbody');
    if (rows.length === 0) { body.innerHTML = '<tr><td colspan="11" class="empty">no events match</td></tr>'; return; }
    body.innerHTML = rows.map(function (e) {
      return '<tr data-event="' + esc(e.eventId) + '" data-type="' + esc(e.eventType) + '">' + eventLink(e) +
        cell(e.eventType) + cell(e.status, 'status-' + e.status) + cell(shortTime(e.firstSeenAt)) +
        cell(shortTime(e.notBefore)) + cell(e.affectedVms, 'num affected') + cell(e.observers, 'num') +
        cell(e.noticeSeconds, 'num') + cell(e.advertisedSeconds, 'num') + cell(e.observedSeconds, 'num') +
        cell(e.approval) + '</tr>';
    }).join('');
  }

  function pageSize() { return $('page-size').value; }

  /** Shows page number n (1-based) of the events; its cursor is events.cursors[n - 1]. */
  function loadEvents(n) {
    var mine = generation;
    var cursor = events.cursors[n - 1];
    var path = '/api/events?' + events.query + '&limit=' + pageSize() + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    return getPage(path).then(function (page) {
      if (mine !== generation) return;
      events.cursors.length = n;
      events.next = page.next;
      renderEvents(page.items);
      setPager('events', n, page.next);
    });
  }

  var SCOPE_NAMES = { scaleSet: 'scale set', zone: 'zone', location: 'region' };

  /** Shows page n of the blast radius (its cursor is blast.cursors[n - 1]). */
  function loadBlast(n) {
    var mine = generation;
    var cursor = blast.cursors[n - 1];
    var scope = $('blast-scope').value;
    var path = '/api/blast-radius?' + events.query + '&limit=' + $('blast-size').value + (scope ? '&scope=' + scope : '') +
      (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    return getPage(path).then(function (page) {
      if (mine !== generation) return;
      blast.cursors.length = n;
      blast.next = page.next;
      var threshold = page.headers.get('x-blast-radius-threshold');
      var over = page.headers.get('x-over-threshold-count');
      var note = $('blast-note');
      note.textContent = '(threshold ' + threshold + ' VMs; ' + over + ' of ' + page.total + ' over it)';
      note.setAttribute('data-threshold', String(threshold));
      note.setAttribute('data-over', String(over));
      var body = document.querySelector('#blast tbody');
      if (page.items.length === 0) body.innerHTML = '<tr><td colspan="5" class="empty">no affected VMs in the window</td></tr>';
      else body.innerHTML = page.items.map(function (r) {
        return '<tr data-scope="' + esc(r.scope) + '" data-name="' + esc(r.name) + '" data-over="' + (r.overThreshold ? 'true' : 'false') + '"' +
          (r.overThreshold ? ' class="over"' : '') + '>' + cell(SCOPE_NAMES[r.scope] || r.scope) + cell(r.name) +
          cell(r.pendingVms, 'num pending' + (r.pendingOverThreshold ? ' over' : '')) +
          cell(r.maxConcurrentVms, 'num peak' + (r.peakOverThreshold ? ' over' : '')) + cell(shortTime(r.peakAt)) + '</tr>';
      }).join('');
      setPager('blast', n, page.next);
    });
  }

  function svg(width, height) {
    var el = document.createElementNS(SVGNS, 'svg');
    el.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    el.setAttribute('width', '100%');
    el.setAttribute('role', 'img');
    return el;
  }
  function add(parent, name, attrs, text) {
    var el = document.createElementNS(SVGNS, name);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) el.textContent = text;
    parent.appendChild(el);
    return el;
  }
  /** Seconds in the unit that fits: s, min, h, d. */
  function duration(v) {
    if (v === null || v === undefined) return '–';
    var a = Math.abs(v), sign = v < 0 ? '−' : '';
    if (a < 120) return sign + (Math.round(a * 10) / 10) + ' s';
    if (a < 7200) return sign + Math.round(a / 60) + ' min';
    if (a < 172800) return sign + (Math.round(a / 360) / 10) + ' h';
    return sign + (Math.round(a / 8640) / 10) + ' d';
  }
  function tickLabel(v) {
    if (v < 1) return v + ' s';
    if (v < 60) return v + ' s';
    if (v < 3600) return (v / 60) + ' min';
    if (v < 86400) return (v / 3600) + ' h';
    return (v / 86400) + ' d';
  }

  /**
   * A log scale over seconds fitted to the values: from the tick at or below the smallest positive value to the
   * tick at or above the largest, mapped onto [x0, x1]; values at or below the bottom sit on x0.
   */
  function logScale(values, x0, x1) {
    var positive = values.filter(function (v) { return v !== null && v !== undefined && v > 0; });
    var lo = 1, hi = 10;
    if (positive.length > 0) {
      var min = Math.min.apply(null, positive), max = Math.max.apply(null, positive);
      lo = TICKS[0];
      TICKS.forEach(function (t) { if (t <= min) lo = t; });
      hi = TICKS[TICKS.length - 1];
      for (var i = TICKS.length - 1; i >= 0; i--) if (TICKS[i] >= max) hi = TICKS[i];
      if (hi <= lo) hi = lo * 10;
    }
    var l0 = Math.log(lo), span = Math.log(hi) - l0;
    var f = function (v) {
      if (v === null || v === undefined || v <= lo) return x0;
      return x0 + (x1 - x0) * Math.min(1, (Math.log(v) - l0) / span);
    };
    f.ticks = TICKS.filter(function (t) { return t >= lo && t <= hi; });
    return f;
  }
  /** Vertical grid lines and labels of a log axis at y (labels below). */
  function logAxis(chart, scale, yTop, yBottom) {
    scale.ticks.forEach(function (t) {
      var x = scale(t);
      add(chart, 'line', { class: 'grid', x1: x, y1: yTop, x2: x, y2: yBottom });
      add(chart, 'text', { class: 'tick', x: x, y: yBottom + 11, 'text-anchor': 'middle' }, tickLabel(t));
    });
  }

  var STATS = [['min', 'min'], ['p50', 'median'], ['mean', 'mean'], ['p90', 'p90'], ['max', 'max']];

  /** The notice lead time's distribution over the maintenance events (from the summary), log scale. */
  function renderNotice(d) {
    var host = $('notice-chart');
    host.innerHTML = '';
    if (d.count === 0) { host.innerHTML = '<p class="empty">no notice data</p>'; return; }
    var values = STATS.map(function (s) { return d[s[0]]; });
    var W = 460, rowH = 22, left = 50, right = W - 60, H = values.length * rowH + 40;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'notice lead time distribution');
    chart.setAttribute('data-scale', 'log');
    var x = logScale(values, left, right);
    logAxis(chart, x, 0, values.length * rowH + 4);
    values.forEach(function (v, i) {
      var y = i * rowH + 4;
      add(chart, 'text', { x: 0, y: y + 12 }, STATS[i][1]);
      var w = Math.max(1, x(v) - left);
      var bar = add(chart, 'rect', { class: 'bar', x: left, y: y, width: w, height: 14, 'data-stat': STATS[i][0], 'data-value': v === null ? '' : v });
      add(bar, 'title', {}, STATS[i][1] + ': ' + duration(v));
      add(chart, 'text', { x: left + w + 4, y: y + 11 }, duration(v));
    });
    add(chart, 'text', { x: 0, y: H - 4 }, d.count + ' events with a NotBefore');
    host.appendChild(chart);
  }

  /** Advertised versus observed impact (from the summary): their distributions side by side, log scale. */
  function renderImpact(s) {
    var host = $('impact-chart');
    host.innerHTML = '';
    var adv = s.advertisedSeconds, obs = s.observedSeconds;
    if (adv.count === 0 && obs.count === 0) { host.innerHTML = '<p class="empty">no impact data</p>'; return; }
    var stats = STATS.slice(1);
    var all = [];
    stats.forEach(function (st) { all.push(adv[st[0]], obs[st[0]]); });
    var W = 460, rowH = 26, left = 50, right = W - 60, H = stats.length * rowH + 56;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'advertised versus observed impact');
    chart.setAttribute('data-scale', 'log');
    var x = logScale(all, left, right);
    logAxis(chart, x, 0, stats.length * rowH + 4);
    stats.forEach(function (st, i) {
      var y = i * rowH + 4;
      add(chart, 'text', { x: 0, y: y + 14 }, st[1]);
      [[adv, 'adv', 'advertised', 0], [obs, 'obs', 'observed', 11]].forEach(function (k) {
        var v = k[0][st[0]];
        if (v === null || v === undefined) return;
        var w = Math.max(1, x(v) - left);
        var r = add(chart, 'rect', { class: k[1], x: left, y: y + k[3], width: w, height: 9, 'data-stat': st[0], 'data-value': v });
        add(r, 'title', {}, k[2] + ' ' + st[1] + ' ' + duration(v));
        add(chart, 'text', { x: left + w + 4, y: y + k[3] + 8 }, duration(v));
      });
    });
    var cmp = s.impactVsAdvertised;
    add(chart, 'text', { x: 0, y: H - 18 }, 'grey: advertised (' + adv.count + ' events), red: observed (' + obs.count + ' events)');
    add(chart, 'text', { x: 0, y: H - 4 }, 'observed impact exceeded the advert in ' + cmp.exceeded + ' of ' + cmp.compared + ' events with both');
    host.appendChild(chart);
  }

  function dayOf(ms) { return new Date(ms).toISOString().slice(0, 10); }

  /** The days of the time axis: the filter's window (or the data's), every day, at most MAX_AXIS_DAYS. */
  function axisDays(series) {
    var since = form.elements.namedItem('since').value;
    var until = form.elements.namedItem('until').value;
    var first = series.days.length ? series.days[0].day : null;
    var last = series.days.length ? series.days[series.days.length - 1].day : null;
    var start = since && !Number.isNaN(Date.parse(since)) ? dayOf(Date.parse(since)) : first;
    var end = until && !Number.isNaN(Date.parse(until)) ? dayOf(Date.parse(until) - 1) : dayOf(Math.max(serverNow, last ? Date.parse(last) : 0));
    if (last && last > end) end = last;
    if (!start) return [];
    var t0 = Date.parse(start + 'T00:00:00Z'), t1 = Date.parse(end + 'T00:00:00Z');
    if ((t1 - t0) / DAY_MS > MAX_AXIS_DAYS && first) t0 = Date.parse(first + 'T00:00:00Z');
    if ((t1 - t0) / DAY_MS > MAX_AXIS_DAYS) t0 = t1 - MAX_AXIS_DAYS * DAY_MS;
    var days = [];
    for (var t = t0; t <= t1; t += DAY_MS) days.push(dayOf(t));
    return days;
  }

  /** Events per day by type (stacked bars) with the day's affected VMs and longest observed impact below. */
  function renderTimeSeries(series) {
    var host = $('timeseries-chart');
    var legend = $('timeseries-legend');
    host.innerHTML = '';
    legend.innerHTML = '';
    if (series.days.length === 0) { host.innerHTML = '<p class="empty">no events in the window</p>'; return; }
    var byDay = {};
    series.days.forEach(function (d) { byDay[d.day] = d; });
    var days = axisDays(series);
    var W = 960, left = 44, right = W - 70, top = 14, topH = 150, gap = 28, bottomH = 70, H = top + topH + gap + bottomH + 30;
    var bw = (right - left) / days.length;
    var root = svg(W, H);
    root.setAttribute('aria-label', 'maintenance events per day by type');
    root.setAttribute('data-days', String(days.length));
    var chart = add(root, 'g', { transform: 'translate(0,' + top + ')' });
    var maxEvents = 1, maxVms = 1, impacts = [];
    series.days.forEach(function (d) {
      maxEvents = Math.max(maxEvents, d.events);
      maxVms = Math.max(maxVms, d.affectedVms);
      if (d.observedSecondsMax !== null) impacts.push(d.observedSecondsMax);
    });
    // Top panel: the y axis (events) at 0, half and max.
    [0, Math.round(maxEvents / 2), maxEvents].forEach(function (v) {
      var y = topH - topH * v / maxEvents;
      add(chart, 'line', { class: 'grid', x1: left, y1: y, x2: right, y2: y });
      add(chart, 'text', { x: left - 4, y: y + 3, 'text-anchor': 'end' }, String(v));
    });
    add(chart, 'text', { x: 0, y: -4 }, 'events per day');
    var labelEvery = Math.max(1, Math.ceil(days.length / 12));
    var y1 = topH + gap, yImpact = logScale(impacts, y1 + bottomH, y1);
    days.forEach(function (day, i) {
      var x = left + i * bw;
      var d = byDay[day];
      if (i % labelEvery === 0) add(chart, 'text', { x: x + bw / 2, y: H - top - 4, 'text-anchor': 'middle' }, day.slice(5));
      if (!d) return;
      var y = topH;
      series.types.forEach(function (type) {
        var n = d.byType[type] || 0;
        if (!n) return;
        var h = topH * n / maxEvents;
        y -= h;
        var r = add(chart, 'rect', { class: 'day-type', x: x + 0.5, y: y, width: Math.max(0.5, bw - 1), height: h, fill: typeColor(type, series.types), 'data-day': day, 'data-type': type, 'data-count': n });
        add(r, 'title', {}, day + ': ' + n + ' ' + type);
      });
      var vh = bottomH * d.affectedVms / maxVms;
      var vb = add(chart, 'rect', { class: 'vmbar', x: x + 0.5, y: y1 + bottomH - vh, width: Math.max(0.5, bw - 1), height: vh, 'data-day': day, 'data-affected': d.affectedVms });
      add(vb, 'title', {}, day + ': ' + d.affectedVms + ' affected VMs; longest observed impact ' + duration(d.observedSecondsMax) +
        ' (' + d.observedEvents + ' events measured, ' + duration(d.observedSecondsSum) + ' in all)');
      if (d.observedSecondsMax !== null) {
        var dot = add(chart, 'circle', { class: 'impact', cx: x + bw / 2, cy: yImpact(d.observedSecondsMax), r: 3, fill: '#cf222e', 'data-day': day, 'data-max': d.observedSecondsMax });
        add(dot, 'title', {}, day + ': longest observed impact ' + duration(d.observedSecondsMax));
      }
    });
    add(chart, 'line', { x1: left, y1: topH, x2: right, y2: topH, stroke: '#8c959f' });
    add(chart, 'line', { x1: left, y1: y1 + bottomH, x2: right, y2: y1 + bottomH, stroke: '#8c959f' });
    add(chart, 'text', { x: 0, y: y1 + 8 }, 'VMs');
    add(chart, 'text', { x: left - 4, y: y1 + 8, 'text-anchor': 'end' }, String(maxVms));
    yImpact.ticks.forEach(function (t) {
      add(chart, 'text', { class: 'tick', x: right + 4, y: yImpact(t) + 3 }, tickLabel(t));
    });
    add(chart, 'text', { x: right + 4, y: y1 - 6 }, 'impact');
    host.appendChild(root);
    legend.innerHTML = series.types.map(function (type) {
      return '<span data-type="' + esc(type) + '"><svg width="10" height="10" viewBox="0 0 10 10"><rect width="10" height="10" fill="' +
        esc(typeColor(type, series.types)) + '"></rect></svg>' + esc(type) + '</span>';
    }).join('') + '<span><svg width="10" height="10" viewBox="0 0 10 10"><rect width="10" height="10" class="vmbar"></rect></svg>affected VMs</span>' +
      '<span><svg width="10" height="10" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#cf222e"></circle></svg>longest observed impact</span>';
  }

  /** Notice and impact per type and region: a range chart on one log axis and the numbers in a table. */
  function renderLeadTime(view) {
    var rows = view.rows;
    var body = document.querySelector('#leadtime tbody');
    var host = $('leadtime-chart');
    host.innerHTML = '';
    if (rows.length === 0) {
      body.innerHTML = '<tr><td colspan="11" class="empty">no events in the window</td></tr>';
      host.innerHTML = '<p class="empty">no events in the window</p>';
      return;
    }
    body.innerHTML = rows.map(function (r) {
      var all = r.location === '(all)';
      return '<tr data-type="' + esc(r.eventType) + '" data-location="' + esc(r.location) + '"' + (all ? ' class="all"' : '') + '>' +
        cell(r.eventType) + cell(all ? 'all regions' : r.location) + cell(r.events, 'num') +
        cell(r.notice.count, 'num') + cell(duration(r.notice.p50), 'num notice-p50') + cell(duration(r.notice.p90), 'num') + cell(duration(r.notice.max), 'num notice-max') +
        cell(r.observed.count, 'num') + cell(duration(r.observed.p50), 'num observed-p50') + cell(duration(r.observed.p90), 'num') + cell(duration(r.observed.max), 'num observed-max') + '</tr>';
    }).join('');
    var values = [];
    rows.forEach(function (r) { values.push(r.notice.p50, r.notice.p90, r.notice.max, r.observed.p50, r.observed.p90, r.observed.max); });
    var W = 960, left = 200, right = W - 20, laneH = 24, H = rows.length * laneH + 24;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'notice lead time and observed impact per type and region');
    chart.setAttribute('data-scale', 'log');
    var x = logScale(values, left, right);
    logAxis(chart, x, 0, rows.length * laneH + 2);
    rows.forEach(function (r, i) {
      var y = i * laneH + 3;
      add(chart, 'text', { x: 0, y: y + 12 }, r.eventType + ' · ' + (r.location === '(all)' ? 'all regions' : r.location));
      [[r.notice, 'notice', 'notice', 0], [r.observed, 'obs', 'observed impact', 10]].forEach(function (k) {
        var m = k[0];
        if (!m.count) return;
        var x0 = x(m.p50), x1 = Math.max(x0 + 2, x(m.p90));
        var bar = add(chart, 'rect', { class: k[1], x: x0, y: y + k[3], width: x1 - x0, height: 8, 'data-measure': k[2], 'data-type': r.eventType, 'data-location': r.location });
        add(bar, 'title', {}, r.eventType + ' ' + r.location + ' ' + k[2] + ': p50 ' + duration(m.p50) + ', p90 ' + duration(m.p90) + ', max ' + duration(m.max) + ' (' + m.count + ')');
        add(chart, 'rect', { class: k[1], x: x(m.max) - 1, y: y + k[3] - 1, width: 2, height: 10 });
      });
    });
    host.appendChild(chart);
  }

  var TRANSITION_COLORS = { scheduled: '#9a6700', updated: '#8250df', approved: '#0969da', started: '#cf222e', completed: '#1a7f37', canceled: '#57606a' };

  /** A timeline chart: one lane per key (event or VM), a dot per record. */
  function laneChart(host, entries, laneOf, label) {
    host.innerHTML = '';
    if (entries.length === 0) return;
    var times = entries.map(function (t) { return Date.parse(t.time); });
    var t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
    var span = Math.max(1, t1 - t0);
    var lanes = [];
    entries.forEach(function (t) { var k = laneOf(t); if (lanes.indexOf(k) < 0) lanes.push(k); });
    var W = 900, left = 150, laneH = 22, H = lanes.length * laneH + 34;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', label);
    lanes.forEach(function (id, i) {
      add(chart, 'text', { x: 0, y: i * laneH + 14 }, String(id).slice(0, 24));
      add(chart, 'line', { x1: left, y1: i * laneH + 10, x2: W - 10, y2: i * laneH + 10, stroke: '#eaeef2' });
    });
    entries.forEach(function (t) {
      var x = left + (W - left - 20) * (Date.parse(t.time) - t0) / span;
      var dot = add(chart, 'circle', { cx: x, cy: lanes.indexOf(laneOf(t)) * laneH + 10, r: 5, fill: TRANSITION_COLORS[t.transition] || '#000', 'data-transition': t.transition });
      add(dot, 'title', {}, t.transition + ' ' + t.time);
    });
    add(chart, 'text', { x: left, y: H - 6 }, shortTime(new Date(t0).toISOString()));
    add(chart, 'text', { x: W - 10, y: H - 6, 'text-anchor': 'end' }, shortTime(new Date(t1).toISOString()) + ' (' + duration((t1 - t0) / 1000) + ')');
    host.appendChild(chart);
  }

  function renderTimeline(entries) {
    var body = document.querySelector('#timeline tbody');
    body.innerHTML = entries.map(function (t) {
      return '<tr data-transition="' + esc(t.transition) + '">' + cell(shortTime(t.time)) + cell(t.transition, 'status-' + t.transition) +
        eventLink(t) + cell(t.eventType) + cell(t.detail) + '</tr>';
    }).join('');
    laneChart($('timeline-chart'), entries, function (t) { return t.eventId; }, 'VM timeline');
  }

  function showTimeline(vm) {
    var select = $('timeline-vm');
    select.value = vm;
    if (select.value !== vm) {
      // A VM named in an event (clicked) that is not among the options: add it.
      select.insertAdjacentHTML('beforeend', '<option value="' + esc(vm) + '">' + esc(vm) + '</option>');
      select.value = vm;
    }
    if (!vm) { renderTimeline([]); return Promise.resolve(); }
    return getJson('/api/timeline?vm=' + encodeURIComponent(vm)).then(renderTimeline);
  }

  // ---- The event page (#event=ID:occurrence)

  function eventFromHash() {
    var m = /^#event=(.+):(\d+)$/.exec(location.hash);
    if (!m) return null;
    try { return { id: decodeURIComponent(m[1]), occurrence: m[2] }; } catch (e) { return null; }
  }

  function renderApprovals(a) {
    var text = 'outcome: ' + (a.outcome || 'none yet');
    if (a.rule) text += ', rule ' + a.rule;
    if (a.approvedAt) text += ', approved ' + shortTime(a.approvedAt);
    text += a.lapsed.length ? '; lapsed on ' + a.lapsed.join(', ') : '; no lapsed approval';
    if (a.truncated) text += ' (only the first ' + a.records.length + ' approved records are listed)';
    $('approvals-summary').textContent = text;
    var body = document.querySelector('#approvals tbody');
    if (a.records.length === 0) { body.innerHTML = '<tr><td colspan="7" class="empty">no approved records</td></tr>'; return; }
    body.innerHTML = a.records.map(function (r) {
      return '<tr data-vm="' + esc(r.vmName) + '" data-posted="' + (r.posted ? 'true' : 'false') + '"><td><a class="vm" data-vm="' + esc(r.source) + '">' +
        esc(r.vmName || r.source) + '</a></td>' + cell(shortTime(r.time)) + cell(r.rule || '–') +
        cell(r.leader === null ? '?' : r.leader ? 'leader' : 'not leader', 'leader') + cell(r.posted ? 'posted' : 'not posted', 'posted') +
        cell(r.dryRun ? 'dry run' : '') + cell(r.hooks ? r.hooks + ' (' + r.hooksFailed + ' failed)' : '–') + '</tr>';
    }).join('');
  }

  function loadRecords(n) {
    var cursor = records.cursors[n - 1];
    var id = records.id, occurrence = records.occurrence;
    var path = '/api/event/records?id=' + encodeURIComponent(id) + '&occurrence=' + encodeURIComponent(occurrence) + '&limit=' + RECORDS_PAGE +
      ($('records-observers').checked ? '&affectsOnly=false' : '') + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    return getPage(path).then(function (page) {
      if (id !== records.id || occurrence !== records.occurrence) return;
      records.cursors.length = n;
      records.next = page.next;
      var body = document.querySelector('#event-records tbody');
      if (page.items.length === 0) body.innerHTML = '<tr><td colspan="4" class="empty">no records</td></tr>';
      else body.innerHTML = page.items.map(function (t) {
        return '<tr data-vm="' + esc(t.vmName) + '" data-transition="' + esc(t.transition) + '" data-affects="' + (t.affectsVm ? 'true' : 'false') + '">' +
          '<td><a class="vm" data-vm="' + esc(t.source) + '">' + esc(t.vmName || t.source) + '</a>' + (t.affectsVm ? '' : ' <span class="muted">(observer)</span>') + '</td>' +
          cell(shortTime(t.time)) + cell(t.transition, 'status-' + t.transition) + cell(t.detail) + '</tr>';
      }).join('');
      laneChart($('event-timeline-chart'), page.items, function (t) { return t.vmName || t.source; }, 'timelines of the event\'s VMs');
      setPager('records', n, page.next);
    });
  }

  function showEvent(id, occurrence) {
    var section = $('detail-section');
    var key = id + ':' + occurrence;
    if (records.id !== id || records.occurrence !== String(occurrence)) {
      records.id = id;
      records.occurrence = String(occurrence);
      records.cursors = [''];
      section.removeAttribute('data-event-ready');
    }
    var q = 'id=' + encodeURIComponent(id) + '&occurrence=' + encodeURIComponent(occurrence);
    return Promise.all([getJson('/api/event?' + q), getJson('/api/event/approvals?' + q), loadRecords(records.cursors.length)]).then(function (r) {
      if (records.id !== id) return;
      var d = r[0], e = d.event;
      $('detail-title').textContent = e.eventId + (e.occurrence > 1 ? ' #' + e.occurrence : '') + ' — ' + e.eventType + ', ' + e.status;
      $('detail-summary').textContent = 'affects ' + e.affectedVms + ' VM(s): ' + (e.affectedNames.join(', ') || '–') +
        '; reported by ' + e.reportingVms + ' VM(s), ' + e.observers + ' of them observers; first seen ' + shortTime(e.firstSeenAt) +
        '; NotBefore ' + (shortTime(e.notBefore) || '–') + '; notice ' + duration(e.noticeSeconds) + '; observed impact ' +
        duration(e.observedSeconds) + '; region ' + (e.location || '–') + ', zone ' + (e.zone || '–') + ', scale set ' +
        (e.scaleSet || '–') + '; ' + (e.description || '');
      document.querySelector('#detail tbody').innerHTML = d.observations.map(function (o) {
        var ending = o.status === 'completed' ? (o.inferred ? 'inferred: ' + o.reason : 'observed') : (o.vmDeleted ? 'VM deleted' : '');
        return '<tr data-affects="' + (o.affectsVm ? 'true' : 'false') + '"><td><a class="vm" data-vm="' + esc(o.source) + '">' +
          esc(o.vmName || o.source) + '</a></td>' + cell(o.affectsVm ? 'yes' : 'observer') + cell(o.status, 'status-' + o.status) +
          cell(shortTime(o.firstSeenAt)) + cell(o.noticeSeconds, 'num') + cell(o.observedSeconds, 'num') + cell(o.approval) +
          cell(ending) + cell(o.missing.join(' ')) + '</tr>';
      }).join('');
      renderApprovals(r[1]);
      section.setAttribute('data-event-ready', key);
    });
  }

  /** Shows the event page when the hash names an event, the overview otherwise. */
  function route() {
    var e = eventFromHash();
    $('overview').hidden = !!e;
    $('detail-section').hidden = !e;
    if (!e) return Promise.resolve();
    window.scrollTo(0, 0);
    return showEvent(e.id, e.occurrence);
  }

  function showError(err) {
    var status = $('status');
    status.textContent = 'error: ' + err.message;
    status.className = 'error';
  }

  // ---- Auto-refresh

  function intervalSeconds() { return Number($('refresh-interval').value) || 30; }
  function setRefreshState(state, text) {
    var el = $('refresh-state');
    el.setAttribute('data-state', state);
    el.textContent = text;
  }
  /** (Re)starts the countdown to the next refresh, unless paused or the tab is hidden. */
  function schedule() {
    clearTimeout(auto.timer);
    auto.timer = null;
    if (auto.paused) { setRefreshState('paused', 'paused'); return; }
    if (document.hidden) { setRefreshState('hidden', 'paused while the tab is hidden'); return; }
    if (auto.running) return; // the refresh under way schedules the next one when it ends
    setRefreshState('running', 'next at ' + new Date(Date.now() + intervalSeconds() * 1000).toISOString().slice(11, 19) + 'Z');
    auto.timer = setTimeout(tick, intervalSeconds() * 1000);
  }
  function tick() {
    auto.timer = null;
    auto.ticks++;
    $('refresh-state').setAttribute('data-ticks', String(auto.ticks));
    var work = [refresh(true)];
    if (eventFromHash()) work.push(route());
    Promise.all(work).catch(showError);
  }

  function updateUrl(q) {
    var params = new URLSearchParams(q);
    if ($('refresh-interval').value !== '30') params.set('refresh', $('refresh-interval').value);
    history.replaceState(null, '', '?' + params.toString() + location.hash);
  }

  /**
   * Reloads every card, chart and table for the filter. soft (the auto-refresh): the same pages of the events
   * and the blast radius as before, unless the filter changed.
   */
  function refresh(soft) {
    var q = query();
    var mine = ++generation;
    var params = new URLSearchParams(q);
    params.delete('affectsOnly');
    var listQuery = params.toString();
    if (!soft || events.query !== listQuery) {
      events.cursors = [''];
      blast.cursors = [''];
    }
    events.query = listQuery;
    var obs = new URLSearchParams(listQuery);
    if (form.elements.namedItem('affectsOnly').checked) obs.set('affectsOnly', 'true');
    obs.set('view', 'observations');
    $('export-csv').href = '/api/export.csv?' + listQuery;
    $('export-json').href = '/api/export.json?' + listQuery;
    $('export-observations-csv').href = '/api/export.csv?' + obs.toString();
    $('export-observations-json').href = '/api/export.json?' + obs.toString();
    updateUrl(q);
    auto.running = true;
    clearTimeout(auto.timer);
    document.body.setAttribute('data-refreshing', 'true');
    return Promise.all([
      getJson('/api/summary?' + listQuery), getJson('/api/status'), getJson('/api/timeseries?' + listQuery),
      getJson('/api/lead-time?' + listQuery), loadEvents(events.cursors.length), loadPending(false), loadBlast(blast.cursors.length)
    ])
      .then(function (r) {
        if (mine !== generation) return;
        var summary = r[0], status = r[1];
        var now = Date.parse(status.now);
        if (!Number.isNaN(now)) serverNow = now;
        renderNote(summary);
        renderCards(summary);
        $('event-count').textContent = '(' + summary.events + ')';
        renderNotice(summary.noticeSeconds);
        renderImpact(summary);
        renderTimeSeries(r[2]);
        renderLeadTime(r[3]);
        var parts = status.partitions ? ['partitions ' + (status.partitions.join(',') || 'none')] : [];
        parts.push('fleet-wide: ingested ' + summary.ingest.accepted + ', duplicates ' + summary.ingest.duplicates + ', rejected ' + summary.ingest.rejected);
        $('status').textContent = parts.join(' · ');
        $('status').className = '';
        document.body.setAttribute('data-generation', String(mine));
        document.body.setAttribute('data-ready', 'true');
      })
      .catch(showError)
      .then(function () {
        if (mine !== generation) return;
        auto.running = false;
        document.body.setAttribute('data-refreshing', 'false');
        schedule();
      });
  }

  function loadOptions() {
    var values = FIELDS.map(function (f) { return getJson('/api/values?field=' + f); });
    return Promise.all(values.concat([getPage('/api/vms?limit=1000')])).then(function (r) {
      FIELDS.forEach(function (f, i) { fillSelect(f, r[i]); });
      var vms = r[FIELDS.length].items;
      $('timeline-vm').innerHTML = '<option value="">choose a VM</option>' + vms.map(function (v) {
        return '<option value="' + esc(v.source) + '">' + esc(v.vmName || v.source) + ' (' + v.records + ')</option>';
      }).join('');
    });
  }

  function setDefaultWindow() {
    form.reset();
    form.elements.namedItem('since').value = defaultSince;
  }

  form.addEventListener('submit', function (ev) { ev.preventDefault(); refresh(false); });
  $('default-window').addEventListener('click', function () { setDefaultWindow(); refresh(false); });
  function pager(prefix, state, load) {
    $(prefix + '-next').addEventListener('click', function () {
      if (!state().next) return;
      state().cursors.push(state().next);
      load(state().cursors.length).catch(showError);
    });
    $(prefix + '-prev').addEventListener('click', function () {
      if (state().cursors.length > 1) load(state().cursors.length - 1).catch(showError);
    });
    $(prefix + '-first').addEventListener('click', function () { load(1).catch(showError); });
  }
  pager('events', function () { return events; }, loadEvents);
  pager('blast', function () { return blast; }, loadBlast);
  pager('records', function () { return records; }, loadRecords);
  $('page-size').addEventListener('change', function () { loadEvents(1).catch(showError); });
  $('blast-size').addEventListener('change', function () { loadBlast(1).catch(showError); });
  $('blast-scope').addEventListener('change', function () { loadBlast(1).catch(showError); });
  $('records-observers').addEventListener('change', function () { loadRecords(1).catch(showError); });
  $('pending-more').addEventListener('click', function () { loadPending(true).catch(showError); });
  $('timeline-vm').addEventListener('change', function (ev) { showTimeline(ev.target.value).catch(showError); });
  $('refresh-interval').addEventListener('change', function () { updateUrl(query()); schedule(); });
  $('refresh-pause').addEventListener('click', function () {
    auto.paused = !auto.paused;
    var button = $('refresh-pause');
    button.textContent = auto.paused ? 'resume' : 'pause';
    button.setAttribute('aria-pressed', auto.paused ? 'true' : 'false');
    schedule();
  });
  document.addEventListener('visibilitychange', schedule);
  window.addEventListener('hashchange', function () { route().catch(showError); });
  document.addEventListener('click', function (ev) {
    var target = ev.target.closest ? ev.target : null;
    var vm = target && target.closest('a.vm');
    if (!vm) return;
    ev.preventDefault();
    if (eventFromHash()) {
      // From the event page to the VM's timeline on the overview.
      history.pushState(null, '', location.pathname + location.search);
      route();
    }
    showTimeline(vm.getAttribute('data-vm')).then(function () { $('timeline-vm').scrollIntoView(); }).catch(showError);
  });

  var initial = new URLSearchParams(location.search);
  var refreshParam = initial.get('refresh');
  if (refreshParam && /^\d{1,5}$/.test(refreshParam) && Number(refreshParam) > 0) {
    var select = $('refresh-interval');
    select.value = refreshParam;
    if (select.value !== refreshParam) {
      select.insertAdjacentHTML('beforeend', '<option value="' + esc(refreshParam) + '">' + esc(refreshParam) + ' s</option>');
      select.value = refreshParam;
    }
  }
  Promise.all([getJson('/api/status'), loadOptions()]).then(function (r) {
    var now = Date.parse(r[0].now);
    if (!Number.isNaN(now)) serverNow = now;
    defaultSince = isoSeconds(serverNow - DEFAULT_WINDOW_DAYS * DAY_MS);
    setDefaultWindow();
    initial.forEach(function (value, key) {
      var el = form.elements.namedItem(key);
      if (el && el.type === 'checkbox') el.checked = value === 'true'; else if (el) el.value = value;
    });
    return Promise.all([refresh(false), route()]);
  }).catch(showError);
})();
`;

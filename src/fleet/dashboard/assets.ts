/**
 * The dashboard's page, script and stylesheet, bundled as strings so that they ship inside the package (built
 * with tsc, no asset copy step) and are served by the dashboard itself: no CDN, no chart library, no inline
 * script or style (the CSP allows only 'self'). Charts are SVG drawn by the script. (The script avoids template
 * literals: it lives inside one.)
 *
 * The page opens on the last 30 days (of the server's clock; the since filter is pre-filled and can be
 * changed or cleared), fills its drop-downs from /api/values, its cards and charts from /api/summary (maintenance
 * events counted once), pending events from /api/pending and the events table from /api/events, a page at a
 * time with the cursor the server hands out.
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
  <figure><figcaption>Notice lead time (NotBefore − first seen), seconds, over the maintenance events</figcaption>
    <div id="notice-chart" data-testid="notice-chart"></div></figure>
  <figure><figcaption>Advertised (DurationInSeconds) versus observed impact, seconds</figcaption>
    <div id="impact-chart" data-testid="impact-chart"></div></figure>
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
<section id="detail-section" data-testid="detail-section" hidden>
  <h2>Event <span id="detail-title" data-testid="detail-title"></span></h2>
  <p id="detail-summary" data-testid="detail-summary"></p>
  <table id="detail" data-testid="detail"><thead><tr>
    <th>VM</th><th>Affected</th><th>Status</th><th>First seen</th><th>Notice (s)</th><th>Observed (s)</th><th>Approval</th><th>Ending</th><th>Missing</th>
  </tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>VM timeline <select id="timeline-vm" data-testid="timeline-vm"><option value="">choose a VM</option></select></h2>
  <div id="timeline-chart" data-testid="timeline-chart"></div>
  <table id="timeline" data-testid="timeline"><thead><tr>
    <th>Time</th><th>Transition</th><th>Event</th><th>Type</th><th>Detail</th>
  </tr></thead><tbody></tbody></table>
</section>
<script src="/assets/app.js"></script>
</body>
</html>
`;

export const APP_CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; color: #1b1f24; background: #fafbfc; }
header { display: flex; align-items: baseline; gap: 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; }
#status, #window-note, .muted { color: #57606a; }
form { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; padding: .75rem; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
form label { display: flex; flex-direction: column; font-size: 12px; color: #57606a; }
form label.check { flex-direction: row; align-items: center; gap: .25rem; }
form .exports { align-self: center; color: #57606a; }
#cards { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1rem; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; min-width: 8rem; }
.card b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #eaeef2; padding: .25rem .5rem; text-align: left; white-space: nowrap; }
td.names { white-space: normal; max-width: 28rem; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.pager { display: flex; gap: .75rem; align-items: center; margin-top: .5rem; }
.pager label { font-size: 12px; color: #57606a; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; margin-top: 1rem; }
figure { margin: 0; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem; flex: 1 1 420px; }
figcaption { font-size: 12px; color: #57606a; }
svg text { font-size: 10px; fill: #57606a; }
.bar { fill: #0969da; } .adv { fill: #8c959f; } .obs { fill: #cf222e; }
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
  var MAX_NAMES = 12;
  var FIELDS = ['type', 'location', 'zone', 'scaleSet', 'status'];

  var defaultSince = '';
  var generation = 0;
  var events = { query: '', cursors: [''], next: null };
  var pending = { query: '', next: null, shown: 0 };

  function $(id) { return document.getElementById(id); }
  function esc(value) {
    return String(value === null || value === undefined ? '' : value)
      .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }
  function cell(value, cls) { return '<td' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(value) + '</td>'; }
  function shortTime(iso) { return iso ? String(iso).replace('T', ' ').replace(/\.\d+Z$/, 'Z') : ''; }
  function isoSeconds(ms) { return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z'); }
  function seconds(v) { return v === null || v === undefined ? '–' : String(Math.round(v * 10) / 10); }

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
        return { items: items, next: res.headers.get('x-next-cursor'), total: total === null ? null : Number(total) };
      });
    });
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

  function renderCards(s) {
    var cards = [
      ['Maintenance events', s.events, 'events'], ['Affected VMs', s.vms, 'vms'],
      ['Pending now', s.pendingTotal, 'pending'], ['Reporting VMs', s.reportingVms, 'reporting-vms'],
      ['Approved by us', s.approvals.us || 0, 'approved-us'], ['Lapsed approvals', s.approvals.lapsed || 0, 'lapsed'],
      ['VM deleted', s.vmDeleted, 'vm-deleted'], ['Missing transitions', s.missingTransitions, 'missing'],
      ['Median notice (s)', seconds(s.noticeSeconds.p50), 'notice-p50'],
      ['Impact over advert', s.impactVsAdvertised.exceeded + ' of ' + s.impactVsAdvertised.compared, 'impact-exceeded'],
      ['Records', s.records, 'records'], ['Duplicates ignored', s.ingest.duplicates, 'duplicates']
    ];
    $('cards').innerHTML = cards.map(function (c) {
      return '<div class="card" data-testid="card-' + c[2] + '">' + esc(c[0]) + '<b>' + esc(c[1]) + '</b></div>';
    }).join('');
  }

  function eventLink(e) {
    return '<td><a class="event" data-id="' + esc(e.eventId) + '" data-occurrence="' + esc(e.occurrence) + '">' +
      esc(e.eventId) + (e.occurrence > 1 ? ' #' + esc(e.occurrence) : '') + '</a></td>';
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
      var label = $('events-page');
      label.textContent = 'page ' + n;
      label.setAttribute('data-page', String(n));
      $('events-next').disabled = !page.next;
      $('events-prev').disabled = n <= 1;
      $('events-first').disabled = n <= 1;
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
  function duration(v) {
    if (v === null || v === undefined) return '–';
    var a = Math.abs(v), sign = v < 0 ? '−' : '';
    if (a < 120) return sign + (Math.round(a * 10) / 10) + ' s';
    if (a < 7200) return sign + Math.round(a / 60) + ' min';
    if (a < 172800) return sign + (Math.round(a / 360) / 10) + ' h';
    return sign + (Math.round(a / 8640) / 10) + ' d';
  }

  var STATS = [['min', 'min'], ['p50', 'median'], ['mean', 'mean'], ['p90', 'p90'], ['max', 'max']];

  /** The notice lead time's distribution over the maintenance events (from the summary). */
  function renderNotice(d) {
    var host = $('notice-chart');
    host.innerHTML = '';
    if (d.count === 0) { host.innerHTML = '<p class="empty">no notice data</p>'; return; }
    var values = STATS.map(function (s) { return d[s[0]]; });
    var max = Math.max(1, Math.max.apply(null, values.map(function (v) { return v || 0; })));
    var W = 460, H = 180, left = 20, bottom = 30, bw = (W - left) / values.length;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'notice lead time distribution');
    values.forEach(function (v, i) {
      var h = v === null || v <= 0 ? 0 : (H - bottom - 14) * v / max;
      var bar = add(chart, 'rect', { class: 'bar', x: left + i * bw + 8, y: H - bottom - h, width: bw - 16, height: h, 'data-stat': STATS[i][0] });
      add(bar, 'title', {}, STATS[i][1] + ': ' + duration(v));
      add(chart, 'text', { x: left + i * bw + bw / 2, y: H - bottom + 14, 'text-anchor': 'middle' }, STATS[i][1]);
      add(chart, 'text', { x: left + i * bw + bw / 2, y: H - bottom - h - 3, 'text-anchor': 'middle' }, duration(v));
    });
    add(chart, 'line', { x1: left, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#8c959f' });
    add(chart, 'text', { x: left, y: H - 4 }, d.count + ' events with a NotBefore');
    host.appendChild(chart);
  }

  /** Advertised versus observed impact (from the summary): their distributions side by side. */
  function renderImpact(s) {
    var host = $('impact-chart');
    host.innerHTML = '';
    var adv = s.advertisedSeconds, obs = s.observedSeconds;
    if (adv.count === 0 && obs.count === 0) { host.innerHTML = '<p class="empty">no impact data</p>'; return; }
    var stats = STATS.slice(1);
    var max = 1;
    stats.forEach(function (st) { max = Math.max(max, adv[st[0]] || 0, obs[st[0]] || 0); });
    var W = 460, rowH = 26, left = 70, H = stats.length * rowH + 40;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'advertised versus observed impact');
    stats.forEach(function (st, i) {
      var y = i * rowH + 4;
      add(chart, 'text', { x: 0, y: y + 14 }, st[1]);
      [[adv, 'adv', 'advertised', 0], [obs, 'obs', 'observed', 11]].forEach(function (k) {
        var v = k[0][st[0]];
        if (v === null || v === undefined) return;
        var r = add(chart, 'rect', { class: k[1], x: left, y: y + k[3], width: Math.max(1, (W - left - 70) * Math.max(0, v) / max), height: 9, 'data-stat': st[0] });
        add(r, 'title', {}, k[2] + ' ' + st[1] + ' ' + duration(v));
        add(chart, 'text', { x: left + Math.max(1, (W - left - 70) * Math.max(0, v) / max) + 4, y: y + k[3] + 8 }, duration(v));
      });
    });
    var cmp = s.impactVsAdvertised;
    add(chart, 'text', { x: 0, y: H - 18 }, 'grey: advertised (' + adv.count + ' events), red: observed (' + obs.count + ' events)');
    add(chart, 'text', { x: 0, y: H - 4 }, 'observed impact exceeded the advert in ' + cmp.exceeded + ' of ' + cmp.compared + ' events with both');
    host.appendChild(chart);
  }

  function renderTimeline(entries) {
    var body = document.querySelector('#timeline tbody');
    body.innerHTML = entries.map(function (t) {
      return '<tr data-transition="' + esc(t.transition) + '">' + cell(shortTime(t.time)) + cell(t.transition, 'status-' + t.transition) +
        cell(t.eventId) + cell(t.eventType) + cell(t.detail) + '</tr>';
    }).join('');
    var host = $('timeline-chart');
    host.innerHTML = '';
    if (entries.length === 0) return;
    var times = entries.map(function (t) { return Date.parse(t.time); });
    var t0 = Math.min.apply(null, times), t1 = Math.max.apply(null, times);
    var span = Math.max(1, t1 - t0);
    var lanes = [];
    entries.forEach(function (t) { if (lanes.indexOf(t.eventId) < 0) lanes.push(t.eventId); });
    var W = 900, left = 150, laneH = 22, H = lanes.length * laneH + 20;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'VM timeline');
    var colors = { scheduled: '#9a6700', updated: '#8250df', approved: '#0969da', started: '#cf222e', completed: '#1a7f37', canceled: '#57606a' };
    lanes.forEach(function (id, i) {
      add(chart, 'text', { x: 0, y: i * laneH + 14 }, id.slice(0, 24));
      add(chart, 'line', { x1: left, y1: i * laneH + 10, x2: W - 10, y2: i * laneH + 10, stroke: '#eaeef2' });
    });
    entries.forEach(function (t) {
      var x = left + (W - left - 20) * (Date.parse(t.time) - t0) / span;
      var dot = add(chart, 'circle', { cx: x, cy: lanes.indexOf(t.eventId) * laneH + 10, r: 5, fill: colors[t.transition] || '#000', 'data-transition': t.transition });
      add(dot, 'title', {}, t.transition + ' ' + t.time);
    });
    host.appendChild(chart);
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

  function showEvent(id, occurrence) {
    return getJson('/api/event?id=' + encodeURIComponent(id) + '&occurrence=' + encodeURIComponent(occurrence)).then(function (d) {
      var e = d.event;
      $('detail-title').textContent = e.eventId + (e.occurrence > 1 ? ' #' + e.occurrence : '') + ' — ' + e.eventType + ', ' + e.status;
      $('detail-summary').textContent = 'affects ' + e.affectedVms + ' VM(s): ' + (e.affectedNames.join(', ') || '–') +
        '; reported by ' + e.reportingVms + ' VM(s), ' + e.observers + ' of them observers; NotBefore ' +
        (shortTime(e.notBefore) || '–') + '; ' + (e.description || '');
      document.querySelector('#detail tbody').innerHTML = d.observations.map(function (o) {
        var ending = o.status === 'completed' ? (o.inferred ? 'inferred: ' + o.reason : 'observed') : (o.vmDeleted ? 'VM deleted' : '');
        return '<tr data-affects="' + (o.affectsVm ? 'true' : 'false') + '"><td><a class="vm" data-vm="' + esc(o.source) + '">' +
          esc(o.vmName || o.source) + '</a></td>' + cell(o.affectsVm ? 'yes' : 'observer') + cell(o.status, 'status-' + o.status) +
          cell(shortTime(o.firstSeenAt)) + cell(o.noticeSeconds, 'num') + cell(o.observedSeconds, 'num') + cell(o.approval) +
          cell(ending) + cell(o.missing.join(' ')) + '</tr>';
      }).join('');
      $('detail-section').hidden = false;
    });
  }

  function showError(err) {
    var status = $('status');
    status.textContent = 'error: ' + err.message;
    status.className = 'error';
  }

  function refresh() {
    var q = query();
    var mine = ++generation;
    events.cursors = [''];
    var params = new URLSearchParams(q);
    params.delete('affectsOnly');
    var listQuery = params.toString();
    events.query = listQuery;
    var obs = new URLSearchParams(listQuery);
    if (form.elements.namedItem('affectsOnly').checked) obs.set('affectsOnly', 'true');
    obs.set('view', 'observations');
    $('export-csv').href = '/api/export.csv?' + listQuery;
    $('export-json').href = '/api/export.json?' + listQuery;
    $('export-observations-csv').href = '/api/export.csv?' + obs.toString();
    $('export-observations-json').href = '/api/export.json?' + obs.toString();
    history.replaceState(null, '', '?' + q);
    return Promise.all([getJson('/api/summary?' + listQuery), getJson('/api/status'), loadEvents(1), loadPending(false)])
      .then(function (r) {
        if (mine !== generation) return;
        var summary = r[0], status = r[1];
        renderNote(summary);
        renderCards(summary);
        $('event-count').textContent = '(' + summary.events + ')';
        renderNotice(summary.noticeSeconds);
        renderImpact(summary);
        var parts = status.partitions ? ['partitions ' + (status.partitions.join(',') || 'none')] : [];
        parts.push('ingested ' + summary.ingest.accepted + ', duplicates ' + summary.ingest.duplicates + ', rejected ' + summary.ingest.rejected);
        $('status').textContent = parts.join(' · ');
        $('status').className = '';
        document.body.setAttribute('data-ready', 'true');
      })
      .catch(showError);
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

  form.addEventListener('submit', function (ev) { ev.preventDefault(); refresh(); });
  $('default-window').addEventListener('click', function () { setDefaultWindow(); refresh(); });
  $('events-next').addEventListener('click', function () {
    if (!events.next) return;
    events.cursors.push(events.next);
    loadEvents(events.cursors.length).catch(showError);
  });
  $('events-prev').addEventListener('click', function () {
    if (events.cursors.length > 1) loadEvents(events.cursors.length - 1).catch(showError);
  });
  $('events-first').addEventListener('click', function () { loadEvents(1).catch(showError); });
  $('page-size').addEventListener('change', function () { loadEvents(1).catch(showError); });
  $('pending-more').addEventListener('click', function () { loadPending(true).catch(showError); });
  $('timeline-vm').addEventListener('change', function (ev) { showTimeline(ev.target.value).catch(showError); });
  document.addEventListener('click', function (ev) {
    var target = ev.target.closest ? ev.target : null;
    var vm = target && target.closest('a.vm');
    if (vm) { ev.preventDefault(); showTimeline(vm.getAttribute('data-vm')).catch(showError); return; }
    var link = target && target.closest('a.event');
    if (link) { ev.preventDefault(); showEvent(link.getAttribute('data-id'), link.getAttribute('data-occurrence')).catch(showError); }
  });

  var initial = new URLSearchParams(location.search);
  Promise.all([getJson('/api/status'), loadOptions()]).then(function (r) {
    var now = Date.parse(r[0].now);
    defaultSince = isoSeconds((Number.isNaN(now) ? Date.now() : now) - DEFAULT_WINDOW_DAYS * DAY_MS);
    setDefaultWindow();
    initial.forEach(function (value, key) {
      var el = form.elements.namedItem(key);
      if (el && el.type === 'checkbox') el.checked = value === 'true'; else if (el) el.value = value;
    });
    return refresh();
  }).catch(showError);
})();
`;

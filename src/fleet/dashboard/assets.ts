/**
 * The dashboard's page, script and stylesheet, bundled as strings so that they ship inside the package (built
 * with tsc, no asset copy step) and are served by the consumer itself: no CDN, no chart library. Charts are
 * inline SVG drawn by the script. (The script avoids template literals: it lives inside one.)
 */

export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fleet maintenance history</title>
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<header>
  <h1>Fleet maintenance history</h1>
  <span id="status" data-testid="status">loading…</span>
</header>
<form id="filters" data-testid="filters">
  <label>Since <input name="since" placeholder="YYYY-MM-DDThh:mm:ssZ" title="UTC time (ISO 8601); empty: no lower bound"></label>
  <label>Until <input name="until" placeholder="YYYY-MM-DDThh:mm:ssZ" title="UTC time (ISO 8601); empty: until now"></label>
  <label>Type <select name="type"><option value="">all</option></select></label>
  <label>Region <select name="location"><option value="">all</option></select></label>
  <label>Zone <select name="zone"><option value="">all</option></select></label>
  <label>Scale set <select name="scaleSet"><option value="">all</option></select></label>
  <label>Status <select name="status"><option value="">all</option>
    <option>scheduled</option><option>started</option><option>completed</option><option>canceled</option></select></label>
  <label>VM <input name="vm" placeholder="name contains"></label>
  <label class="check"><input type="checkbox" name="affectsOnly" value="true"> affecting the VM only</label>
  <button type="submit">Apply</button>
  <button type="button" id="reset">Reset</button>
  <a id="export-csv" data-testid="export-csv" href="/api/export.csv" download="fleet-events.csv">Export CSV</a>
  <a id="export-json" data-testid="export-json" href="/api/export.json" download="fleet-events.json">Export JSON</a>
</form>
<section id="cards" data-testid="cards"></section>
<section>
  <h2>Pending now</h2>
  <table id="pending" data-testid="pending"><thead><tr>
    <th>VM</th><th>Event</th><th>Type</th><th>Status</th><th>NotBefore</th><th>Notice (s)</th><th>Region</th><th>Zone</th><th>Scale set</th>
  </tr></thead><tbody></tbody></table>
</section>
<section class="charts">
  <figure><figcaption>Notice lead time (NotBefore − first seen), events per bucket</figcaption>
    <div id="notice-chart" data-testid="notice-chart"></div></figure>
  <figure><figcaption>Advertised (DurationInSeconds) versus observed impact, seconds</figcaption>
    <div id="impact-chart" data-testid="impact-chart"></div></figure>
</section>
<section>
  <h2>Events <span id="event-count" data-testid="event-count"></span></h2>
  <table id="events" data-testid="events"><thead><tr>
    <th>VM</th><th>Event</th><th>Type</th><th>Status</th><th>First seen</th><th>Notice (s)</th><th>Advertised (s)</th><th>Observed (s)</th><th>Approval</th><th>Ending</th><th>Missing</th>
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
#status { color: #57606a; }
form { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; padding: .75rem; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
form label { display: flex; flex-direction: column; font-size: 12px; color: #57606a; }
form label.check { flex-direction: row; align-items: center; gap: .25rem; }
form a { align-self: center; }
#cards { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1rem; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; min-width: 8rem; }
.card b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #eaeef2; padding: .25rem .5rem; text-align: left; white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; margin-top: 1rem; }
figure { margin: 0; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem; flex: 1 1 420px; }
figcaption { font-size: 12px; color: #57606a; }
svg text { font-size: 10px; fill: #57606a; }
.bar { fill: #0969da; } .adv { fill: #8c959f; } .obs { fill: #cf222e; }
.status-scheduled { color: #9a6700; } .status-started { color: #cf222e; } .status-completed { color: #1a7f37; } .status-canceled { color: #57606a; }
a.vm { cursor: pointer; color: #0969da; }
.empty { color: #57606a; font-style: italic; }
`;

export const APP_JS = String.raw`
(function () {
  'use strict';
  var form = document.getElementById('filters');
  var SVGNS = 'http://www.w3.org/2000/svg';

  function esc(value) {
    return String(value === null || value === undefined ? '' : value)
      .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }
  function query() {
    var params = new URLSearchParams();
    var data = new FormData(form);
    data.forEach(function (value, key) { if (value !== '') params.set(key, String(value)); });
    return params.toString();
  }
  function getJson(path) {
    return fetch(path).then(function (res) {
      if (!res.ok) return res.json().then(function (b) { throw new Error(b.error || res.statusText); });
      return res.json();
    });
  }
  function cell(value, cls) { return '<td' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(value) + '</td>'; }
  function shortTime(iso) { return iso ? String(iso).replace('T', ' ').replace(/\.\d+Z$/, 'Z') : ''; }

  function fillSelect(name, values) {
    var select = form.elements.namedItem(name);
    var current = select.value;
    var html = '<option value="">all</option>';
    values.forEach(function (v) { html += '<option value="' + esc(v) + '">' + esc(v || '(none)') + '</option>'; });
    select.innerHTML = html;
    select.value = current;
  }
  function distinct(events, key) {
    var seen = {};
    events.forEach(function (e) { seen[e[key]] = true; });
    return Object.keys(seen).sort();
  }

  function renderCards(s) {
    var cards = [
      ['Events', s.events, 'events'], ['VMs', s.vms, 'vms'], ['Pending now', s.pending.length, 'pending'],
      ['Records', s.records, 'records'], ['Duplicates ignored', s.ingest.duplicates, 'duplicates'],
      ['Approved by us', s.approvals.us || 0, 'approved-us'], ['Lapsed', s.approvals.lapsed || 0, 'lapsed'],
      ['VM deleted', s.vmDeleted, 'vm-deleted'], ['Missing transitions', s.missingTransitions, 'missing'],
      ['Median notice (s)', s.noticeSeconds.p50 === null ? '–' : s.noticeSeconds.p50, 'notice-p50']
    ];
    document.getElementById('cards').innerHTML = cards.map(function (c) {
      return '<div class="card" data-testid="card-' + c[2] + '">' + esc(c[0]) + '<b>' + esc(c[1]) + '</b></div>';
    }).join('');
  }

  function vmLink(e) {
    return '<td><a class="vm" data-vm="' + esc(e.source) + '">' + esc(e.vmName || e.source) + '</a></td>';
  }

  function renderPending(rows) {
    var body = document.querySelector('#pending tbody');
    if (rows.length === 0) { body.innerHTML = '<tr><td colspan="9" class="empty">nothing pending</td></tr>'; return; }
    body.innerHTML = rows.map(function (e) {
      return '<tr data-event="' + esc(e.eventId) + '">' + vmLink(e) + cell(e.eventId) + cell(e.eventType) +
        cell(e.status, 'status-' + e.status) + cell(shortTime(e.notBefore)) + cell(e.noticeSeconds, 'num') +
        cell(e.location) + cell(e.zone) + cell(e.scaleSet) + '</tr>';
    }).join('');
  }

  function renderEvents(rows) {
    document.getElementById('event-count').textContent = '(' + rows.length + ')';
    var body = document.querySelector('#events tbody');
    if (rows.length === 0) { body.innerHTML = '<tr><td colspan="11" class="empty">no events match</td></tr>'; return; }
    body.innerHTML = rows.map(function (e) {
      var ending = e.status === 'completed' ? (e.inferred ? 'inferred: ' + e.reason : 'observed') :
        (e.vmDeleted ? 'VM deleted' : '');
      return '<tr data-event="' + esc(e.eventId) + '" data-type="' + esc(e.eventType) + '">' + vmLink(e) +
        cell(e.eventId) + cell(e.eventType) + cell(e.status, 'status-' + e.status) + cell(shortTime(e.firstSeenAt)) +
        cell(e.noticeSeconds, 'num') + cell(e.advertisedSeconds, 'num') + cell(e.observedSeconds, 'num') +
        cell(e.approval) + cell(ending) + cell(e.missing.join(' ')) + '</tr>';
    }).join('');
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

  var NOTICE_BUCKETS = [[-Infinity, 0, '< 0'], [0, 60, '0–1m'], [60, 300, '1–5m'], [300, 600, '5–10m'],
    [600, 900, '10–15m'], [900, 1800, '15–30m'], [1800, 3600, '30–60m'], [3600, 86400, '1–24h'], [86400, Infinity, '> 1d']];

  function renderNotice(events) {
    var host = document.getElementById('notice-chart');
    host.innerHTML = '';
    var values = events.map(function (e) { return e.noticeSeconds; }).filter(function (v) { return v !== null; });
    if (values.length === 0) { host.innerHTML = '<p class="empty">no notice data</p>'; return; }
    var counts = NOTICE_BUCKETS.map(function (b) {
      return values.filter(function (v) { return v >= b[0] && v < b[1]; }).length;
    });
    var max = Math.max.apply(null, counts);
    var W = 460, H = 180, left = 30, bottom = 30, bw = (W - left) / counts.length;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'notice lead time histogram');
    counts.forEach(function (n, i) {
      var h = max === 0 ? 0 : (H - bottom - 10) * n / max;
      var bar = add(chart, 'rect', { class: 'bar', x: left + i * bw + 4, y: H - bottom - h, width: bw - 8, height: h, 'data-count': n });
      add(bar, 'title', {}, NOTICE_BUCKETS[i][2] + ': ' + n + ' events');
      add(chart, 'text', { x: left + i * bw + bw / 2, y: H - bottom + 14, 'text-anchor': 'middle' }, NOTICE_BUCKETS[i][2]);
      if (n > 0) add(chart, 'text', { x: left + i * bw + bw / 2, y: H - bottom - h - 3, 'text-anchor': 'middle' }, String(n));
    });
    add(chart, 'line', { x1: left, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#8c959f' });
    host.appendChild(chart);
  }

  function renderImpact(events) {
    var host = document.getElementById('impact-chart');
    host.innerHTML = '';
    var rows = events.filter(function (e) { return e.advertisedSeconds !== null || e.observedSeconds !== null; }).slice(0, 40);
    if (rows.length === 0) { host.innerHTML = '<p class="empty">no impact data</p>'; return; }
    var max = 1;
    rows.forEach(function (e) { max = Math.max(max, e.advertisedSeconds || 0, e.observedSeconds || 0); });
    var W = 460, rowH = 16, left = 110, H = rows.length * rowH + 24;
    var chart = svg(W, H);
    chart.setAttribute('aria-label', 'advertised versus observed impact');
    rows.forEach(function (e, i) {
      var y = i * rowH + 4;
      add(chart, 'text', { x: 0, y: y + 10 }, (e.vmName + ' ' + e.eventType).slice(0, 22));
      if (e.advertisedSeconds !== null) {
        var a = add(chart, 'rect', { class: 'adv', x: left, y: y, width: (W - left - 40) * e.advertisedSeconds / max, height: 6 });
        add(a, 'title', {}, 'advertised ' + e.advertisedSeconds + ' s');
      }
      if (e.observedSeconds !== null) {
        var o = add(chart, 'rect', { class: 'obs', x: left, y: y + 7, width: Math.max(1, (W - left - 40) * e.observedSeconds / max), height: 6 });
        add(o, 'title', {}, 'observed ' + e.observedSeconds + ' s');
      }
    });
    add(chart, 'text', { x: left, y: H - 4 }, 'grey: advertised, red: observed; scale 0–' + max + ' s');
    host.appendChild(chart);
  }

  function renderTimeline(entries) {
    var body = document.querySelector('#timeline tbody');
    body.innerHTML = entries.map(function (t) {
      return '<tr data-transition="' + esc(t.transition) + '">' + cell(shortTime(t.time)) + cell(t.transition, 'status-' + t.transition) +
        cell(t.eventId) + cell(t.eventType) + cell(t.detail) + '</tr>';
    }).join('');
    var host = document.getElementById('timeline-chart');
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
    var select = document.getElementById('timeline-vm');
    select.value = vm;
    if (!vm) { renderTimeline([]); return Promise.resolve(); }
    return getJson('/api/timeline?vm=' + encodeURIComponent(vm)).then(renderTimeline);
  }

  function refresh() {
    var q = query();
    document.getElementById('export-csv').href = '/api/export.csv' + (q ? '?' + q : '');
    document.getElementById('export-json').href = '/api/export.json' + (q ? '?' + q : '');
    history.replaceState(null, '', q ? '?' + q : location.pathname);
    return Promise.all([getJson('/api/summary?' + q), getJson('/api/events?' + q), getJson('/api/status')])
      .then(function (r) {
        var summary = r[0], events = r[1], status = r[2];
        renderCards(summary);
        renderPending(summary.pending);
        renderEvents(events);
        renderNotice(events);
        renderImpact(events);
        var parts = status.partitions ? ['partitions ' + (status.partitions.join(',') || 'none')] : [];
        parts.push('ingested ' + summary.ingest.accepted + ', duplicates ' + summary.ingest.duplicates + ', rejected ' + summary.ingest.rejected);
        document.getElementById('status').textContent = parts.join(' · ');
        document.body.setAttribute('data-ready', 'true');
      })
      .catch(function (err) { document.getElementById('status').textContent = 'error: ' + err.message; });
  }

  function loadOptions() {
    return Promise.all([getJson('/api/events'), getJson('/api/vms')]).then(function (r) {
      var all = r[0];
      fillSelect('type', distinct(all, 'eventType'));
      fillSelect('location', distinct(all, 'location'));
      fillSelect('zone', distinct(all, 'zone').filter(function (z) { return z !== ''; }));
      fillSelect('scaleSet', distinct(all, 'scaleSet').filter(function (z) { return z !== ''; }));
      var select = document.getElementById('timeline-vm');
      select.innerHTML = '<option value="">choose a VM</option>' + r[1].map(function (v) {
        return '<option value="' + esc(v.source) + '">' + esc(v.vmName || v.source) + ' (' + v.records + ')</option>';
      }).join('');
    });
  }

  form.addEventListener('submit', function (ev) { ev.preventDefault(); refresh(); });
  document.getElementById('reset').addEventListener('click', function () { form.reset(); refresh(); });
  document.getElementById('timeline-vm').addEventListener('change', function (ev) { showTimeline(ev.target.value); });
  document.addEventListener('click', function (ev) {
    var link = ev.target.closest && ev.target.closest('a.vm');
    if (link) { ev.preventDefault(); showTimeline(link.getAttribute('data-vm')); }
  });

  var initial = new URLSearchParams(location.search);
  loadOptions().then(function () {
    initial.forEach(function (value, key) {
      var el = form.elements.namedItem(key);
      if (el && el.type === 'checkbox') el.checked = value === 'true'; else if (el) el.value = value;
    });
    return refresh();
  });
})();
`;

/**
 * The dashboard's charts: SVG drawn here (no chart library). Durations are on log scales labelled in auto
 * units (s, min, h, d).
 */
import type { FleetSummary, LeadTimeRow, TimeSeries, TimeSeriesDay } from './api.ts';
import { dayOf, duration, esc, regionName, shortTime, tickLabel } from './format.ts';

const SVGNS = 'http://www.w3.org/2000/svg';
export const DAY_MS = 86_400_000;
/** The time axis fills at most this many days (longer windows: only the days from the first event on). */
const MAX_AXIS_DAYS = 1000;
/** Log-scale ticks: 0.1 s to 30 days. */
const TICKS = [0.1, 1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000];
const TYPE_COLORS: Record<string, string> = {
  Freeze: '#0969da',
  Reboot: '#cf222e',
  Redeploy: '#8250df',
  Preempt: '#bf8700',
  Terminate: '#57606a',
};
const PALETTE = ['#1a7f37', '#e16f24', '#6639ba', '#0550ae', '#a40e26', '#4d2d00'];
const TRANSITION_COLORS: Record<string, string> = {
  scheduled: '#9a6700',
  updated: '#8250df',
  approved: '#0969da',
  started: '#cf222e',
  completed: '#1a7f37',
  canceled: '#57606a',
};
/** The statistics of a distribution, with their labels. */
const STATS = [
  ['min', 'min'],
  ['p50', 'median'],
  ['mean', 'mean'],
  ['p90', 'p90'],
  ['max', 'max'],
] as const;

type Distribution = FleetSummary['noticeSeconds'];
type Seconds = number | null | undefined;

function typeColor(type: string, types: string[]): string {
  const known = TYPE_COLORS[type];
  if (known) return known;
  const i = types.indexOf(type);
  return PALETTE[(i < 0 ? 0 : i) % PALETTE.length]!;
}

function svg(width: number, height: number): SVGSVGElement {
  const el = document.createElementNS(SVGNS, 'svg');
  el.setAttribute('viewBox', `0 0 ${width} ${height}`);
  el.setAttribute('width', '100%');
  el.setAttribute('role', 'img');
  return el;
}

/** Appends an SVG element with these attributes (and text) to parent. */
function add(
  parent: Element,
  name: string,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElement {
  const el = document.createElementNS(SVGNS, name) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  parent.appendChild(el);
  return el;
}

/** A log scale: seconds → a coordinate, with the ticks it spans. */
interface LogScale {
  (v: Seconds): number;
  ticks: number[];
}

/**
 * A log scale over seconds fitted to the values: from the tick at or below the smallest positive value to the
 * tick at or above the largest, mapped onto [x0, x1]; values at or below the bottom sit on x0.
 */
function logScale(values: Seconds[], x0: number, x1: number): LogScale {
  const positive = values.filter((v): v is number => v !== null && v !== undefined && v > 0);
  let lo = 1;
  let hi = 10;
  if (positive.length > 0) {
    const min = Math.min(...positive);
    const max = Math.max(...positive);
    lo = TICKS[0]!;
    for (const t of TICKS) if (t <= min) lo = t;
    hi = TICKS.at(-1)!;
    for (let i = TICKS.length - 1; i >= 0; i--) if (TICKS[i]! >= max) hi = TICKS[i]!;
    if (hi <= lo) hi = lo * 10;
  }
  const l0 = Math.log(lo);
  const span = Math.log(hi) - l0;
  const scale = (v: Seconds) => {
    if (v === null || v === undefined || v <= lo) return x0;
    return x0 + (x1 - x0) * Math.min(1, (Math.log(v) - l0) / span);
  };
  return Object.assign(scale, { ticks: TICKS.filter((t) => t >= lo && t <= hi) });
}

/** Vertical grid lines and labels of a log axis at y (labels below). */
function logAxis(chart: Element, scale: LogScale, yTop: number, yBottom: number): void {
  for (const t of scale.ticks) {
    const x = scale(t);
    add(chart, 'line', { class: 'grid', x1: x, y1: yTop, x2: x, y2: yBottom });
    add(chart, 'text', { class: 'tick', x, y: yBottom + 11, 'text-anchor': 'middle' }, tickLabel(t));
  }
}

/**
 * A chart of rows over one log axis of seconds fitted to the values: the axis spans [left, right] with its grid
 * from the top to axisBottom (labels below it).
 */
function logChart(o: {
  label: string;
  values: Seconds[];
  width: number;
  height: number;
  left: number;
  right: number;
  axisBottom: number;
}): { chart: SVGSVGElement; x: LogScale } {
  const chart = svg(o.width, o.height);
  chart.setAttribute('aria-label', o.label);
  chart.setAttribute('data-scale', 'log');
  const x = logScale(o.values, o.left, o.right);
  logAxis(chart, x, 0, o.axisBottom);
  return { chart, x };
}

/** The notice lead time's distribution over the maintenance events (from the summary), log scale. */
export function renderNotice(host: HTMLElement, d: Distribution): void {
  host.innerHTML = '';
  if (d.count === 0) {
    host.innerHTML = '<p class="empty">no notice data</p>';
    return;
  }
  const values = STATS.map(([stat]) => d[stat]);
  const rowH = 22;
  const left = 50;
  const H = values.length * rowH + 40;
  const { chart, x } = logChart({
    label: 'notice lead time distribution',
    values,
    width: 460,
    height: H,
    left,
    right: 400,
    axisBottom: values.length * rowH + 4,
  });
  values.forEach((v, i) => {
    const [stat, label] = STATS[i]!;
    const y = i * rowH + 4;
    add(chart, 'text', { x: 0, y: y + 12 }, label);
    const w = Math.max(1, x(v) - left);
    const bar = add(chart, 'rect', {
      class: 'bar',
      x: left,
      y,
      width: w,
      height: 14,
      'data-stat': stat,
      'data-value': v === null ? '' : v,
    });
    add(bar, 'title', {}, `${label}: ${duration(v)}`);
    add(chart, 'text', { x: left + w + 4, y: y + 11 }, duration(v));
  });
  add(chart, 'text', { x: 0, y: H - 4 }, `${d.count} events with a NotBefore`);
  host.appendChild(chart);
}

/** Advertised versus observed impact (from the summary): their distributions side by side, log scale. */
export function renderImpact(host: HTMLElement, s: FleetSummary): void {
  host.innerHTML = '';
  const adv = s.advertisedSeconds;
  const obs = s.observedSeconds;
  if (adv.count === 0 && obs.count === 0) {
    host.innerHTML = '<p class="empty">no impact data</p>';
    return;
  }
  const stats = STATS.slice(1);
  const all: Seconds[] = [];
  for (const [stat] of stats) all.push(adv[stat], obs[stat]);
  const rowH = 26;
  const left = 50;
  const H = stats.length * rowH + 56;
  const { chart, x } = logChart({
    label: 'advertised versus observed impact',
    values: all,
    width: 460,
    height: H,
    left,
    right: 400,
    axisBottom: stats.length * rowH + 4,
  });
  const kinds = [
    { d: adv, cls: 'adv', name: 'advertised', dy: 0 },
    { d: obs, cls: 'obs', name: 'observed', dy: 11 },
  ];
  stats.forEach(([stat, label], i) => {
    const y = i * rowH + 4;
    add(chart, 'text', { x: 0, y: y + 14 }, label);
    for (const k of kinds) {
      const v = k.d[stat];
      if (v === null || v === undefined) continue;
      const w = Math.max(1, x(v) - left);
      const r = add(chart, 'rect', {
        class: k.cls,
        x: left,
        y: y + k.dy,
        width: w,
        height: 9,
        'data-stat': stat,
        'data-value': v,
      });
      add(r, 'title', {}, `${k.name} ${label} ${duration(v)}`);
      add(chart, 'text', { x: left + w + 4, y: y + k.dy + 8 }, duration(v));
    }
  });
  const cmp = s.impactVsAdvertised;
  add(
    chart,
    'text',
    { x: 0, y: H - 18 },
    `grey: advertised (${adv.count} events), red: observed (${obs.count} events)`,
  );
  add(
    chart,
    'text',
    { x: 0, y: H - 4 },
    `observed impact exceeded the advert in ${cmp.exceeded} of ${cmp.compared} events with both`,
  );
  host.appendChild(chart);
}

/** The window the time axis covers: the filter's since and until (as typed) and the server's clock. */
export interface AxisWindow {
  since: string;
  until: string;
  now: number;
}

/** The days of the time axis: the filter's window (or the data's), every day, at most MAX_AXIS_DAYS. */
function axisDays(series: TimeSeries, window: AxisWindow): string[] {
  const { since, until } = window;
  const first = series.days[0]?.day ?? null;
  const last = series.days.at(-1)?.day ?? null;
  const start = since && !Number.isNaN(Date.parse(since)) ? dayOf(Date.parse(since)) : first;
  let end =
    until && !Number.isNaN(Date.parse(until))
      ? dayOf(Date.parse(until) - 1)
      : dayOf(Math.max(window.now, last ? Date.parse(last) : 0));
  if (last && last > end) end = last;
  if (!start) return [];
  let t0 = Date.parse(`${start}T00:00:00Z`);
  const t1 = Date.parse(`${end}T00:00:00Z`);
  if ((t1 - t0) / DAY_MS > MAX_AXIS_DAYS && first) t0 = Date.parse(`${first}T00:00:00Z`);
  if ((t1 - t0) / DAY_MS > MAX_AXIS_DAYS) t0 = t1 - MAX_AXIS_DAYS * DAY_MS;
  const days: string[] = [];
  for (let t = t0; t <= t1; t += DAY_MS) days.push(dayOf(t));
  return days;
}

const LEGEND_SWATCH = '<svg width="10" height="10" viewBox="0 0 10 10">';

/** Events per day by type (stacked bars) with the day's affected VMs and longest observed impact below. */
export function renderTimeSeries(
  host: HTMLElement,
  legend: HTMLElement,
  series: TimeSeries,
  window: AxisWindow,
): void {
  host.innerHTML = '';
  legend.innerHTML = '';
  if (series.days.length === 0) {
    host.innerHTML = '<p class="empty">no events in the window</p>';
    return;
  }
  const byDay = new Map<string, TimeSeriesDay>(series.days.map((d) => [d.day, d]));
  const days = axisDays(series, window);
  const W = 960;
  const left = 44;
  const right = W - 70;
  const top = 14;
  const topH = 150;
  const gap = 28;
  const bottomH = 70;
  const H = top + topH + gap + bottomH + 30;
  const bw = (right - left) / days.length;
  const root = svg(W, H);
  root.setAttribute('aria-label', 'maintenance events per day by type');
  root.setAttribute('data-days', String(days.length));
  const chart = add(root, 'g', { transform: `translate(0,${top})` });
  let maxEvents = 1;
  let maxVms = 1;
  const impacts: number[] = [];
  for (const d of series.days) {
    maxEvents = Math.max(maxEvents, d.events);
    maxVms = Math.max(maxVms, d.affectedVms);
    if (d.observedSecondsMax !== null) impacts.push(d.observedSecondsMax);
  }
  // Top panel: the y axis (events) at 0, half and max.
  for (const v of [0, Math.round(maxEvents / 2), maxEvents]) {
    const y = topH - (topH * v) / maxEvents;
    add(chart, 'line', { class: 'grid', x1: left, y1: y, x2: right, y2: y });
    add(chart, 'text', { x: left - 4, y: y + 3, 'text-anchor': 'end' }, String(v));
  }
  add(chart, 'text', { x: 0, y: -4 }, 'events per day');
  const labelEvery = Math.max(1, Math.ceil(days.length / 12));
  const y1 = topH + gap;
  const yImpact = logScale(impacts, y1 + bottomH, y1);
  days.forEach((day, i) => {
    const x = left + i * bw;
    const d = byDay.get(day);
    if (i % labelEvery === 0)
      add(chart, 'text', { x: x + bw / 2, y: H - top - 4, 'text-anchor': 'middle' }, day.slice(5));
    if (!d) return;
    let y = topH;
    for (const type of series.types) {
      const n = d.byType[type] || 0;
      if (!n) continue;
      const h = (topH * n) / maxEvents;
      y -= h;
      const r = add(chart, 'rect', {
        class: 'day-type',
        x: x + 0.5,
        y,
        width: Math.max(0.5, bw - 1),
        height: h,
        fill: typeColor(type, series.types),
        'data-day': day,
        'data-type': type,
        'data-count': n,
      });
      add(r, 'title', {}, `${day}: ${n} ${type}`);
    }
    const vh = (bottomH * d.affectedVms) / maxVms;
    const vb = add(chart, 'rect', {
      class: 'vmbar',
      x: x + 0.5,
      y: y1 + bottomH - vh,
      width: Math.max(0.5, bw - 1),
      height: vh,
      'data-day': day,
      'data-affected': d.affectedVms,
    });
    add(
      vb,
      'title',
      {},
      `${day}: ${d.affectedVms} affected VMs; longest observed impact ${duration(d.observedSecondsMax)}` +
        ` (${d.observedEvents} events measured, ${duration(d.observedSecondsSum)} in all)`,
    );
    if (d.observedSecondsMax !== null) {
      const dot = add(chart, 'circle', {
        class: 'impact',
        cx: x + bw / 2,
        cy: yImpact(d.observedSecondsMax),
        r: 3,
        fill: '#cf222e',
        'data-day': day,
        'data-max': d.observedSecondsMax,
      });
      add(dot, 'title', {}, `${day}: longest observed impact ${duration(d.observedSecondsMax)}`);
    }
  });
  add(chart, 'line', { x1: left, y1: topH, x2: right, y2: topH, stroke: '#8c959f' });
  add(chart, 'line', { x1: left, y1: y1 + bottomH, x2: right, y2: y1 + bottomH, stroke: '#8c959f' });
  add(chart, 'text', { x: 0, y: y1 + 8 }, 'VMs');
  add(chart, 'text', { x: left - 4, y: y1 + 8, 'text-anchor': 'end' }, String(maxVms));
  for (const t of yImpact.ticks)
    add(chart, 'text', { class: 'tick', x: right + 4, y: yImpact(t) + 3 }, tickLabel(t));
  add(chart, 'text', { x: right + 4, y: y1 - 6 }, 'impact');
  host.appendChild(root);
  legend.innerHTML =
    series.types
      .map(
        (type) =>
          `<span data-type="${esc(type)}">${LEGEND_SWATCH}<rect width="10" height="10" fill="${esc(typeColor(type, series.types))}"></rect></svg>${esc(type)}</span>`,
      )
      .join('') +
    `<span>${LEGEND_SWATCH}<rect width="10" height="10" class="vmbar"></rect></svg>affected VMs</span>` +
    `<span>${LEGEND_SWATCH}<circle cx="5" cy="5" r="4" fill="#cf222e"></circle></svg>longest observed impact</span>`;
}

/** Notice and impact per type and region as ranges (p50 to p90, a tick at the max) on one log axis. */
export function renderLeadTimeChart(host: HTMLElement, rows: LeadTimeRow[]): void {
  host.innerHTML = '';
  if (rows.length === 0) {
    host.innerHTML = '<p class="empty">no events in the window</p>';
    return;
  }
  const values: Seconds[] = [];
  for (const r of rows)
    values.push(r.notice.p50, r.notice.p90, r.notice.max, r.observed.p50, r.observed.p90, r.observed.max);
  const laneH = 24;
  const { chart, x } = logChart({
    label: 'notice lead time and observed impact per type and region',
    values,
    width: 960,
    height: rows.length * laneH + 24,
    left: 200,
    right: 940,
    axisBottom: rows.length * laneH + 2,
  });
  rows.forEach((r, i) => {
    const y = i * laneH + 3;
    add(chart, 'text', { x: 0, y: y + 12 }, `${r.eventType} · ${regionName(r.location)}`);
    const measures = [
      { m: r.notice, cls: 'notice', name: 'notice', dy: 0 },
      { m: r.observed, cls: 'obs', name: 'observed impact', dy: 10 },
    ];
    for (const { m, cls, name, dy } of measures) {
      if (!m.count) continue;
      const x0 = x(m.p50);
      const x1 = Math.max(x0 + 2, x(m.p90));
      const bar = add(chart, 'rect', {
        class: cls,
        x: x0,
        y: y + dy,
        width: x1 - x0,
        height: 8,
        'data-measure': name,
        'data-type': r.eventType,
        'data-location': r.location,
      });
      add(
        bar,
        'title',
        {},
        `${r.eventType} ${r.location} ${name}: p50 ${duration(m.p50)}, p90 ${duration(m.p90)}, max ${duration(m.max)} (${m.count})`,
      );
      add(chart, 'rect', { class: cls, x: x(m.max) - 1, y: y + dy - 1, width: 2, height: 10 });
    }
  });
  host.appendChild(chart);
}

/** A timeline chart: one lane per key (event or VM), a dot per record. */
export function laneChart<T extends { time: string; transition: string }>(
  host: HTMLElement,
  entries: T[],
  laneOf: (entry: T) => string,
  label: string,
): void {
  host.innerHTML = '';
  if (entries.length === 0) return;
  const times = entries.map((t) => Date.parse(t.time));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const span = Math.max(1, t1 - t0);
  const lanes: string[] = [];
  for (const t of entries) {
    const k = laneOf(t);
    if (!lanes.includes(k)) lanes.push(k);
  }
  const W = 900;
  const left = 150;
  const laneH = 22;
  const H = lanes.length * laneH + 34;
  const chart = svg(W, H);
  chart.setAttribute('aria-label', label);
  lanes.forEach((id, i) => {
    add(chart, 'text', { x: 0, y: i * laneH + 14 }, String(id).slice(0, 24));
    add(chart, 'line', { x1: left, y1: i * laneH + 10, x2: W - 10, y2: i * laneH + 10, stroke: '#eaeef2' });
  });
  for (const t of entries) {
    const x = left + ((W - left - 20) * (Date.parse(t.time) - t0)) / span;
    const dot = add(chart, 'circle', {
      cx: x,
      cy: lanes.indexOf(laneOf(t)) * laneH + 10,
      r: 5,
      fill: TRANSITION_COLORS[t.transition] || '#000',
      'data-transition': t.transition,
    });
    add(dot, 'title', {}, `${t.transition} ${t.time}`);
  }
  add(chart, 'text', { x: left, y: H - 6 }, shortTime(new Date(t0).toISOString()));
  add(
    chart,
    'text',
    { x: W - 10, y: H - 6, 'text-anchor': 'end' },
    `${shortTime(new Date(t1).toISOString())} (${duration((t1 - t0) / 1000)})`,
  );
  host.appendChild(chart);
}

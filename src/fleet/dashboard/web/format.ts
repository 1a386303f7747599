/** Text and HTML formatting of the dashboard's values: escaping, times and durations. */

/** The value as HTML text or attribute content (null and undefined: empty). */
export function esc(value: unknown): string {
  return String(value === null || value === undefined ? '' : value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** A table cell holding the value as text, with an optional class. */
export function cell(value: unknown, cls?: string): string {
  return `<td${cls ? ` class="${cls}"` : ''}>${esc(value)}</td>`;
}

/** An `<option>` of a select. */
export function option(value: unknown, label: unknown): string {
  return `<option value="${esc(value)}">${esc(label)}</option>`;
}

/** An ISO time as "YYYY-MM-DD hh:mm:ssZ" (no fraction); empty for none. */
export function shortTime(iso: string | null | undefined): string {
  return iso
    ? String(iso)
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '';
}

/** A time (ms since the epoch) as ISO 8601 to the second. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The UTC day (YYYY-MM-DD) of a time. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Seconds in the unit that fits: s, min, h, d. */
export function duration(v: number | null | undefined): string {
  if (v === null || v === undefined) return '–';
  const a = Math.abs(v);
  const sign = v < 0 ? '−' : '';
  if (a < 120) return `${sign}${Math.round(a * 10) / 10} s`;
  if (a < 7200) return `${sign}${Math.round(a / 60)} min`;
  if (a < 172800) return `${sign}${Math.round(a / 360) / 10} h`;
  return `${sign}${Math.round(a / 8640) / 10} d`;
}

/** The label of a log-axis tick (seconds). */
export function tickLabel(v: number): string {
  if (v < 60) return `${v} s`;
  if (v < 3600) return `${v / 60} min`;
  if (v < 86400) return `${v / 3600} h`;
  return `${v / 86400} d`;
}

/** A lead-time row's region: "(all)" is every region. */
export function regionName(location: string): string {
  return location === '(all)' ? 'all regions' : location;
}

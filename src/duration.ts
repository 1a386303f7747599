/**
 * The duration formatters, in one place: one per unit and style, pure, for people (log messages, CLI output,
 * chat messages). Each keeps the exact form its readers (tests, docs, operators' log searches) know.
 */

/**
 * Seconds for people reading a message (Slack, Teams, templates), rounded to the two largest units:
 * 45 → "45 s", 840 → "14 min", 5400 → "1 h 30 min", 90000 → "1 d 1 h".
 */
export function formatDurationSeconds(totalSeconds: number): string {
  const s = Math.round(totalSeconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const restMin = minutes % 60;
  if (hours < 24) return restMin === 0 ? `${hours} h` : `${hours} h ${restMin} min`;
  const days = Math.floor(hours / 24);
  const restH = hours % 24;
  return restH === 0 ? `${days} d` : `${days} d ${restH} h`;
}

/** Milliseconds for log messages, precise below a minute: "850 ms", "12.3 s", "4 min 5 s", "2 h 3 min". */
export function formatDurationMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * Milliseconds in the compact form of one-line CLI summaries (`outbox status`), whole seconds, never negative:
 * "45s", "3m 7s", "3h 12m", "2d 4h".
 */
export function formatDurationCompact(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}

/**
 * The rollups' time buckets, by an event's first_seen_at (the time every view's window filters on), aligned to
 * the UTC epoch: level 0 is one hour (the hour digests the ingest transaction writes), levels 1–4 are 4 hours,
 * 1 day, 8 days and 64 days (aggregates rebuilt from the level below). A window is covered by the fewest
 * buckets: the partial hours at its edges from digests (their entries filtered by time), then the largest
 * aligned buckets that fit. A window of 30 days takes at most 24 buckets, of 400 days at most 30 (plus its two
 * partial hours), so what a view reads does not grow with the length of the history or the size of the fleet.
 */

export const HOUR_MS = 3_600_000;
/** Hours per bucket, by level. */
export const LEVEL_HOURS = [1, 4, 24, 192, 1536] as const;
export const TOP_LEVEL = LEVEL_HOURS.length - 1;
/** The level whose buckets are UTC days (the time series reads no coarser level). */
export const DAY_LEVEL = 2;

/** One bucket: level 0 is an hour digest (bucket = hour since the epoch). */
export interface Bucket {
  level: number;
  bucket: number;
}

export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS);

/** The buckets of levels 1 and up that contain `hour`. */
export function ancestorsOf(hour: number): Bucket[] {
  const out: Bucket[] = [];
  for (let level = 1; level <= TOP_LEVEL; level++)
    out.push({ level, bucket: Math.floor(hour / LEVEL_HOURS[level]!) });
  return out;
}

/** The buckets one level down that make up `b` (level ≥ 1). */
export function childrenOf(b: Bucket): Bucket[] {
  const ratio = LEVEL_HOURS[b.level]! / LEVEL_HOURS[b.level - 1]!;
  return Array.from({ length: ratio }, (_, i) => ({ level: b.level - 1, bucket: b.bucket * ratio + i }));
}

/** First hour of a bucket. */
export const startHour = (b: Bucket) => b.bucket * LEVEL_HOURS[b.level]!;

export const bucketKey = (b: Bucket) => `${b.level}:${b.bucket}`;

/**
 * Covers the hours [from, to) — `to` null for "everything from `from` on" — with buckets of at most `maxLevel`,
 * the largest aligned one at each step, never a stale one (`stale(level, bucket)`: its aggregate is older than
 * what it covers; its children are used instead). Hour digests are never stale.
 */
export function cover(
  from: number,
  to: number | null,
  last: number,
  stale: (b: Bucket) => boolean,
  maxLevel: number = TOP_LEVEL,
): Bucket[] {
  const out: Bucket[] = [];
  const end = to ?? last + 1;
  let hour = from;
  while (hour < end) {
    let taken = false;
    for (let level = maxLevel; level >= 1; level--) {
      const size = LEVEL_HOURS[level]!;
      if (hour % size !== 0) continue;
      // An open end may take a bucket reaching past the newest data (nothing is there yet).
      if (to !== null && hour + size > to) continue;
      const b = { level, bucket: hour / size };
      if (stale(b)) continue;
      out.push(b);
      hour += size;
      taken = true;
      break;
    }
    if (!taken) {
      out.push({ level: 0, bucket: hour });
      hour++;
    }
  }
  return out;
}

/**
 * What the rollups know of a set of maintenance events, and how it merges.
 *
 * - `EventEntry`: one maintenance event as the fleet views count it (its `maintenance` row's dimensions,
 *   counters and measures, and the hashes of the VMs that reported it as affecting them). An hour's entries are
 *   its digest (store.ts), the one rollup level the ingest transaction writes.
 * - `Aggregate`: the mergeable summary of any set of entries — exact counts, sums, minima and maxima, exact or
 *   sketched distributions (distribution.ts), the distinct affected VMs (distinct.ts), the counts by type,
 *   region, zone, scale set, approval and inferred ending, and the time series' per-type counters. A bucket of
 *   the rollups stores one; a window's answer merges those of its buckets.
 */
import { TRANSITIONS } from '../../../domain/index.ts';
import type { MaintenanceEvent } from '../../fold-maintenance.ts';
import { Reader, Writer } from './codec.ts';
import { DistinctSet, vmHash } from './distinct.ts';
import { Distribution } from './distribution.ts';

/** One maintenance event, as the rollups count it. */
export interface EventEntry {
  /** 52-bit hash of EventId#occurrence: the event's identity within its hour's digest. */
  key: number;
  /** first_seen_at, ms since the epoch. */
  firstSeenMs: number;
  eventType: string;
  location: string;
  zone: string;
  scaleSet: string;
  status: string;
  approval: string | null;
  reason: string | null;
  /** inferred = 1 (an ending inferred, not observed). */
  inferred: boolean;
  vmDeleted: boolean;
  /** Some lifecycle transition is missing. */
  missing: boolean;
  affectedVms: number;
  records: number;
  /** Records per transition, in TRANSITIONS order. */
  transitions: number[];
  notice: number | null;
  advertised: number | null;
  observed: number | null;
  /** vmHash() of each VM whose observation says the event affects it. */
  affected: number[];
}

/** The identity hash of a maintenance event (EventId + occurrence). */
export function eventKey(eventId: string, occurrence: number): number {
  return vmHash(`${eventId}#${occurrence}`);
}

/** Times are stored as ISO text; an unparseable one counts at the epoch (validation keeps them out). */
const ms = (iso: string) => {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : t;
};

/** The entry of a folded maintenance event and the sources of its affected observations. */
export function entryOf(m: MaintenanceEvent, affectedSources: readonly string[]): EventEntry {
  return {
    key: eventKey(m.eventId, m.occurrence),
    firstSeenMs: ms(m.firstSeenAt),
    eventType: m.eventType,
    location: m.location,
    zone: m.zone,
    scaleSet: m.scaleSet,
    status: m.status,
    approval: m.approval,
    reason: m.reason,
    inferred: m.inferred === true,
    vmDeleted: m.vmDeleted,
    missing: m.missing.length > 0,
    affectedVms: m.affectedVms,
    records: m.records,
    transitions: TRANSITIONS.map((t) => m.transitions[t] ?? 0),
    notice: m.noticeSeconds,
    advertised: m.advertisedSeconds,
    observed: m.observedSeconds,
    affected: [...new Set(affectedSources)].map(vmHash),
  };
}

/** The statuses the summary counts (of events whose VM is not deleted). */
export const STATUSES = ['scheduled', 'started', 'completed', 'canceled'] as const;

/** Per type, the time series' counters: events, affected VMs, observed events, their sum and maximum. */
export interface SeriesCounters {
  events: number;
  affected: number;
  observedEvents: number;
  observedSum: number;
  observedMax: number | null;
}

/** Adds `s` to the counters `series` keeps for `type` (a copy of `s` when it has none yet). */
export function mergeSeries(series: Map<string, SeriesCounters>, type: string, s: SeriesCounters): void {
  const mine = series.get(type);
  if (mine === undefined) {
    series.set(type, { ...s });
    return;
  }
  mine.events += s.events;
  mine.affected += s.affected;
  mine.observedEvents += s.observedEvents;
  mine.observedSum += s.observedSum;
  if (s.observedMax !== null && (mine.observedMax === null || s.observedMax > mine.observedMax))
    mine.observedMax = s.observedMax;
}

function bump(map: Map<string, number>, key: string, n = 1): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

function writeCounts(w: Writer, map: Map<string, number>): void {
  w.uint(map.size);
  for (const [k, n] of map) w.string(k).uint(n);
}

function readCounts(r: Reader): Map<string, number> {
  const map = new Map<string, number>();
  const size = r.uint();
  for (let i = 0; i < size; i++) map.set(r.string(), r.uint());
  return map;
}

function mergeCounts(into: Map<string, number>, from: Map<string, number>): void {
  for (const [k, n] of from) bump(into, k, n);
}

/** The mergeable summary of a set of maintenance events (see the module comment). */
export class Aggregate {
  events = 0;
  affectedVmEvents = 0;
  records = 0;
  /** Records per transition, TRANSITIONS order. */
  transitions: number[] = TRANSITIONS.map(() => 0);
  missing = 0;
  vmDeleted = 0;
  /** Events with both an advertised duration and an observed impact, and those whose impact exceeded it. */
  compared = 0;
  exceeded = 0;
  /** Events per status, of events whose VM is not deleted. */
  byStatus = new Map<string, number>();
  byType = new Map<string, number>();
  byLocation = new Map<string, number>();
  byZone = new Map<string, number>();
  byScaleSet = new Map<string, number>();
  byApproval = new Map<string, number>();
  /** Inferred endings per reason ("(unknown)" without one). */
  inferredEndings = new Map<string, number>();
  notice = new Distribution();
  advertised = new Distribution();
  observed = new Distribution();
  vms = new DistinctSet();
  series = new Map<string, SeriesCounters>();

  add(e: EventEntry): void {
    this.events++;
    this.affectedVmEvents += e.affectedVms;
    this.records += e.records;
    for (let i = 0; i < this.transitions.length; i++) this.transitions[i]! += e.transitions[i] ?? 0;
    if (e.missing) this.missing++;
    if (e.vmDeleted) this.vmDeleted++;
    else bump(this.byStatus, e.status);
    if (e.advertised !== null && e.observed !== null) {
      this.compared++;
      if (e.observed > e.advertised) this.exceeded++;
    }
    bump(this.byType, e.eventType);
    bump(this.byLocation, e.location);
    bump(this.byZone, e.zone);
    bump(this.byScaleSet, e.scaleSet);
    if (e.approval !== null) bump(this.byApproval, e.approval);
    if (e.inferred) bump(this.inferredEndings, e.reason ?? '(unknown)');
    this.notice.add(e.notice);
    this.advertised.add(e.advertised);
    this.observed.add(e.observed);
    for (const h of e.affected) this.vms.add(h);
    this.#addSeries(e);
  }

  #addSeries(e: EventEntry): void {
    let s = this.series.get(e.eventType);
    if (s === undefined) {
      s = { events: 0, affected: 0, observedEvents: 0, observedSum: 0, observedMax: null };
      this.series.set(e.eventType, s);
    }
    s.events++;
    s.affected += e.affectedVms;
    if (e.observed !== null) {
      s.observedEvents++;
      s.observedSum += e.observed;
      if (s.observedMax === null || e.observed > s.observedMax) s.observedMax = e.observed;
    }
  }

  /** Only what the lead-time view reads: the event, its notice and its observed impact. */
  addLeadTime(e: EventEntry): void {
    this.events++;
    this.notice.add(e.notice);
    this.observed.add(e.observed);
  }

  /** Only what the time series reads: the per-type counters. */
  addSeries(e: EventEntry): void {
    this.events++;
    this.#addSeries(e);
  }

  merge(o: Aggregate): void {
    this.events += o.events;
    this.affectedVmEvents += o.affectedVmEvents;
    this.records += o.records;
    for (let i = 0; i < this.transitions.length; i++) this.transitions[i]! += o.transitions[i]!;
    this.missing += o.missing;
    this.vmDeleted += o.vmDeleted;
    this.compared += o.compared;
    this.exceeded += o.exceeded;
    mergeCounts(this.byStatus, o.byStatus);
    mergeCounts(this.byType, o.byType);
    mergeCounts(this.byLocation, o.byLocation);
    mergeCounts(this.byZone, o.byZone);
    mergeCounts(this.byScaleSet, o.byScaleSet);
    mergeCounts(this.byApproval, o.byApproval);
    mergeCounts(this.inferredEndings, o.inferredEndings);
    this.notice.merge(o.notice);
    this.advertised.merge(o.advertised);
    this.observed.merge(o.observed);
    this.vms.merge(o.vms);
    for (const [type, s] of o.series) mergeSeries(this.series, type, s);
  }

  encode(): Uint8Array {
    const w = new Writer();
    w.uint(1); // format version
    w.uint(this.events).uint(this.affectedVmEvents).uint(this.records);
    for (const n of this.transitions) w.uint(n);
    w.uint(this.missing).uint(this.vmDeleted).uint(this.compared).uint(this.exceeded);
    for (const map of [
      this.byStatus,
      this.byType,
      this.byLocation,
      this.byZone,
      this.byScaleSet,
      this.byApproval,
      this.inferredEndings,
    ])
      writeCounts(w, map);
    this.notice.write(w);
    this.advertised.write(w);
    this.observed.write(w);
    this.vms.write(w);
    w.uint(this.series.size);
    for (const [type, s] of this.series) {
      w.string(type).uint(s.events).uint(s.affected).uint(s.observedEvents).float(s.observedSum);
      w.floatOrNull(s.observedMax);
    }
    return w.finish();
  }

  static decode(stored: Uint8Array): Aggregate {
    const r = new Reader(stored);
    const version = r.uint();
    if (version !== 1) throw new Error(`rollup aggregate format ${version} is not known to this build`);
    const a = new Aggregate();
    a.events = r.uint();
    a.affectedVmEvents = r.uint();
    a.records = r.uint();
    a.transitions = a.transitions.map(() => r.uint());
    a.missing = r.uint();
    a.vmDeleted = r.uint();
    a.compared = r.uint();
    a.exceeded = r.uint();
    a.byStatus = readCounts(r);
    a.byType = readCounts(r);
    a.byLocation = readCounts(r);
    a.byZone = readCounts(r);
    a.byScaleSet = readCounts(r);
    a.byApproval = readCounts(r);
    a.inferredEndings = readCounts(r);
    a.notice = Distribution.read(r);
    a.advertised = Distribution.read(r);
    a.observed = Distribution.read(r);
    a.vms = DistinctSet.read(r);
    const n = r.uint();
    for (let i = 0; i < n; i++) {
      const type = r.string();
      a.series.set(type, {
        events: r.uint(),
        affected: r.uint(),
        observedEvents: r.uint(),
        observedSum: r.float(),
        observedMax: r.floatOrNull(),
      });
    }
    return a;
  }
}

// ----------------------------------------------------------------------------------------------------------
// Hour digests: the entries of one hour, keyed by event.

/** The entries of one hour (its events' first_seen_at), by event key. */
export type Digest = Map<number, EventEntry>;

export function encodeDigest(digest: Digest): Uint8Array {
  const w = new Writer();
  w.uint(1); // format version
  const strings = new Map<string, number>();
  const index = (s: string | null) => {
    if (s === null) return 0;
    let i = strings.get(s);
    if (i === undefined) {
      i = strings.size + 1;
      strings.set(s, i);
    }
    return i;
  };
  const entries = [...digest.values()];
  const rows = entries.map((e) => [
    index(e.eventType),
    index(e.location),
    index(e.zone),
    index(e.scaleSet),
    index(e.status),
    index(e.approval),
    index(e.reason),
  ]);
  w.uint(strings.size);
  for (const s of strings.keys()) w.string(s);
  w.uint(entries.length);
  entries.forEach((e, i) => {
    w.float(e.key).float(e.firstSeenMs);
    for (const s of rows[i]!) w.uint(s);
    w.uint((e.inferred ? 1 : 0) | (e.vmDeleted ? 2 : 0) | (e.missing ? 4 : 0));
    w.uint(e.affectedVms).uint(e.records);
    for (const n of e.transitions) w.uint(n);
    w.floatOrNull(e.notice).floatOrNull(e.advertised).floatOrNull(e.observed);
    w.uint(e.affected.length);
    for (const h of e.affected) w.float(h);
  });
  return w.finish();
}

export function decodeDigest(stored: Uint8Array): Digest {
  const r = new Reader(stored);
  const version = r.uint();
  if (version !== 1) throw new Error(`rollup digest format ${version} is not known to this build`);
  const strings: Array<string | null> = [null];
  const nStrings = r.uint();
  for (let i = 0; i < nStrings; i++) strings.push(r.string());
  const text = () => strings[r.uint()] ?? '';
  const nullable = () => strings[r.uint()] ?? null;
  const digest: Digest = new Map();
  const n = r.uint();
  for (let i = 0; i < n; i++) {
    const key = r.float();
    const firstSeenMs = r.float();
    const eventType = text();
    const location = text();
    const zone = text();
    const scaleSet = text();
    const status = text();
    const approval = nullable();
    const reason = nullable();
    const flags = r.uint();
    const affectedVms = r.uint();
    const records = r.uint();
    const transitions = TRANSITIONS.map(() => r.uint());
    const notice = r.floatOrNull();
    const advertised = r.floatOrNull();
    const observed = r.floatOrNull();
    const affected: number[] = [];
    const nAffected = r.uint();
    for (let j = 0; j < nAffected; j++) affected.push(r.float());
    digest.set(key, {
      key,
      firstSeenMs,
      eventType,
      location,
      zone,
      scaleSet,
      status,
      approval,
      reason,
      inferred: (flags & 1) !== 0,
      vmDeleted: (flags & 2) !== 0,
      missing: (flags & 4) !== 0,
      affectedVms,
      records,
      transitions,
      notice,
      advertised,
      observed,
      affected,
    });
  }
  return digest;
}

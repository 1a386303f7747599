/**
 * Prometheus metrics as data, shared by the forwarder's metrics (src/telemetry/metrics.ts) and the fleet's
 * (src/fleet/metrics.ts): each is a table of definitions (name, type, help, label names, the series that exist
 * from the start, and where a scraped value comes from) that `registerMetrics` turns into prom-client
 * instruments on a private Registry. Loaded only with those modules (prom-client is not free to load).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The label values of one series (prom-client's LabelValues). */
export type Labels<L extends string> = Partial<Record<L, string | number>>;
/** One series: its labels and its value. */
export type Series<L extends string> = readonly [labels: Labels<L>, value: number];

type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * One metric as data: what /metrics shows (name, type, help, label names) and where its values come from.
 * `registerMetrics` turns a table of these into prom-client instruments on a private registry. S is the state
 * a `collect` reads (the metrics' own state object, a consumer, a history...).
 */
export interface MetricDefinition<T extends MetricType = MetricType, L extends string = string, S = never> {
  type: T;
  /** Without the registry's prefix (`polls_total` becomes `sef_polls_total`). */
  name: string;
  help: string;
  labels?: readonly L[];
  /** Histogram buckets. */
  buckets?: readonly number[];
  /** Series that exist from the start, with their first value (a counter's or histogram's is 0). */
  start?: readonly Series<L>[];
  /**
   * Read at every scrape. A gauge reports exactly these series (all others removed); a counter is given its
   * running totals kept elsewhere (it counts their increase, never down). Without it the program feeds the
   * instrument itself (inc, set, observe).
   */
  collect?(state: S): Iterable<Series<L>> | Promise<Iterable<Series<L>>>;
}

/** The prom-client instrument a definition becomes. */
export type InstrumentOf<D> =
  D extends MetricDefinition<'counter', infer L, infer _S>
    ? Counter<L>
    : D extends MetricDefinition<'gauge', infer L, infer _S>
      ? Gauge<L>
      : D extends MetricDefinition<'histogram', infer L, infer _S>
        ? Histogram<L>
        : never;

/** The instruments of a table, by the same keys. */
export type Instruments<T> = { readonly [K in keyof T]: InstrumentOf<T[K]> };

/** A counter definition (label names L inferred from `labels`). */
export function counter<L extends string = never, S = never>(
  definition: Omit<MetricDefinition<'counter', L, S>, 'type' | 'buckets'>,
): MetricDefinition<'counter', L, S> {
  return { type: 'counter', ...definition };
}

/** A gauge definition (label names L inferred from `labels`). */
export function gauge<L extends string = never, S = never>(
  definition: Omit<MetricDefinition<'gauge', L, S>, 'type' | 'buckets'>,
): MetricDefinition<'gauge', L, S> {
  return { type: 'gauge', ...definition };
}

/** A histogram definition (label names L inferred from `labels`). */
export function histogram<L extends string = never>(
  definition: Omit<MetricDefinition<'histogram', L>, 'type' | 'collect'> & { buckets: readonly number[] },
): MetricDefinition<'histogram', L> {
  return { type: 'histogram', ...definition };
}

/** Makes a series exist: a counter's or histogram's at 0, a gauge's at `value`. */
export function startSeries(
  instrument: Counter<string> | Gauge<string> | Histogram<string>,
  labels: Labels<string>,
  value = 0,
): void {
  if (instrument instanceof Histogram) instrument.zero(labels);
  else if (instrument instanceof Gauge) instrument.set(labels, value);
  else instrument.inc(labels, 0);
}

/** A gauge's collect: the series the definition reports now, and no others. */
function gaugeCollect<L extends string, S>(
  collect: NonNullable<MetricDefinition<'gauge', L, S>['collect']>,
  state: S,
): (this: Gauge<L>) => Promise<void> {
  return async function (this: Gauge<L>) {
    const series = await collect(state);
    this.reset();
    for (const [labels, value] of series) this.set(labels, value);
  };
}

/** A counter's collect: counts the increase of running totals kept elsewhere (never down). */
function counterCollect<L extends string, S>(
  collect: NonNullable<MetricDefinition<'counter', L, S>['collect']>,
  state: S,
): (this: Counter<L>) => Promise<void> {
  const counted = new Map<string, number>();
  return async function (this: Counter<L>) {
    for (const [labels, total] of await collect(state)) {
      const key = JSON.stringify(labels);
      const before = counted.get(key) ?? 0;
      this.inc(labels, Math.max(0, total - before));
      counted.set(key, Math.max(total, before));
    }
  };
}

function instrument<S>(
  definition: MetricDefinition<MetricType, string, S>,
  registry: Registry,
  prefix: string,
  state: S,
): Counter<string> | Gauge<string> | Histogram<string> {
  const { collect } = definition;
  const common = {
    name: `${prefix}${definition.name}`,
    help: definition.help,
    labelNames: definition.labels ?? [],
    registers: [registry],
  };
  switch (definition.type) {
    case 'counter':
      return new Counter({ ...common, ...(collect && { collect: counterCollect(collect, state) }) });
    case 'gauge':
      return new Gauge({ ...common, ...(collect && { collect: gaugeCollect(collect, state) }) });
    case 'histogram':
      return new Histogram({ ...common, buckets: [...(definition.buckets ?? [])] });
  }
}

/**
 * Registers every metric of a table on `registry` (in table order, which is /metrics' order), with its
 * start series, and returns the instruments by the table's keys.
 */
export function registerMetrics<S, T extends Record<string, MetricDefinition<MetricType, string, S>>>(
  table: T,
  registry: Registry,
  prefix: string,
  state: S,
): Instruments<T> {
  const instruments: Record<string, Counter<string> | Gauge<string> | Histogram<string>> = {};
  for (const [key, definition] of Object.entries(table)) {
    const made = instrument(definition, registry, prefix, state);
    for (const [labels, value] of definition.start ?? []) startSeries(made, labels, value);
    instruments[key] = made;
  }
  return instruments as Instruments<T>;
}

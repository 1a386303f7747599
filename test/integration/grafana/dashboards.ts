/**
 * The Grafana dashboards of packaging/grafana as the tests see them: a zod schema of the fields Grafana needs to
 * import and render a dashboard (title, uid, schemaVersion, panels with id/type/gridPos/targets, datasource
 * references, templating), loaders, and the parts of Grafana's query pipeline the tests re-implement because
 * Grafana itself does not run here: template variable interpolation and the PostgreSQL data source's macros.
 *
 * Supported macros (the PostgreSQL data source's expansion, pkg/tsdb/grafana-postgresql-datasource/macros.go,
 * with the same `$__name(args)` pattern, so an argument containing ")" fails here as it would in Grafana):
 * `$__timeFilter(col)`, `$__timeFrom()`, `$__timeTo()`, `$__timeGroup(col, 'interval')`,
 * `$__timeGroupAlias(col, 'interval')`. Any other macro fails the test, naming it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { REPO } from '../../support/child.ts';

export const GRAFANA_DIR = join(REPO, 'packaging', 'grafana');
export const FLEET_HISTORY = join(GRAFANA_DIR, 'fleet-history.json');
export const METRICS_DASHBOARD = join(GRAFANA_DIR, 'forwarder-and-fleet-metrics.json');

const datasourceRef = z.object({ type: z.string().min(1), uid: z.string().min(1) }).strict();

const gridPos = z
  .object({
    h: z.number().int().min(1),
    w: z.number().int().min(1).max(24),
    x: z.number().int().min(0).max(23),
    y: z.number().int().min(0),
  })
  .strict()
  .refine((g) => g.x + g.w <= 24, 'gridPos.x + gridPos.w must be at most 24');

const sqlTarget = z.object({
  refId: z.string().regex(/^[A-Z]$/),
  datasource: datasourceRef,
  editorMode: z.literal('code'),
  format: z.enum(['time_series', 'table']),
  rawQuery: z.literal(true),
  rawSql: z.string().min(1),
});

const promTarget = z.object({
  refId: z.string().regex(/^[A-Z]$/),
  datasource: datasourceRef,
  editorMode: z.literal('code'),
  expr: z.string().min(1),
  legendFormat: z.string().min(1),
  range: z.boolean(),
  instant: z.boolean(),
});

const PANEL_TYPES = ['timeseries', 'table', 'stat', 'bargauge', 'gauge'] as const;

function panelSchema<T extends z.ZodTypeAny>(target: T) {
  return z.object({
    id: z.number().int().min(1),
    type: z.enum(PANEL_TYPES),
    title: z.string().min(1),
    description: z.string().min(20),
    datasource: datasourceRef,
    gridPos,
    targets: z.array(target).min(1),
    fieldConfig: z.object({ defaults: z.record(z.string(), z.unknown()), overrides: z.array(z.unknown()) }),
    options: z.record(z.string(), z.unknown()),
  });
}

const rowPanel = z.object({
  id: z.number().int().min(1),
  type: z.literal('row'),
  title: z.string().min(1),
  collapsed: z.literal(false),
  gridPos,
  panels: z.array(z.unknown()).length(0),
});

const variableBase = {
  name: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/),
  label: z.string().min(1),
  description: z.string().min(1),
  hide: z.number().int().min(0).max(2),
};
const current = z.object({
  selected: z.boolean(),
  text: z.union([z.string(), z.array(z.string())]),
  value: z.union([z.string(), z.array(z.string())]),
});
const datasourceVariable = z.object({
  ...variableBase,
  type: z.literal('datasource'),
  query: z.string().min(1),
  current,
  multi: z.literal(false),
  includeAll: z.literal(false),
});
const queryVariable = z.object({
  ...variableBase,
  type: z.literal('query'),
  datasource: datasourceRef,
  query: z.union([
    z.string().min(1),
    z.object({ query: z.string().min(1), refId: z.string() }).passthrough(),
  ]),
  definition: z.string().min(1),
  refresh: z.union([z.literal(1), z.literal(2)]),
  multi: z.boolean(),
  includeAll: z.boolean(),
  allValue: z.string().optional(),
  current,
});
const customVariable = z.object({
  ...variableBase,
  type: z.literal('custom'),
  query: z.string().min(1),
  current,
  options: z.array(z.object({ selected: z.boolean(), text: z.string(), value: z.string() })).min(1),
  multi: z.literal(false),
  includeAll: z.literal(false),
});
export const variableSchema = z.discriminatedUnion('type', [
  datasourceVariable,
  queryVariable,
  customVariable,
]);
export type Variable = z.infer<typeof variableSchema>;

function dashboardSchema<T extends z.ZodTypeAny>(target: T) {
  return z.object({
    __inputs: z
      .array(
        z.object({
          name: z.string().regex(/^DS_[A-Z0-9_]+$/),
          label: z.string().min(1),
          type: z.literal('datasource'),
          pluginId: z.string().min(1),
          pluginName: z.string().min(1),
        }),
      )
      .min(1),
    __requires: z.array(
      z.object({ type: z.string(), id: z.string(), name: z.string(), version: z.string() }),
    ),
    id: z.null(),
    uid: z.string().regex(/^[a-zA-Z0-9_-]{1,40}$/),
    title: z.string().min(1),
    description: z.string().min(1),
    tags: z.array(z.string()),
    editable: z.boolean(),
    schemaVersion: z.number().int().min(36),
    version: z.number().int().min(1),
    time: z.object({ from: z.string(), to: z.string() }),
    refresh: z.string(),
    annotations: z.object({ list: z.array(z.unknown()) }),
    templating: z.object({ list: z.array(variableSchema).min(1) }),
    panels: z.array(z.union([rowPanel, panelSchema(target)])).min(1),
  });
}

export const fleetHistorySchema = dashboardSchema(sqlTarget);
export const metricsDashboardSchema = dashboardSchema(promTarget);
export type SqlDashboard = z.infer<typeof fleetHistorySchema>;
export type PromDashboard = z.infer<typeof metricsDashboardSchema>;
export type SqlPanel = Exclude<SqlDashboard['panels'][number], z.infer<typeof rowPanel>>;
export type PromPanel = Exclude<PromDashboard['panels'][number], z.infer<typeof rowPanel>>;

export function loadJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function loadFleetHistory(): SqlDashboard {
  return fleetHistorySchema.parse(loadJson(FLEET_HISTORY));
}

export function loadMetricsDashboard(): PromDashboard {
  return metricsDashboardSchema.parse(loadJson(METRICS_DASHBOARD));
}

/** The panels that query (rows left out). */
export function queryPanels<P extends { type: string }>(dashboard: { panels: readonly unknown[] }): P[] {
  return (dashboard.panels as P[]).filter((p) => p.type !== 'row');
}

/** The provisioning files (parsed YAML) under packaging/grafana/provisioning/<kind>/. */
export function provisioning(kind: 'datasources' | 'dashboards', file: string): Record<string, unknown> {
  return parse(readFileSync(join(GRAFANA_DIR, 'provisioning', kind, file), 'utf8')) as Record<
    string,
    unknown
  >;
}

/** The variables a text refers to (`$name` or `${name}`; Grafana's own `$__…` names are not variables). */
export function variablesIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{?([a-zA-Z_][a-zA-Z0-9_]*)/g)].map((m) => m[1]!))].filter(
    (n) => !n.startsWith('__'),
  );
}

/**
 * Replaces `$name` and `${name}` as Grafana's template service does for the data source: `format(values)` of
 * the variable's selected values. Throws on a variable that has no value.
 */
export function interpolate(
  text: string,
  values: ReadonlyMap<string, readonly string[]>,
  format: (values: readonly string[], name: string) => string,
): string {
  return text.replace(/\$\{([a-zA-Z_][a-zA-Z0-9_]*)\}|\$([a-zA-Z_][a-zA-Z0-9_]*)/g, (whole, a, b) => {
    const name = (a ?? b) as string;
    if (name.startsWith('__')) return whole; // Grafana's macros and built-ins ($__timeFilter, $__rate_interval)
    const selected = values.get(name);
    if (selected === undefined) throw new Error(`no value for the template variable $${name}`);
    return format(selected, name);
  });
}

/**
 * The PostgreSQL data source's interpolation: a multi-value or include-All variable becomes its values quoted
 * as SQL strings, comma-separated; another variable's single value is inserted as it is.
 */
export function sqlFormat(variables: readonly Variable[]) {
  return (values: readonly string[], name: string): string => {
    const variable = variables.find((v) => v.name === name);
    const quoted = variable !== undefined && 'multi' in variable && (variable.multi || variable.includeAll);
    return quoted ? values.map((v) => `'${v.replaceAll("'", "''")}'`).join(',') : values.join(',');
  };
}

/** Grafana's interval syntax of $__timeGroup (`30s`, `5m`, `1h`, `1d`, `1w`) in seconds. */
function intervalSeconds(text: string): number {
  const m = /^(\d+)(s|m|h|d|w)$/.exec(text.replace(/^'|'$/g, ''));
  if (m === null) throw new Error(`unsupported $__timeGroup interval ${text}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
}

/** RFC 3339 as Go's time.RFC3339Nano prints a UTC time (no fractional part when it is zero). */
function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.000Z$/, 'Z');
}

/** Expands the supported macros (module comment) for the time range [from, to]. */
export function expandMacros(sql: string, range: { from: Date; to: Date }): string {
  return sql.replace(/\$([_a-zA-Z0-9]+)\(([^)]*)\)/g, (_whole, name: string, rawArgs: string) => {
    const args = rawArgs.split(',').map((a) => a.trim());
    switch (name) {
      case '__timeFilter':
        return `${args[0]} BETWEEN '${rfc3339(range.from)}' AND '${rfc3339(range.to)}'`;
      case '__timeFrom':
        return `'${rfc3339(range.from)}'`;
      case '__timeTo':
        return `'${rfc3339(range.to)}'`;
      case '__timeGroup':
      case '__timeGroupAlias': {
        if (args.length !== 2) throw new Error(`$${name} needs a column and an interval: ${rawArgs}`);
        const s = intervalSeconds(args[1]!);
        const group = `floor(extract(epoch from ${args[0]})/${s})*${s}`;
        return name === '__timeGroup' ? group : `${group} AS "time"`;
      }
      default:
        throw new Error(
          `macro $${name} is not supported by the test's expander (see test/integration/grafana/dashboards.ts)`,
        );
    }
  });
}

/**
 * Generated configuration reference: docs/configuration.md (a table per section: key path, type, default,
 * description) and schemas/config.schema.json (JSON Schema for editors), both derived from the zod schema via
 * z.toJSONSchema. Written by `npm run docs:config` (scripts/gen-config-docs.ts); a test fails when the
 * checked-in files differ from what this module renders.
 */
import { z } from 'zod';
import { SINK_FACTORIES } from '../sinks/registry.ts';
import type { SinkFactory } from '../sinks/types.ts';
import { buildConfigSchema, COMMON_SINK_KEYS } from './schema.ts';

/** Where the generated files live (relative to the repository root). */
export const CONFIG_DOCS_PATH = 'docs/configuration.md';
export const CONFIG_JSON_SCHEMA_PATH = 'schemas/config.schema.json';
export const CONFIG_SCHEMA_ID =
  'https://github.com/scheduled-events-forwarder/scheduled-events-forwarder/schemas/config.schema.json';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  minItems?: number;
  pattern?: string;
  [key: string]: unknown;
};

/** The config schema as JSON Schema (input side: what may be written in the YAML file). Deterministic. */
export function configJsonSchema(
  factories: readonly SinkFactory[] = SINK_FACTORIES,
): Record<string, unknown> {
  // Pin the platform so the generated files do not depend on the machine that generates them.
  const schema = buildConfigSchema({ factories, platform: 'linux', env: {} });
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });
  return { $id: CONFIG_SCHEMA_ID, title: 'scheduled-events-forwarder configuration', ...json };
}

/** schemas/config.schema.json contents. */
export function renderConfigJsonSchema(factories?: readonly SinkFactory[]): string {
  return `${JSON.stringify(configJsonSchema(factories), null, 2)}\n`;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function typeOf(node: JsonSchema): string {
  if (node.const !== undefined) return `\`${JSON.stringify(node.const)}\``;
  if (node.enum !== undefined) return node.enum.map((v) => `\`${JSON.stringify(v)}\``).join(' | ');
  const alternatives = node.anyOf ?? node.oneOf;
  if (alternatives !== undefined) return alternatives.map(typeOf).join(' or ');
  if (node.type === 'array') return `list of ${node.items === undefined ? 'any' : typeOf(node.items)}`;
  if (node.type === 'object') {
    if (node.properties === undefined) return 'mapping';
    const keys = Object.keys(node.properties);
    return keys.length <= 2 ? `{ ${keys.map((k) => `${k}`).join(', ')} }` : 'mapping';
  }
  const base = Array.isArray(node.type) ? node.type.join(' | ') : (node.type ?? 'any');
  const bounds: string[] = [];
  if (node.minimum !== undefined && node.minimum > Number.MIN_SAFE_INTEGER) bounds.push(`≥ ${node.minimum}`);
  if (node.exclusiveMinimum !== undefined) bounds.push(`> ${node.exclusiveMinimum}`);
  if (node.maximum !== undefined && node.maximum < MAX_SAFE) bounds.push(`≤ ${node.maximum}`);
  if (node.exclusiveMaximum !== undefined) bounds.push(`< ${node.exclusiveMaximum}`);
  if (node.format !== undefined) bounds.push(node.format);
  return bounds.length === 0 ? base : `${base} (${bounds.join(', ')})`;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function defaultOf(node: JsonSchema, required: boolean): string {
  if (node.default !== undefined) {
    if (typeof node.default === 'object' && node.default !== null && Object.keys(node.default).length === 0) {
      if (Array.isArray(node.default)) return '`[]`';
      // A section whose keys have their own rows below; a free mapping (env, headers) is simply empty.
      return node.properties === undefined ? '`{}`' : '(see below)';
    }
    return `\`${JSON.stringify(node.default)}\``;
  }
  return required ? '**required**' : '(unset)';
}

type Row = [path: string, type: string, dflt: string, description: string];

function rows(node: JsonSchema, prefix: string, skip: readonly string[] = []): Row[] {
  const out: Row[] = [];
  const required = new Set(node.required ?? []);
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    if (skip.includes(key)) continue;
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const nested = child.type === 'object' && child.properties !== undefined;
    // A list of mappings (approval.rules, approval.hooks.prepare, ...): each entry's keys as `path[].key`.
    const entries = child.type === 'array' && child.items?.properties !== undefined ? child.items : undefined;
    out.push([`\`${path}\``, typeOf(child), defaultOf(child, required.has(key)), child.description ?? '']);
    if (nested) out.push(...rows(child, path));
    if (entries !== undefined) out.push(...rows(entries, `${path}[]`));
  }
  return out;
}

function table(list: Row[]): string {
  const head = '| Key | Type | Default | Description |\n|---|---|---|---|\n';
  return head + list.map((r) => `| ${r.map(cell).join(' | ')} |`).join('\n');
}

/** docs/configuration.md contents. */
export function renderConfigDocs(factories: readonly SinkFactory[] = SINK_FACTORIES): string {
  const root = configJsonSchema(factories) as JsonSchema;
  const props = root.properties ?? {};
  const parts: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated from src/config/schema.ts by `npm run docs:config`. Do not edit by hand. -->',
    '',
    'The forwarder reads one YAML file (`run --config FILE`); command-line options override it. Every',
    'mapping is strict: an unknown key is an error that names its path. Check a file with',
    '`scheduled-events-forwarder config validate FILE`: it makes every check `run` makes before it uses the',
    "network, and `--allow-missing-secrets` checks a file where the service's secrets are not set (see",
    '[cli.md](cli.md)). It also prints every warning `run` logs at start-up (no sinks, inline secrets, a retired',
    "Teams connector URL, an unsigned webhook, an exec or hook command not found on this machine's PATH: run it",
    'on the VM for that one); warnings alone keep exit code 0. Print the effective configuration `run` would use (defaults applied, secrets always',
    'redacted) with `config show --config FILE`. A fully commented example lives in',
    '`config/forwarder.example.yaml`; editors can validate against `schemas/config.schema.json`',
    '(e.g. `# yaml-language-server: $schema=../schemas/config.schema.json`).',
    '',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the config syntax for environment secrets
    '**Secrets** (connection strings, keys, webhook URLs) are written as `"${ENV_VAR}"`, `{ env: NAME }` or',
    '`{ file: PATH }` (file contents, trailing newline removed). Inline values work but `config validate`,',
    '`config show` and `run` warn.',
    '',
    '**Changing the file of a running forwarder**: `systemctl reload` (SIGHUP, Linux) applies `sinks`, `approval`',
    'and `shutdownDeadlineMs` at once, without losing or re-sending a record, and refuses an invalid file while the',
    'running configuration stays; every other key needs a restart (see',
    '[install.md](install.md#reloading-the-configuration)).',
    '',
    '**Commands the forwarder starts** (`exec` sinks, `approval.hooks` commands) get a minimal environment:',
    'PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*, TZ, TMPDIR (Windows: PATH, PATHEXT, SYSTEMROOT, WINDIR,',
    'COMSPEC, TEMP, TMP, USERPROFILE, APPDATA, PROGRAMDATA, PROGRAMFILES, ... as listed in src/platform.ts), the',
    'variables named in their `passEnv`, their `env` and the SEF_* values. Behaviour change: they used to',
    "inherit the forwarder's whole environment, secrets.env included; a command that relied on another",
    'variable (HTTPS_PROXY, an API token) now needs it in `passEnv`. A NUL character in a SEF_* value (no',
    'process can receive one) is passed as U+FFFD; the record JSON on stdin keeps the exact value.',
    '',
    '| Command-line option | Overrides |',
    '|---|---|',
    '| `--imds-endpoint URL` | `imds.endpoint` |',
    '| `--api-version V` | `imds.apiVersion` |',
    '| `--poll-interval MS` | `imds.pollIntervalMs` |',
    '| `--record FILE` | `imds.captureFile` |',
    '| `--replay FILE` | `source: { type: replay, file: FILE }` |',
    '| `--state-dir DIR` | `stateDir` |',
    '| `--log-level LEVEL` | `log.level` |',
    '| `--sink stdout`, `--sink file:PATH` (repeatable) | replaces `sinks` |',
    '',
  ];
  const scalars: Row[] = [];
  const required = new Set(root.required ?? []);
  for (const [key, node] of Object.entries(props)) {
    if (key === 'sinks') continue;
    if (node.type === 'object' && node.properties !== undefined) continue;
    if (node.oneOf !== undefined || node.anyOf !== undefined) continue;
    scalars.push([`\`${key}\``, typeOf(node), defaultOf(node, required.has(key)), node.description ?? '']);
  }
  parts.push('## General', '', table(scalars), '');
  for (const [key, node] of Object.entries(props)) {
    if (key === 'sinks') continue;
    const branches = node.oneOf ?? node.anyOf;
    if (node.type === 'object' && node.properties !== undefined) {
      parts.push(`## \`${key}\``, '', node.description ?? '', '', table(rows(node, key)), '');
    } else if (branches !== undefined) {
      parts.push(`## \`${key}\``, '', node.description ?? '', '');
      for (const branch of branches) {
        const type = branch.properties?.type?.const;
        parts.push(`### \`${key}.type: ${String(type)}\``, '', table(rows(branch, key)), '');
      }
    }
  }
  const sinks = props.sinks;
  const sinkBranches = sinks?.items?.oneOf ?? sinks?.items?.anyOf ?? [];
  parts.push('## `sinks`', '', sinks?.description ?? '', '');
  const first = sinkBranches[0];
  if (first === undefined) {
    parts.push('No sink types are registered.', '');
  } else {
    parts.push(
      'Keys every sink entry has (the filter defaults can differ per sink type; see each type):',
      '',
      table(
        rows(
          {
            ...first,
            properties: pick(first.properties ?? {}, COMMON_SINK_KEYS),
            required: first.required ?? [],
          },
          'sinks[]',
        )
          .filter(([path]) => !path.startsWith('`sinks[].type`'))
          // Its default is the type's (each type's section says it), not the first type's.
          .map(
            (row): Row =>
              row[0] === '`sinks[].heartbeats`' ? [row[0], row[1], 'per sink type', row[3]] : row,
          ),
      ),
      '',
    );
    for (const branch of sinkBranches) {
      const type = String(branch.properties?.type?.const);
      const own = rows(branch, 'sinks[]', COMMON_SINK_KEYS);
      const filter = branch.properties?.filter?.properties;
      const filterDefaults = filter
        ? `Default filter: transitions ${JSON.stringify(filter.transitions?.default)}, eventTypes ${JSON.stringify(
            filter.eventTypes?.default,
          )}, scope ${JSON.stringify(filter.scope?.default)}.`
        : '';
      const heartbeats = factories.find((f) => f.type === type)?.heartbeats;
      const heartbeatLine =
        heartbeats === undefined
          ? 'Heartbeats: never (`heartbeats: true` is an error).'
          : `Heartbeats: ${heartbeats.default ? 'on' : 'off'} by default (\`heartbeats\`).`;
      parts.push(
        `### Sink type \`${type}\``,
        '',
        branch.description ?? '',
        '',
        filterDefaults,
        '',
        heartbeatLine,
        '',
        own.length === 0 ? 'No options of its own.' : table(own),
        '',
      );
    }
  }
  return `${parts
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

function pick(obj: Record<string, JsonSchema>, keys: readonly string[]): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => keys.includes(k)));
}

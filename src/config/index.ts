/**
 * Loading the configuration: YAML file (optional) → CLI overrides merged over it → validated by the one zod
 * schema (schema.ts) → normalised Config. Every failure is a ConfigError (a UsageError: exit code 2) whose
 * lines name the key path and what was expected.
 */
import type { LogLevel } from '../log.ts';
import { redactText, registerUrlCredentials } from '../redact.ts';
import { allowingMissingSecrets, Secret } from '../secret.ts';
import type { SinkFactory, SinkFilter } from '../sinks/types.ts';
import { ConfigError, formatIssues } from './errors.ts';
import { readConfigFile } from './file.ts';
import { type BuildSchemaOptions, buildConfigSchema, COMMON_SINK_KEYS, type ParsedConfig } from './schema.ts';

export { ConfigError } from './errors.ts';
export { readConfigFile } from './file.ts';

export interface SinkDeliveryConfig {
  maxBatch?: number | undefined;
  backoff: { initialMs: number; maxMs: number };
  /** The backoff of a paused sink's one-record probes. */
  probe: { initialMs: number; maxMs: number };
  caps: {
    maxPendingRows: number;
    maxPendingBytes: number;
    maxAgeHours?: number | undefined;
    maxDeadLetterRows: number;
    maxDeadLetterBytes: number;
  };
}

/** One sink entry: the common keys, and the sink type's own options (already validated, secrets resolved). */
export interface SinkConfig {
  name: string;
  type: string;
  enabled: boolean;
  filter: SinkFilter;
  delivery: SinkDeliveryConfig;
  /** Send this sink the heartbeats (only sink types with SinkFactory.heartbeats can be true). */
  heartbeats: boolean;
  options: Record<string, unknown>;
}

/** The validated configuration with every default applied. */
export type Config = Omit<ParsedConfig, 'sinks' | 'log'> & {
  log: { level: LogLevel };
  sinks: SinkConfig[];
  /** The file it was loaded from, if any. */
  configFile?: string | undefined;
};

export interface LoadConfigOptions {
  /** YAML file to read. Without it, only defaults and overrides apply. */
  file?: string | undefined;
  /** A partial raw config (same shape as the YAML) merged over the file; lists replace, mappings merge. */
  overrides?: Record<string, unknown> | undefined;
  /** Environment for platform defaults (%ProgramData%); secrets resolve through the sink schemas. */
  env?: Record<string, string | undefined> | undefined;
  /** Sink types to accept (default: the registry). */
  factories?: readonly SinkFactory[] | undefined;
  /** Key path → CLI option, so that errors caused by an option name it. */
  overrideFlags?: Record<string, string> | undefined;
  /**
   * `config validate --allow-missing-secrets`: secrets whose environment variable is unset or whose file cannot
   * be read here are not errors (see missingSecrets). Never for running: a sink needs its secrets.
   */
  allowMissingSecrets?: boolean | undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Secret);
}

/** Deep merge for raw config objects: mappings merge recursively, everything else (lists included) replaces. */
export function mergeRaw(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeRaw(current, value) : value;
  }
  return out;
}

/** Validates a raw config object. Throws ConfigError naming every problem. */
export function validateConfig(
  raw: Record<string, unknown>,
  options: Omit<LoadConfigOptions, 'file' | 'overrides'> & { origin?: string } = {},
): Config {
  // Only the configured sink types' schemas are built (a type that is not configured costs nothing).
  const schemaOptions: BuildSchemaOptions = { document: raw };
  if (options.factories !== undefined) schemaOptions.factories = options.factories;
  if (options.env !== undefined) schemaOptions.env = options.env;
  const schema = buildConfigSchema(schemaOptions);
  const parse = () => schema.safeParse(raw, { reportInput: true });
  const result = options.allowMissingSecrets === true ? allowingMissingSecrets(parse) : parse();
  if (!result.success) {
    const problems = formatIssues(result.error.issues, schema, raw, options.overrideFlags);
    throw new ConfigError(`invalid configuration${options.origin ? ` (${options.origin})` : ''}:`, problems);
  }
  return normalize(result.data);
}

function normalize(parsed: ParsedConfig): Config {
  const sinks = parsed.sinks.map((entry): SinkConfig => {
    const all = entry as Record<string, unknown>;
    const options: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(all)) {
      if (!(COMMON_SINK_KEYS as readonly string[]).includes(key)) options[key] = value;
    }
    return {
      name: all.name as string,
      type: all.type as string,
      enabled: all.enabled as boolean,
      filter: all.filter as SinkFilter,
      delivery: all.delivery as SinkDeliveryConfig,
      heartbeats: all.heartbeats === true,
      options,
    };
  });
  return { ...parsed, log: parsed.log as { level: LogLevel }, sinks };
}

/** Loads `file` (if given), merges `overrides` over it, validates. Throws ConfigError (exit code 2). */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const fromFile = options.file === undefined ? {} : readConfigFile(options.file);
  const raw = mergeRaw(fromFile, options.overrides ?? {});
  const config = validateConfig(raw, {
    ...options,
    origin: options.file === undefined ? 'command-line options' : options.file,
  });
  registerConfiguredUrlCredentials(config);
  return { ...config, configFile: options.file };
}

/** URL userinfo is a secret everywhere: register the password of every URL in the config with the redactor. */
function registerConfiguredUrlCredentials(value: unknown): void {
  if (typeof value === 'string') registerUrlCredentials(value);
  else if (value instanceof URL) registerUrlCredentials(value.href);
  else if (Array.isArray(value)) for (const item of value) registerConfiguredUrlCredentials(item);
  else if (typeof value === 'object' && value !== null && !(value instanceof Secret)) {
    for (const item of Object.values(value)) registerConfiguredUrlCredentials(item);
  }
}

/** A secret that `allowMissingSecrets` left unresolved: where it is configured and why it is not available. */
export interface MissingSecret {
  /** Key path as written in the YAML, e.g. `sinks[0].connectionString`. */
  path: string;
  /** Where it is referenced, e.g. `env SEF_EH_CONN` or `file /etc/x`. */
  origin: string;
  reason: string;
}

/** The secrets of `config` that were not available when it was loaded with `allowMissingSecrets`. */
export function missingSecrets(config: Config): MissingSecret[] {
  const found: MissingSecret[] = [];
  const walk = (value: unknown, path: string): void => {
    if (value instanceof Secret) {
      if (value.missing !== undefined) found.push({ path, origin: value.origin, reason: value.missing });
    } else if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`);
    } else if (isPlainObject(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, path === '' ? k : `${path}.${k}`);
    }
  };
  const { sinks, ...rest } = config;
  walk(rest, '');
  for (const [i, sink] of sinks.entries()) walk(sink.options, `sinks[${i}]`);
  return found;
}

/** Options shared by `run` and the commands that open the state (`outbox`, `deadletters`, ...). */
export interface CliConfigOptions {
  config?: string | undefined;
  imdsEndpoint?: string | undefined;
  apiVersion?: string | undefined;
  pollInterval?: string | number | undefined;
  stateDir?: string | undefined;
  /** Repeatable: `stdout` or `file:PATH`. Replaces the file's sinks when given. */
  sink?: string[] | undefined;
  logLevel?: string | undefined;
  /** Capture every distinct document to FILE (imds.captureFile). */
  record?: string | undefined;
  /** Replay a capture instead of polling IMDS (source.type replay). */
  replay?: string | undefined;
  /** Replay speed factor. */
  replaySpeed?: string | number | undefined;
  /** Allow the state directory on the Azure temporary disk. */
  allowTemporaryDisk?: boolean | undefined;
}

/** Parses one `--sink` value into a raw sink entry. */
export function parseSinkOption(value: string, index: number, names: Set<string>): Record<string, unknown> {
  const unique = (base: string) => {
    let name = base;
    for (let n = 2; names.has(name); n++) name = `${base}-${n}`;
    names.add(name);
    return name;
  };
  if (value === 'stdout') return { name: unique('stdout'), type: 'stdout' };
  if (value.startsWith('file:') && value.length > 'file:'.length) {
    return { name: unique('file'), type: 'file', path: value.slice('file:'.length) };
  }
  throw new ConfigError(
    `--sink #${index + 1} "${value}": expected "stdout" or "file:PATH" (configure other sinks in the config file)`,
    [],
  );
}

function toNumber(value: string | number, flag: string): number {
  if (typeof value === 'number') return value;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n))
    throw new ConfigError(`${flag}: expected a number, got "${value}"`, []);
  return n;
}

/** CLI options applied over the config file (`run`, `outbox`, `deadletters`, `demo`). Throws ConfigError. */
export function loadConfigForCli(
  opts: CliConfigOptions,
  extra: Pick<LoadConfigOptions, 'env' | 'factories'> = {},
): Config {
  const overrides: Record<string, unknown> = {};
  const flags: Record<string, string> = {};
  const imds: Record<string, unknown> = {};
  if (opts.imdsEndpoint !== undefined) {
    imds.endpoint = opts.imdsEndpoint;
    flags['imds.endpoint'] = '--imds-endpoint';
  }
  if (opts.apiVersion !== undefined) {
    imds.apiVersion = opts.apiVersion;
    flags['imds.apiVersion'] = '--api-version';
  }
  if (opts.pollInterval !== undefined) {
    imds.pollIntervalMs = toNumber(opts.pollInterval, '--poll-interval');
    flags['imds.pollIntervalMs'] = '--poll-interval';
  }
  if (opts.record !== undefined) {
    imds.captureFile = opts.record;
    flags['imds.captureFile'] = '--record';
  }
  if (Object.keys(imds).length > 0) overrides.imds = imds;
  if (opts.replay !== undefined) {
    overrides.source = {
      type: 'replay',
      file: opts.replay,
      ...(opts.replaySpeed === undefined ? {} : { speed: toNumber(opts.replaySpeed, '--replay-speed') }),
    };
    flags['source.file'] = '--replay';
    flags['source.speed'] = '--replay-speed';
  }
  if (opts.stateDir !== undefined) {
    overrides.stateDir = opts.stateDir;
    flags.stateDir = '--state-dir';
  }
  if (opts.allowTemporaryDisk === true) {
    overrides.allowTemporaryDisk = true;
    flags.allowTemporaryDisk = '--allow-temporary-disk';
  }
  if (opts.logLevel !== undefined) {
    overrides.log = { level: opts.logLevel };
    flags['log.level'] = '--log-level';
  }
  if (opts.sink !== undefined && opts.sink.length > 0) {
    const names = new Set<string>();
    overrides.sinks = opts.sink.map((value, index) => parseSinkOption(value, index, names));
    opts.sink.forEach((value, index) => {
      flags[`sinks[${index}]`] = `--sink ${value}`;
      flags[`sinks[${index}].path`] = `--sink ${value}`;
    });
  }
  return loadConfig({ file: opts.config, overrides, overrideFlags: flags, ...extra });
}

/** Where a secret came from, for `config show`. */
function describeSecret(secret: Secret): string {
  return `[redacted: ${secret.origin}]`;
}

/**
 * A copy of the config safe to print: every Secret becomes "[redacted: <origin>]" (never its value). Also
 * returns the key paths of secrets given inline in the file (which `config show` warns about).
 */
export function redactConfig(config: Config): { value: unknown; inlineSecrets: string[] } {
  const inlineSecrets: string[] = [];
  const walk = (value: unknown, path: string): unknown => {
    if (value instanceof Secret) {
      if (value.origin === 'inline') inlineSecrets.push(path);
      return describeSecret(value);
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`));
    if (value instanceof URL) return redactText(value.toString());
    // Plain strings too: URL userinfo (an OTel endpoint http://user:PASS@host) is a secret everywhere.
    if (typeof value === 'string') return redactText(value);
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined) continue;
        out[k] = walk(v, path === '' ? k : `${path}.${k}`);
      }
      return out;
    }
    return value;
  };
  const { sinks, configFile: _file, ...rest } = config;
  const shaped = {
    ...rest,
    // Show sinks flat, as they are written in YAML.
    sinks: sinks.map((s) => ({
      name: s.name,
      type: s.type,
      enabled: s.enabled,
      filter: s.filter,
      delivery: s.delivery,
      heartbeats: s.heartbeats,
      ...s.options,
    })),
  };
  const value = walk(shaped, '');
  return { value, inlineSecrets };
}

/**
 * Small readers for the deployment files the tests validate without a container engine: docker-compose.yml
 * (services, bind mounts, interpolation), a Dockerfile (instructions) and systemd-style environment files.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { parseDocument } from 'yaml';

export const REPO = join(import.meta.dirname, '..', '..', '..');

/** The parts of a compose service these tests look at. */
export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: string[] | Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
}

export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** Parses YAML strictly (merge keys as compose allows; duplicate keys and syntax errors throw). */
export function parseYamlStrict(text: string, origin: string): unknown {
  const doc = parseDocument(text, { merge: true, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) throw new Error(`${origin}: ${doc.errors.map((e) => e.message).join('; ')}`);
  return doc.toJS();
}

export function readCompose(file = join(REPO, 'docker-compose.yml')): ComposeFile {
  return parseYamlStrict(readFileSync(file, 'utf8'), file) as ComposeFile;
}

/** A short-syntax volume entry `source:target[:mode]`. */
export interface VolumeMount {
  source: string;
  target: string;
  readOnly: boolean;
  /** `./x` or an absolute path (a bind mount), otherwise a named volume. */
  bind: boolean;
}

export function parseVolume(entry: string): VolumeMount {
  const [source, target, mode] = entry.split(':');
  if (source === undefined || target === undefined) throw new Error(`volume "${entry}" has no target`);
  return {
    source,
    target,
    readOnly: mode === 'ro',
    bind: source.startsWith('.') || isAbsolute(source),
  };
}

/** A short-syntax port entry `[ip:]published:container`. */
export function parsePort(entry: string): { hostIp?: string; published: number; container: number } {
  const parts = entry.split(':');
  const container = Number(parts.at(-1));
  const published = Number(parts.at(-2));
  const hostIp = parts.length === 3 ? parts[0] : undefined;
  return { ...(hostIp === undefined ? {} : { hostIp }), published, container };
}

/** Every `${NAME...}` / `$NAME` interpolation in any string of the value (compose resolves them). */
export function interpolations(value: unknown): Array<{ name: string; modifier: string }> {
  const found: Array<{ name: string; modifier: string }> = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v
        .replaceAll('$$', '')
        .matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}|\$([A-Za-z_]\w*)/g)) {
        found.push({ name: m[1] ?? m[3]!, modifier: m[2] ?? '' });
      }
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return found;
}

/** The value after `flag` in an argument list (`--port 8080`) or in `--flag=value` form. */
export function argValue(args: readonly string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  if (index >= 0) return args[index + 1];
  const joined = args.find((a) => a.startsWith(`${flag}=`));
  return joined?.slice(flag.length + 1);
}

export function dependsOn(service: ComposeService): string[] {
  const d = service.depends_on;
  if (d === undefined) return [];
  return Array.isArray(d) ? d : Object.keys(d);
}

/** One Dockerfile instruction with continuation lines joined and comments dropped. */
export interface DockerInstruction {
  keyword: string;
  args: string;
  stage: number;
}

export function parseDockerfile(text: string): DockerInstruction[] {
  const out: DockerInstruction[] = [];
  let pending = '';
  let stage = -1;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = `${pending}${line}`.trim();
    pending = '';
    const space = full.indexOf(' ');
    const keyword = full.slice(0, space).toUpperCase();
    if (keyword === 'FROM') stage += 1;
    out.push({ keyword, args: full.slice(space + 1).trim(), stage });
  }
  return out;
}

/** `NAME=value` lines as systemd's EnvironmentFile reads them (comments and blank lines skipped). */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m === null || line.trimStart().startsWith('#')) continue;
    env[m[1]!] = m[2]!.replace(/^"(.*)"$|^'(.*)'$/, '$1$2');
  }
  return env;
}

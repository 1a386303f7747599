/**
 * Structured JSON logs with pino; human-readable when stderr is a TTY. Every component takes a Logger
 * (child loggers carry a `component` field). Secrets are wrapped in Secret (src/secret.ts) and never
 * logged raw; every serialised line also passes through the redactor (src/redact.ts), which removes configured
 * secret values and credential-shaped text, and known secret-bearing keys are censored by pino.
 *
 * No line carries a key twice (strict JSON parsers such as Elasticsearch's reject such lines, and lenient ones
 * keep only one of the values): pino writes a key bound by a parent and again by a child, or bound and given
 * again in a log call, twice. createLogger's loggers drop the repeats: a child's binding replaces its parent's
 * (withoutRepeatedBindings), and a key given to a log call that a binding already carries with the same value is
 * left out (withoutBoundKeys); given with another value it is kept under `<key>Logged`.
 */
import { pino } from 'pino';
import { redactText, SECRET_LOG_KEYS } from './redact.ts';

export type Logger = pino.Logger;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

const REDACT_PATHS = SECRET_LOG_KEYS.flatMap((key) => [key, `*.${key}`]);

/** The serialised bindings of a logger (",\"pid\":1,\"component\":\"sink\"", pino's chindings). */
const CHINDINGS: symbol = pino.symbols.chindingsSym;

/** Keys pino writes on every line itself, besides the bindings: a log call cannot give them again. */
const WRITTEN_BY_PINO = new Set(['level', 'time', 'msg']);

/** Parsed bindings per serialised bindings text (loggers are few; their bindings never change after creation). */
const boundCache = new Map<string, Record<string, unknown>>();

function boundOf(logger: object): Record<string, unknown> {
  const chindings = (logger as Record<symbol, string | undefined>)[CHINDINGS] ?? '';
  let bound = boundCache.get(chindings);
  if (bound === undefined) {
    bound = chindings === '' ? {} : (JSON.parse(`{${chindings.slice(1)}}`) as Record<string, unknown>);
    if (boundCache.size > 1000) boundCache.clear();
    boundCache.set(chindings, bound);
  }
  return bound;
}

/**
 * pino's onChild: a child binding a key its parent binds already replaces the parent's value instead of writing
 * the key twice. JSON.parse keeps the last occurrence, the child's; the bindings are written again from it.
 */
function withoutRepeatedBindings(child: pino.Logger): void {
  const target = child as unknown as Record<symbol, string>;
  const chindings = target[CHINDINGS];
  if (chindings === undefined || chindings === '') return;
  const bound = boundOf(child);
  const keys = Object.keys(bound);
  if (keys.length === chindings.split('":').length - 1) return; // as many keys as written: no repeat
  target[CHINDINGS] = `,${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(bound[k])}`).join(',')}`;
}

/**
 * pino's logMethod hook: the first argument's keys that a binding of this logger carries already are left out
 * when the value is the same (`logger.warn({ sink: name, … })` in a sink whose logger binds `sink`), or kept
 * under `<key>Logged` when it differs, so that no key is written twice.
 */
function withoutBoundKeys(
  this: pino.Logger,
  args: Parameters<pino.LogFn>,
  method: (...args: unknown[]) => void,
): void {
  const first: unknown = args[0];
  if (first !== null && typeof first === 'object' && !(first instanceof Error) && !Array.isArray(first)) {
    const bound = boundOf(this);
    const given = first as Record<string, unknown>;
    let kept: Record<string, unknown> | undefined;
    for (const key of Object.keys(given)) {
      const reserved = WRITTEN_BY_PINO.has(key);
      if (!reserved && !Object.hasOwn(bound, key)) continue;
      kept ??= { ...given };
      delete kept[key];
      if (reserved || JSON.stringify(given[key]) !== JSON.stringify(bound[key])) {
        kept[`${key}Logged`] = given[key];
      }
    }
    if (kept !== undefined) {
      method.apply(this, [kept, ...args.slice(1)]);
      return;
    }
  }
  method.apply(this, args);
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Force pretty (true) or JSON (false); default: pretty when stderr is a TTY. */
  pretty?: boolean;
  /** Destination stream; default stderr (stdout is reserved for records with the stdout sink). */
  destination?: NodeJS.WritableStream;
}

/** Global symbol under which a bundle may register a synchronous pino-pretty stream factory. */
export const PRETTY_STREAM = Symbol.for('scheduled-events-forwarder.prettyStream');

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const pretty = options.pretty ?? (options.destination === undefined && process.stderr.isTTY === true);
  const base = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Every serialised line passes through the redactor: configured secret values and credential-shaped
    // text (an error message quoting what a receiver echoed) never reach the log. No key is written twice.
    hooks: { streamWrite: redactText, logMethod: withoutBoundKeys },
    onChild: withoutRepeatedBindings,
    base: { pid: process.pid },
  };
  // The single executable cannot start pino's transport worker (it loads a file); its entry registers
  // pino-pretty as a synchronous stream instead (scripts/package/sea-main.ts).
  const prettyStream = (globalThis as Record<symbol, unknown>)[PRETTY_STREAM] as
    | ((options: Record<string, unknown>) => pino.DestinationStream)
    | undefined;
  if (pretty && prettyStream !== undefined) {
    return pino(
      base,
      prettyStream({ destination: 2, sync: true, colorize: true, translateTime: 'SYS:standard' }),
    );
  }
  if (pretty) {
    return pino({
      ...base,
      transport: {
        target: 'pino-pretty',
        options: { destination: 2, colorize: true, translateTime: 'SYS:standard' },
      },
    });
  }
  return pino(
    base,
    (options.destination as pino.DestinationStream | undefined) ?? pino.destination({ fd: 2, sync: true }),
  );
}

/** A logger that discards everything (tests that do not inspect logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * A child logger adding only the bindings its parent does not carry yet, so a component that may receive an
 * already-bound logger keeps the parent's values (createLogger's loggers never write a key twice either way; a
 * plain pino logger, as tests may pass, would).
 */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  const bound = logger.bindings();
  return logger.child(Object.fromEntries(Object.entries(bindings).filter(([key]) => !(key in bound))));
}

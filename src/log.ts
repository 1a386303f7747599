/**
 * Structured JSON logs with pino; human-readable when stderr is a TTY. Every component takes a Logger
 * (child loggers carry a `component` field). Secrets are wrapped in Secret (src/secret.ts) and never
 * logged raw; every serialised line also passes through the redactor (src/redact.ts), which removes configured
 * secret values and credential-shaped text, and known secret-bearing keys are censored by pino.
 */
import { pino } from 'pino';
import { redactText, SECRET_LOG_KEYS } from './redact.ts';

export type Logger = pino.Logger;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

const REDACT_PATHS = SECRET_LOG_KEYS.flatMap((key) => [key, `*.${key}`]);

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
    // text (an error message quoting what a receiver echoed) never reach the log.
    hooks: { streamWrite: redactText },
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
 * A child logger adding only the bindings its parent does not carry yet: pino writes a key bound twice twice
 * (`"component":"delivery","component":"delivery"`), so components that may receive an already-bound logger
 * use this instead of `logger.child`.
 */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  const bound = logger.bindings();
  return logger.child(Object.fromEntries(Object.entries(bindings).filter(([key]) => !(key in bound))));
}

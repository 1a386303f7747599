/**
 * Routes OpenTelemetry's internal diagnostics (exporter warnings such as OTLP partial-success rejections)
 * into our pino logger instead of the console. Call once at startup when an otel sink is configured.
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import { errorMessage } from '../errors.ts';
import { childLogger, type Logger } from '../log.ts';

const LEVELS = {
  error: DiagLogLevel.ERROR,
  warn: DiagLogLevel.WARN,
  info: DiagLogLevel.INFO,
  debug: DiagLogLevel.DEBUG,
};

/** Install a diag logger writing to `logger` (component "otel") at `level` and above. */
export function routeOtelDiagnostics(logger: Logger, level: keyof typeof LEVELS = 'warn'): void {
  const log = childLogger(logger, { component: 'otel' });
  const format = (message: string, args: unknown[]): string =>
    [message, ...args.map((a) => (a instanceof Error || typeof a === 'string' ? errorMessage(a) : ''))]
      .filter((s) => s !== '')
      .join(' ');
  const adapter: DiagLogger = {
    error: (m, ...a) => log.error(format(m, a)),
    warn: (m, ...a) => log.warn(format(m, a)),
    info: (m, ...a) => log.info(format(m, a)),
    debug: (m, ...a) => log.debug(format(m, a)),
    verbose: (m, ...a) => log.trace(format(m, a)),
  };
  diag.setLogger(adapter, { logLevel: LEVELS[level], suppressOverrideMessage: true });
}

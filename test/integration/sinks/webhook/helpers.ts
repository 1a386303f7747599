/** Shared helpers for the webhook sink tests: a fake clock and a sink context. */
import { Writable } from 'node:stream';
import { createLogger, type Logger, silentLogger } from '../../../../src/log.ts';
import { resolveSecret } from '../../../../src/secret.ts';
import type { SinkContext } from '../../../../src/sinks/types.ts';
import type { Clock } from '../../../../src/sinks/webhook/rate-limiter.ts';

/** A clock that only moves when slept on; records every sleep. */
export class FakeClock implements Clock {
  nowMs: number;
  readonly sleeps: number[] = [];
  constructor(startMs = Date.parse('2025-09-19T18:15:50.000Z')) {
    this.nowMs = startMs;
  }
  now(): number {
    return this.nowMs;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.nowMs += ms;
  }
}

export function context(logger: Logger = silentLogger()): SinkContext {
  return { logger, vm: () => undefined, stateDir: '.' };
}

/** A JSON pino logger whose output is collected in `lines`. */
export function capturingLogger(): { logger: Logger; output: () => string } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = createLogger({ level: 'trace', pretty: false, destination });
  return { logger, output: () => chunks.join('') };
}

/** An inline secret (as the config layer would resolve it). */
export function secret(value: string) {
  return resolveSecret(value);
}

export const signal = (): AbortSignal => new AbortController().signal;

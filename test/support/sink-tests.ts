/** Helpers for sink tests: a fake clock at a fixed time (the webhook payload snapshots' T0), a sink context, a capturing logger, an inline secret, a live signal. */
import { type Logger, silentLogger } from '../../src/log.ts';
import { resolveSecret } from '../../src/secret.ts';
import type { SinkContext } from '../../src/sinks/types.ts';
import { FakeClock } from './fake-clock.ts';

/** The webhook tests' fixed wall time (the payload snapshots' timestamps). */
export const T0 = Date.parse('2025-09-19T18:15:50.000Z');

/** The one FakeClock (test/support/fake-clock.ts) at `startMs`: time moves only when the test drives it. */
export function fakeClock(startMs = T0): FakeClock {
  return new FakeClock(startMs);
}

export function context(logger: Logger = silentLogger()): SinkContext {
  return { logger, vm: () => undefined, stateDir: '.' };
}

/** A JSON logger built like `run`'s whose output is collected and audited (test/support/logs.ts). */
export { capturingLogger } from './logs.ts';

/** An inline secret (as the config layer would resolve it). */
export function secret(value: string) {
  return resolveSecret(value);
}

export const signal = (): AbortSignal => new AbortController().signal;

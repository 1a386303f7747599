/**
 * When `run`'s start-up ends (src/cli/commands/run.ts startupEnd): once the pipeline is ready and every sink that
 * takes heartbeats has had its start heartbeat sent or failed, or STARTUP_SENDS_WAIT_MS after ready; once.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STARTUP_SENDS_WAIT_MS, startupEnd } from '../../../src/cli/commands/run.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const sent = (sink: string, trigger: 'start' | 'interval' = 'start') =>
  ({ type: 'periodicSent', kind: 'heartbeat', sink, trigger }) as const;

describe('startupEnd', () => {
  it('without heartbeat sinks, start-up ends when the pipeline is ready', () => {
    const end = vi.fn();
    startupEnd([], end).ready();
    expect(end).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(STARTUP_SENDS_WAIT_MS * 2);
    expect(end).toHaveBeenCalledTimes(1);
  });

  it('waits for the start heartbeat of every heartbeat sink, sent or failed, and for ready, in either order', () => {
    const end = vi.fn();
    const startup = startupEnd(['eh', 'file'], end);
    startup.periodic(sent('eh'));
    startup.periodic({ type: 'periodicSent', kind: 'alert-refresh', sink: 'file', trigger: 'start' });
    startup.periodic(sent('file', 'interval'));
    expect(end).not.toHaveBeenCalled();
    startup.ready();
    expect(end).not.toHaveBeenCalled();
    startup.periodic({
      type: 'periodicFailed',
      kind: 'heartbeat',
      sink: 'file',
      trigger: 'start',
      code: 'io',
      message: 'disk full',
    });
    expect(end).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(STARTUP_SENDS_WAIT_MS * 2);
    startup.periodic(sent('eh'));
    expect(end).toHaveBeenCalledTimes(1);
  });

  it('a start heartbeat that never settles ends start-up STARTUP_SENDS_WAIT_MS after ready', () => {
    const end = vi.fn();
    const startup = startupEnd(['eh'], end);
    startup.ready();
    vi.advanceTimersByTime(STARTUP_SENDS_WAIT_MS - 1);
    expect(end).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(end).toHaveBeenCalledTimes(1);
    startup.periodic(sent('eh'));
    expect(end).toHaveBeenCalledTimes(1);
  });
});

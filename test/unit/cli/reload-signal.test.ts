/**
 * `run` takes SIGHUP from the moment the command begins (src/cli/reload-signal.ts): a SIGHUP delivered while the
 * configuration loads or the forwarder starts is held and applied once it runs, instead of ending the process;
 * after the run it is ignored. The signal is delivered to this process for real (process.kill), not emitted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ReloadRequests } from '../../../src/cli/reload-signal.ts';
import { captureLogger } from '../../support/delivery.ts';
import { waitFor } from '../../support/wait.ts';

const taken: ReloadRequests[] = [];
afterEach(() => {
  for (const r of taken.splice(0)) r.dispose();
});

function requests(platform?: NodeJS.Platform): ReloadRequests {
  const r = new ReloadRequests(platform);
  taken.push(r);
  return r;
}

describe.runIf(process.platform !== 'win32')('ReloadRequests', () => {
  it('holds a SIGHUP that comes before the forwarder runs, hands on every later one, and ignores them after the run', async () => {
    const r = requests();
    expect(r.signal).toBe('SIGHUP');
    const before = process.listenerCount('SIGHUP');
    // While "starting": the default action would end this process. Signals arrive asynchronously: a listener of
    // the test's own says when both have been handled.
    let seen = 0;
    const count = () => seen++;
    process.on('SIGHUP', count);
    process.kill(process.pid, 'SIGHUP');
    await waitFor(() => seen === 1, 'the first SIGHUP delivered');
    process.kill(process.pid, 'SIGHUP');
    await waitFor(() => seen === 2, 'the second SIGHUP delivered');
    process.off('SIGHUP', count);
    let reloads = 0;
    r.attach(() => reloads++);
    expect(reloads).toBe(1); // the held ones, once: a reload reads the file as it is now
    process.kill(process.pid, 'SIGHUP');
    await waitFor(() => reloads === 2, 'the reload after the start');
    const { logger, lines } = captureLogger();
    r.end(logger);
    process.kill(process.pid, 'SIGHUP');
    await waitFor(() => lines().length === 1, 'the ignored signal logged');
    expect(lines()[0]).toMatchObject({ signal: 'SIGHUP', msg: 'stopping: configuration reload ignored' });
    expect(reloads).toBe(2);
    expect(process.listenerCount('SIGHUP')).toBe(before); // still taken after the run
  });

  it('takes no signal on Windows (a service is restarted instead)', () => {
    const before = process.listenerCount('SIGHUP');
    const r = requests('win32');
    expect(r.signal).toBeUndefined();
    expect(process.listenerCount('SIGHUP')).toBe(before);
    let reloads = 0;
    r.attach(() => reloads++);
    expect(reloads).toBe(0);
  });
});

/**
 * The dead-letter cap (docs/delivery.md, "Dead-letter cap") end to end: a real `run` child process against the IMDS
 * simulator, a webhook sink whose receiver rejects every record (HTTP 400: permanent), and the real SQLite state
 * read beside it. With `delivery.caps.maxDeadLetterRows: 3`, five rejected records leave the newest three dead
 * letters; the two oldest are dropped for good, at error level, counted in sef_dead_letters_dropped_total and in
 * the store (`outbox status`, `deadletters list`).
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { startSimulator } from '../../../src/simulator/index.ts';
import { openStoreForInspection, type Store } from '../../../src/store/index.ts';
import { jsonLines, runCli, startRun } from '../../support/child.ts';
import { HttpSinkServer } from '../../support/http-sink-server.ts';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const VM = 'sim-vm-0';
const tmp = makeTempDir('sef-dl-cap-');
afterAll(() => tmp.cleanup());
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function inspect<T>(stateDir: string, read: (store: Store) => T): T | undefined {
  const store = openStoreForInspection({ stateDir, logger: silentLogger(), readOnly: true });
  try {
    return store === undefined ? undefined : read(store);
  } finally {
    store?.close();
  }
}

describe('dead-letter cap', () => {
  it('a sink that rejects every record keeps its newest dead letters; the oldest are dropped loudly and counted', async () => {
    const sim = await startSimulator({ vmName: VM, timeScale: 0 });
    cleanups.push(() => sim.close());
    const rejecting = await HttpSinkServer.start({ status: 400, body: 'bad payload' });
    cleanups.push(() => rejecting.close());
    const stateDir = join(tmp.dir, 'state');
    const config = join(tmp.dir, 'config.yaml');
    const fwd = await startRun(config, {
      stateDir,
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      telemetry: { listen: { enabled: true, port: 0 } },
      sinks: [
        {
          name: 'w',
          type: 'webhook',
          url: rejecting.url(),
          filter: { scope: 'all' },
          delivery: { caps: { maxDeadLetterRows: 3 } },
        },
      ],
    });
    cleanups.push(async () => {
      fwd.child.kill('SIGKILL');
      await fwd.exited;
    });

    const events = [1, 2, 3, 4, 5].map((n) => {
      const id = `E-DL-${n}`;
      sim.admin.injectEvent({ id, type: 'Freeze', resources: [VM], noticeSeconds: 900 });
      return id;
    });
    await waitFor(
      () => inspect(stateDir, (s) => s.stats()[0]?.deadLettersDropped === 2),
      'two dead letters dropped',
    );
    const left = inspect(stateDir, (s) => s.listDeadLetters({ sink: 'w' }).map((d) => d.record.data.EventId));
    expect(left).toEqual(events.slice(2)); // the newest three, in order
    expect(inspect(stateDir, (s) => s.stats())).toEqual([
      expect.objectContaining({ sink: 'w', pending: 0, deadLetters: 3, deadLettersDropped: 2 }),
    ]);

    const loudLines = () =>
      jsonLines(fwd.stderr()).filter((l) => String(l.msg).startsWith("dead letters over the sink's caps"));
    // The log line follows the store's write: wait for it.
    const loud = await waitFor(() => {
      const lines = loudLines();
      return lines.reduce((n, l) => n + Number(l.droppedRows), 0) === 2 ? lines : undefined;
    }, 'the error lines of both drops');
    expect(loud.every((l) => l.level === 50 && l.sink === 'w')).toBe(true);
    const logs = jsonLines(fwd.stderr());

    const listen = String(logs.find((l) => String(l.msg).startsWith('telemetry listening'))?.listen);
    const samples = parsePrometheusText(await (await fetch(`${listen}/metrics`)).text());
    expect(sampleValue(samples, 'sef_dead_letters_dropped_total', { sink: 'w' })).toBe(2);
    expect(sampleValue(samples, 'sef_dead_letters_total', { sink: 'w', reason: 'permanent' })).toBe(5);
    expect(sampleValue(samples, 'sef_dead_letter_rows', { sink: 'w' })).toBe(3);

    const status = await runCli(['outbox', 'status', '--state-dir', stateDir]);
    expect(status.stdout).toMatch(/^w: 0 pending .*3 dead letters, 2 older dropped by the dead-letter cap$/m);
    const list = await runCli(['deadletters', 'list', '--state-dir', stateDir]);
    expect(list.code).toBe(0);
    expect(list.stdout.trim().split('\n')).toHaveLength(4); // the header and three rows
    expect(list.stderr).toContain(
      'note: sink w: 2 older dead letters dropped for good by its dead-letter cap',
    );
  });
});

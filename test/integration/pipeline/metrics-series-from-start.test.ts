/**
 * A real `run` child against the IMDS simulator, scraped over real HTTP: every per-sink series exists from the
 * first scrape at 0 for every enabled sink (counters with each known value of their second label), and after a
 * record is delivered the outbox gauges read 0 instead of disappearing. A counter that first appears at 1 is
 * invisible to `increase(...[1h]) > 0`, so the first dead letter after a restart would raise no alert
 * (packaging/prometheus/sef-alerts.rules.yml, docs/observability.md).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { type ForwarderChild, fileSinkRecords, spawnCli, telemetryListener } from '../../support/child.ts';
import { parsePrometheusText, type Sample } from '../../support/prom-text.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-series-');
let sim: RunningSimulator | undefined;
let fwd: ForwarderChild | undefined;
afterAll(async () => {
  fwd?.child.kill('SIGKILL');
  if (fwd) await fwd.exited;
  await sim?.close();
  tmp.cleanup();
});

const SINKS = ['alpha', 'beta'];

/** Every per-sink series the forwarder must export for `sink` from the start. */
function perSinkSeries(sink: string): Array<[string, Record<string, string>]> {
  return [
    ['sef_outbox_pending', { sink }],
    ['sef_outbox_oldest_age_seconds', { sink }],
    ['sef_dead_letter_rows', { sink }],
    ['sef_deliveries_total', { sink }],
    ['sef_delivery_retries_total', { sink }],
    ['sef_dead_letters_total', { sink, reason: 'permanent' }],
    ['sef_dead_letters_total', { sink, reason: 'overflow' }],
    ['sef_dead_letters_total', { sink, reason: 'expired' }],
    ['sef_store_errors_total', { sink, full: 'true' }],
    ['sef_store_errors_total', { sink, full: 'false' }],
    ['sef_delivery_latency_seconds_count', { sink }],
  ];
}

/** The samples of `name` whose labels are exactly `labels` (the one sample expected, or none). */
function exact(samples: Sample[], name: string, labels: Record<string, string>): Sample[] {
  const keys = Object.keys(labels).sort();
  return samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).sort().join() === keys.join() &&
      keys.every((k) => s.labels[k] === labels[k]),
  );
}

/** "name{labels} = value" for each expected series (missing ones read "absent"), for one readable assertion. */
function show(samples: Sample[], series: Array<[string, Record<string, string>]>): string[] {
  return series.map(([name, labels]) => {
    const hits = exact(samples, name, labels);
    const value = hits.length === 1 ? String(hits[0]!.value) : hits.length === 0 ? 'absent' : 'duplicated';
    return `${name}${JSON.stringify(labels)} = ${value}`;
  });
}

const zeros = (series: Array<[string, Record<string, string>]>): string[] =>
  series.map(([name, labels]) => `${name}${JSON.stringify(labels)} = 0`);

describe('run: per-sink metric series', () => {
  it('exist at 0 from the first scrape, and the outbox gauges read 0 (not absent) once drained', async () => {
    sim = await startSimulator({ timeScale: 0 });
    const out = (sink: string) => join(tmp.dir, `${sink}.jsonl`);
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'telemetry: { listen: { enabled: true, host: 127.0.0.1, port: 0 } }',
        'sinks:',
        ...SINKS.map((s) => `  - { name: ${s}, type: file, path: ${JSON.stringify(out(s))} }`),
        `  - { name: off, type: file, enabled: false, path: ${JSON.stringify(out('off'))} }`,
        '',
      ].join('\n'),
    );
    fwd = spawnCli(['run', '--config', config]);
    const child = fwd;
    // The listener starts before the pipeline is ready: scrape as soon as it is there.
    const port = Number((await telemetryListener(child)).port);
    const scrape = async (): Promise<Sample[]> => {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      return parsePrometheusText(await response.text());
    };
    const expected = SINKS.flatMap(perSinkSeries);

    const first = await scrape();
    expect(show(first, expected)).toEqual(zeros(expected));
    // The other labelled counters whose values are known up front exist at 0 too (IMDS is healthy, no events).
    const pollFailures = first.filter((s) => s.name === 'sef_poll_failures_total');
    expect(pollFailures.map((s) => s.labels.reason).sort()).toEqual(
      [
        'aborted',
        'bad-request',
        'gone',
        'invalid-response',
        'network',
        'not-found',
        'server-error',
        'throttled',
        'timeout',
        'unexpected-status',
      ].sort(),
    );
    expect(pollFailures.every((s) => s.value === 0)).toBe(true);
    const records = first.filter((s) => s.name === 'sef_records_total');
    expect(records.map((s) => s.labels.transition).sort()).toEqual(
      ['approved', 'canceled', 'completed', 'scheduled', 'started', 'updated'].sort(),
    );
    expect(records.every((s) => s.value === 0)).toBe(true);
    // A disabled sink has no series.
    expect(first.filter((s) => s.labels.sink === 'off')).toEqual([]);

    await child.ready;
    expect(show(await scrape(), expected)).toEqual(zeros(expected));

    // One record delivered to both sinks: the queues drained, the gauges read 0 rather than vanishing.
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
    const read = (sink: string) =>
      existsSync(out(sink)) ? fileSinkRecords(readFileSync(out(sink), 'utf8')).records : [];
    await waitFor(() => SINKS.every((s) => read(s).length === 1), 'the record in both file sinks');
    const drained = await waitFor(async () => {
      const s = await scrape();
      return SINKS.every((sink) => exact(s, 'sef_deliveries_total', { sink })[0]?.value === 1)
        ? s
        : undefined;
    }, 'sef_deliveries_total = 1 for both sinks');
    const delivered = SINKS.flatMap(
      (sink): Array<[string, Record<string, string>]> => [
        ['sef_deliveries_total', { sink }],
        ['sef_delivery_latency_seconds_count', { sink }],
      ],
    );
    const stillZero = expected.filter(([name]) => !delivered.some(([d]) => d === name));
    expect(show(drained, stillZero)).toEqual(zeros(stillZero));
    expect(show(drained, delivered)).toEqual(
      delivered.map(([name, labels]) => `${name}${JSON.stringify(labels)} = 1`),
    );
    expect(exact(drained, 'sef_records_total', { transition: 'scheduled' })[0]?.value).toBe(1);
    // Every IMDS request's duration lands in the latency histogram (it was never fed by `run` before).
    const polls = exact(drained, 'sef_polls_total', {})[0]?.value ?? 0;
    const timed = exact(drained, 'sef_imds_latency_seconds_count', {})[0]?.value ?? 0;
    expect(polls).toBeGreaterThan(0);
    expect(timed).toBeGreaterThanOrEqual(polls - 1); // a scrape may land between a poll's count and its timing

    child.child.kill('SIGTERM');
    expect((await child.exited).code).toBe(0);
  });
});

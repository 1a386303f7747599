/**
 * A real `run` child process whose PagerDuty destination refuses everything (the Events API v2 double, which
 * answers an unknown integration key as PagerDuty does: 400 "Invalid routing key"), then accepts again once the
 * integration exists (issue 31, item 3): the sink pauses instead of dead-lettering, the cause and its fix are
 * logged once at error level, /readyz (real HTTP; the default readiness.sinks `ignore`) stays 200 and shows the
 * sink paused, /metrics has sef_sink_paused 1 with the reason; the sink resumes by itself, delivers the event and
 * nothing was dead-lettered; a file sink beside it delivers throughout.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import {
  type ForwarderChild,
  jsonLines,
  readFileSinkRecords,
  spawnCli,
  telemetryListener,
} from '../../support/child.ts';
import { PagerDutyEventsDouble } from '../../support/pagerduty-events-double.ts';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-paused-sink-');
const ROUTING_KEY = 'R0ut1ngK3yOfTheDeletedIntegratio'; // 32 characters, as PagerDuty requires
let sim: RunningSimulator | undefined;
let pagerduty: PagerDutyEventsDouble | undefined;
let fwd: ForwarderChild | undefined;
afterAll(async () => {
  fwd?.child.kill('SIGKILL');
  if (fwd) await fwd.exited;
  await sim?.close();
  await pagerduty?.close();
  tmp.cleanup();
});

interface ReadySink {
  ok: boolean;
  state: string;
  paused?: { code: string; since: string };
  lastError?: string;
  deadLettered: number;
  pending?: number;
}

async function readyz(port: number): Promise<{ status: number; sinks: Record<string, ReadySink> }> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  const body = (await response.json()) as { sinks: Record<string, ReadySink> };
  return { status: response.status, sinks: body.sinks };
}

async function metrics(port: number) {
  return parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
}

describe('run: a sink whose destination refuses everything', () => {
  it('pauses (nothing dead-lettered, the cause and fix logged once), stays ready by default, and resumes by itself once the destination accepts', async () => {
    sim = await startSimulator({ timeScale: 0 });
    pagerduty = await PagerDutyEventsDouble.start();
    pagerduty.integrationKeys(['0'.repeat(32)]); // the integration behind ROUTING_KEY does not exist (yet)
    const out = join(tmp.dir, 'records.jsonl');
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        'telemetry: { listen: { enabled: true, port: 0 } }',
        'sinks:',
        '  - name: pd',
        '    type: pagerduty',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's secret reference syntax
        '    routingKey: "${SEF_TEST_PD_KEY}"',
        `    url: ${JSON.stringify(pagerduty.url)}`,
        '    minIntervalMs: 0',
        '    delivery: { probe: { initialMs: 200, maxMs: 400 } }',
        '  - name: file',
        '    type: file',
        `    path: ${JSON.stringify(out)}`,
        '',
      ].join('\n'),
    );
    fwd = spawnCli(['run', '--config', config], { SEF_TEST_PD_KEY: ROUTING_KEY });
    await fwd.ready;
    const port = Number((await telemetryListener(fwd)).port);
    sim.admin.injectEvent({ id: 'E-PAUSE', type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });

    // Paused: two probes refused, the record pending, /readyz 200 (sinks do not count by default).
    const paused = await waitFor(async () => {
      const r = await readyz(port);
      return r.sinks.pd?.state === 'paused' && pagerduty!.requests.length >= 3 ? r : undefined;
    }, '/readyz showing the pd sink paused after two refused probes');
    expect(paused.status).toBe(200);
    expect(paused.sinks.pd).toMatchObject({
      ok: false,
      paused: { code: 'http-400' },
      deadLettered: 0,
      pending: 1,
      lastError: expect.stringContaining('fix: set routingKey'),
    });
    expect(paused.sinks.file).toMatchObject({ state: 'ok', pending: 0 });
    expect(readFileSinkRecords(out).map((r) => r.data.EventId)).toEqual(['E-PAUSE']);
    const during = await metrics(port);
    expect(sampleValue(during, 'sef_sink_paused', { sink: 'pd', reason: 'http-400' })).toBe(1);
    expect(sampleValue(during, 'sef_sink_paused', { sink: 'file' })).toBe(0);

    // The integration is created: the next probe is accepted and the sink resumes by itself.
    pagerduty.integrationKeys([ROUTING_KEY]);
    const resumed = await waitFor(async () => {
      const r = await readyz(port);
      return r.sinks.pd?.state === 'ok' && r.sinks.pd.pending === 0 ? r : undefined;
    }, '/readyz showing the pd sink resumed with nothing pending');
    expect(resumed.sinks.pd).toMatchObject({ ok: true, deadLettered: 0 });
    expect(resumed.sinks.pd?.paused).toBeUndefined();
    expect(pagerduty.accepted.map((e) => e.payload?.custom_details?.EventId)).toEqual(['E-PAUSE']);
    const after = await metrics(port);
    expect(sampleValue(after, 'sef_sink_paused', { sink: 'pd' })).toBe(0);
    expect(sampleValue(after, 'sef_dead_letter_rows', { sink: 'pd' })).toBe(0);
    expect(sampleValue(after, 'sef_dead_letters_total', { sink: 'pd', reason: 'permanent' })).toBe(0);

    fwd.child.kill('SIGTERM');
    expect((await fwd.exited).code).toBe(0);
    const lines = jsonLines(fwd.stderr());
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).toHaveLength(1); // the cause and its fix, once, however many probes were refused
    expect(errors[0]).toMatchObject({ component: 'delivery', sink: 'pd', code: 'http-400' });
    expect(String(errors[0]?.msg)).toMatch(
      /^sink paused: .*Invalid routing key.*fix: set routingKey to the Integration Key.*records stay pending/,
    );
    expect(lines.filter((l) => String(l.msg).startsWith('sink resumed'))).toEqual([
      expect.objectContaining({ level: 30, sink: 'pd', code: 'http-400' }),
    ]);
    expect(fwd.stderr()).not.toContain('permanent delivery failure');
    expect(fwd.stderr()).not.toContain(ROUTING_KEY);
  });
});

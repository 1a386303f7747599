/**
 * IMDS change → acknowledged at the Slack-style webhook and at the Event Hubs double: the whole forwarder
 * in-process at the default 1,000 ms poll interval, both sinks configured at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimulator } from '../src/simulator/index.ts';
import { withTimeout } from './lib/engine.ts';
import type { BenchContext, Benchmark, BenchOutput } from './lib/harness.ts';
import { startInProcessForwarder, toggleRebootEvent } from './lib/pipeline.ts';
import { roundSamples, summarize } from './lib/stats.ts';
import { sinkEntry, startTargets } from './lib/targets.ts';

const POLL_INTERVAL_MS = 1000;

export const endToEnd: Benchmark = {
  name: 'end-to-end',
  title: 'IMDS change → acknowledged at Slack-style webhook and Event Hubs double',
  method:
    'The IMDS simulator (real time) and the whole forwarder run in one process at the default 1,000 ms poll ' +
    'interval with two sinks: `slack` → the recording HTTP server (Block Kit message; default rate limit of ' +
    'one message per second kept, samples are spaced ≥ 1 s apart) and `eventhubs` → the AMQP double through ' +
    'the real @azure/event-hubs SDK (connection string, plain TCP). At a random phase of the poll grid the ' +
    'benchmark injects a Reboot for this VM or removes it; latency = document change → the delivery engine ' +
    'reports the record acknowledged by that sink (destination confirmed, outbox row deleted), measured with ' +
    'performance.now(). The detection part (change → committed) is reported alongside.',
  async run(ctx: BenchContext): Promise<BenchOutput> {
    const count = ctx.smoke ? 2 : 100;
    const sim = await startSimulator({ timeScale: 1 });
    const targets = await startTargets();
    const forwarder = await startInProcessForwarder({
      endpoint: sim.url,
      pollIntervalMs: POLL_INTERVAL_MS,
      entries: (dir) => [sinkEntry('slack', targets, { dir }), sinkEntry('eventhubs', targets, { dir })],
    });
    const detect: number[] = [];
    const slack: number[] = [];
    const eventHubs: number[] = [];
    try {
      let eventId: string | undefined;
      for (let i = 0; i < count; i++) {
        // ≥ 1 s since the last Slack message (its rate limit), then a random phase of the poll grid.
        await sleep(POLL_INTERVAL_MS + Math.random() * POLL_INTERVAL_MS);
        const t0 = performance.now();
        const change = toggleRebootEvent(sim, eventId);
        eventId = change.eventId;
        const { transition } = change;
        const committed = await withTimeout(
          forwarder.committed(eventId, transition),
          30_000,
          `${transition} record`,
        );
        const [slackAt, ehAt] = await withTimeout(
          Promise.all([
            forwarder.acked('slack', committed.record.id),
            forwarder.acked('eventhubs', committed.record.id),
          ]),
          60_000,
          `acknowledgements of ${committed.record.id}`,
        );
        detect.push(committed.at - t0);
        slack.push(slackAt - t0);
        eventHubs.push(ehAt - t0);
        if (transition === 'canceled') eventId = undefined;
        if ((i + 1) % 20 === 0) ctx.log(`${i + 1}/${count}`);
      }
    } finally {
      await forwarder.stop();
      await targets.close();
      await sim.close();
    }
    const row = (label: string, samples: number[]) => {
      const s = summarize(samples);
      return [label, s.count, s.min, s.mean, s.p50, s.p90, s.p99, s.max];
    };
    return {
      parameters: { samples: count, pollIntervalMs: POLL_INTERVAL_MS, slackMinIntervalMs: 1000 },
      tables: [
        {
          title: 'IMDS document change → … (ms), poll interval 1,000 ms',
          columns: ['until', 'samples', 'min', 'mean', 'p50', 'p90', 'p99', 'max'],
          rows: [
            row('record committed', detect),
            row('acknowledged by Slack-style webhook', slack),
            row('acknowledged by Event Hubs double', eventHubs),
          ],
        },
      ],
      raw: {
        committedMs: roundSamples(detect),
        slackMs: roundSamples(slack),
        eventHubsMs: roundSamples(eventHubs),
      },
      notes: [],
    };
  },
};

/**
 * The pipeline's one observer sees the delivery engine's events (the engine reports to it directly; there is
 * no separate subscription), from the engine's start until `stopping`, and none after it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DeliveryEngineEvent } from '../../../src/delivery/index.ts';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { startSimulator } from '../../../src/simulator/index.ts';
import { jsonLines } from '../../support/child.ts';
import { simulatorConfig, startForwarder } from '../../support/forwarder.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-delivery-observer-');
afterAll(() => tmp.cleanup());

describe('run: delivery events through the pipeline observer', () => {
  it('reports delivered, drained and idle for the configured sink, and nothing after stopping', async () => {
    const sim = await startSimulator({ timeScale: 0 });
    try {
      const out = join(tmp.dir, 'records.jsonl');
      const config = simulatorConfig({ imdsEndpoint: sim.url, stateDir: join(tmp.dir, 'state'), out });
      const seen: Array<DeliveryEngineEvent | 'stopping'> = [];
      let ready = false;
      const { stop } = startForwarder({
        config,
        observer: {
          delivery: (event) => seen.push(event),
          stopping: () => seen.push('stopping'),
          ready: () => {
            ready = true;
          },
        },
      });
      await waitFor(() => ready, 'the delivery engine to start');
      const { id } = sim.admin.injectEvent({ type: 'Freeze', noticeSeconds: 900 });
      await waitFor(
        () => seen.some((e) => e !== 'stopping' && e.type === 'delivered'),
        'the delivered event of the scheduled record',
      );
      await stop();

      const written = jsonLines<LifecycleRecord>(readFileSync(out, 'utf8'));
      expect(written.map((r) => `${r.subject}:${r.transition}`)).toEqual([`${id}:scheduled`]);
      const stoppedAt = seen.indexOf('stopping');
      expect(stoppedAt).toBe(seen.length - 1); // no delivery event after shutdown began
      const events = seen.slice(0, stoppedAt) as DeliveryEngineEvent[];
      const sink = config.sinks[0]!.name;
      expect(events.filter((e) => e.type === 'delivered')).toEqual([
        expect.objectContaining({ type: 'delivered', sink, count: 1, recordIds: [written[0]!.id] }),
      ]);
      const afterDelivery = events.slice(events.findIndex((e) => e.type === 'delivered') + 1);
      expect(afterDelivery.map((e) => e.type)).toEqual(['drained', 'idle']);
      expect(events[0]).toEqual({ type: 'idle', sink }); // the worker's first look: nothing pending yet
    } finally {
      await sim.close();
    }
  });
});

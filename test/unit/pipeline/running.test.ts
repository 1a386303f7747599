import { describe, expect, it } from 'vitest';
import { RunningPipeline } from '../../../src/pipeline/running.ts';

describe('RunningPipeline', () => {
  it('announces, then stops the parts in reverse order, each once, collecting what they throw', async () => {
    const outer = new AbortController();
    const seen: string[] = [];
    const running = new RunningPipeline(outer.signal, () =>
      seen.push(`announce stopping=${running.stopping}`),
    );
    running.onStop(() => seen.push('store'));
    running.onStop(() => {
      seen.push('source');
      throw new Error('source');
    });
    running.onStop(async () => {
      await Promise.resolve();
      seen.push('delivery');
      throw new Error('delivery');
    });
    const first = running.stop();
    const second = running.stop();
    expect(second).toBe(first);
    const errors = (await first) as Error[];
    expect(seen).toEqual(['announce stopping=true', 'delivery', 'source', 'store']);
    expect(errors.map((e) => e.message)).toEqual(['delivery', 'source']);
    expect(await running.stop()).toBe(errors);
    expect(seen).toHaveLength(4);
  });

  it('follows the outer signal until stop begins; abort() ends the parts on its own', () => {
    const outer = new AbortController();
    const running = new RunningPipeline(outer.signal, () => {});
    outer.abort();
    expect(running.signal.aborted).toBe(true);

    const later = new AbortController();
    const stopped = new RunningPipeline(later.signal, () => {});
    void stopped.stop();
    later.abort();
    expect(stopped.signal.aborted).toBe(false);

    const failed = new RunningPipeline(new AbortController().signal, () => {});
    failed.abort();
    expect(failed.signal.aborted).toBe(true);
  });
});

/**
 * The drain's concurrency (src/kubernetes/drain.ts) against an in-memory API server stand-in: at most
 * maxConcurrentEvictions evictions in flight, and a pod whose budget refuses it retries on its own while the others
 * are evicted. (The end-to-end behaviour against the Kubernetes double: test/integration/kubernetes/drain.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { EvictionResult, NodeApi } from '../../../src/kubernetes/client.ts';
import { kubernetesSection } from '../../../src/kubernetes/config.ts';
import { drainNode } from '../../../src/kubernetes/drain.ts';
import { createLogger } from '../../../src/log.ts';
import { podView } from './fixtures.ts';

/** Pods on one node; an eviction takes a few ms; `refuse(name)` says how many times a pod is refused first. */
function apiWith(names: string[], refuse: (name: string) => number = () => 0) {
  const pods = new Map(names.map((n) => [n, podView(n)]));
  const refusals = new Map(names.map((n) => [n, refuse(n)]));
  const stats = { inFlight: 0, maxInFlight: 0, order: [] as string[] };
  const api = {
    listPodsOnNode: async () => [...pods.values()],
    evictPod: async (p: { name: string }): Promise<EvictionResult> => {
      stats.inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      await new Promise((r) => setTimeout(r, 5));
      stats.inFlight--;
      const left = refusals.get(p.name) ?? 0;
      if (left > 0) {
        refusals.set(p.name, left - 1);
        return {
          kind: 'blocked',
          message: 'Cannot evict pod as it would violate the pod disruption budget.',
        };
      }
      pods.delete(p.name);
      stats.order.push(p.name);
      return { kind: 'evicted' };
    },
  } as unknown as NodeApi;
  return { api, stats };
}

const settings = (drain: object) => kubernetesSection.parse({ actions: { drain } }).actions.drain;
const drain = (api: NodeApi, drainSettings: object) =>
  drainNode({
    api,
    nodeName: 'n',
    settings: settings(drainSettings),
    deadlineMs: Date.now() + 600_000,
    now: Date.now,
    signal: undefined,
    logger: createLogger({ level: 'silent' }),
    progress: () => {},
  });

describe('drainNode', () => {
  it('keeps at most maxConcurrentEvictions evictions in flight', async () => {
    const { api, stats } = apiWith(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    expect(await drain(api, { maxConcurrentEvictions: 3 })).toBe(7);
    expect(stats.maxInFlight).toBe(3);
  });

  it('a refused pod retries on its own; the others are evicted meanwhile', async () => {
    const { api, stats } = apiWith(['a', 'b', 'c'], (name) => (name === 'a' ? 2 : 0));
    expect(await drain(api, { maxConcurrentEvictions: 3, retryIntervalMs: 20 })).toBe(3);
    expect(stats.order).toEqual(['b', 'c', 'a']);
  });
});

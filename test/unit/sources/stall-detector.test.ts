import { describe, expect, it } from 'vitest';
import { StallDetector } from '../../../src/sources/stall-detector.ts';
import { waitFor } from '../../support/wait.ts';

describe('StallDetector', () => {
  it('reports the longest lateness since the last take, then resets (fake clock)', () => {
    let now = 1_000;
    const detector = new StallDetector({ intervalMs: 100, now: () => now });
    detector.start();
    detector.stop(); // ticks are driven by hand below
    detector.recordTick(1_100); // on time
    detector.recordTick(1_250); // 50 ms late
    detector.recordTick(6_250); // 4 900 ms late: a freeze
    detector.recordTick(6_360); // 10 ms late
    now = 6_400;
    expect(detector.takeMaxStallMs()).toBe(4_900);
    now = 6_450;
    expect(detector.takeMaxStallMs()).toBe(0);
  });

  it('counts a stall still in progress when taken', () => {
    let now = 0;
    const detector = new StallDetector({ intervalMs: 100, now: () => now });
    detector.start();
    detector.stop();
    detector.recordTick(100);
    now = 2_100;
    expect(detector.takeMaxStallMs()).toBe(1_900);
  });

  it('coarse ticks while idle, fine ticks while an event is tracked; switching neither invents nor hides a stall', () => {
    let now = 0;
    const detector = new StallDetector({ intervalMs: 100, idleIntervalMs: 1000, now: () => now });
    detector.start();
    expect(detector.intervalMs).toBe(100);
    now = 50;
    detector.setFine(false);
    expect(detector.intervalMs).toBe(1000);
    detector.setFine(false); // no change: nothing happens
    now = 1050;
    detector.recordTick(now); // on time at the coarse rate: no stall
    now = 1050 + 1000 + 2500;
    detector.recordTick(now); // 2.5 s late
    now += 40;
    detector.setFine(true); // the interval in progress (40 ms) counts at the coarse rate: no stall
    expect(detector.intervalMs).toBe(100);
    now += 100;
    detector.recordTick(now); // on time at the fine rate
    detector.stop();
    expect(detector.takeMaxStallMs()).toBe(2500);
  });

  it('rejects a nonsensical interval with a clear error', () => {
    expect(() => new StallDetector({ intervalMs: 0 })).toThrow(/positive number of ms/);
  });

  it('measures a real blocked event loop with the real timer', async () => {
    const detector = new StallDetector({ intervalMs: 10 });
    detector.start();
    expect(detector.running).toBe(true);
    const until = performance.now() + 300;
    while (performance.now() < until) {
      // block the event loop for 300 ms
    }
    const stall = await waitFor(() => {
      const taken = detector.takeMaxStallMs();
      return taken >= 250 ? taken : 0;
    }, 'the blocked loop to be measured');
    detector.stop();
    expect(detector.running).toBe(false);
    expect(stall).toBeGreaterThanOrEqual(250);
  });
});

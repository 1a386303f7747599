import { describe, expect, it } from 'vitest';
import { type Clock, sleep } from '../../../src/clock.ts';
import { parseDuration, parseFaultSpec, parseScenario, VirtualClock } from '../../../src/simulator/index.ts';
import { FakeClock } from '../../support/fake-clock.ts';

describe('parseDuration', () => {
  it('reads seconds, units and compound durations', () => {
    expect(parseDuration(90)).toBe(90_000);
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('5m10s')).toBe(310_000);
    expect(parseDuration('3d')).toBe(259_200_000);
    expect(parseDuration('250ms')).toBe(250);
  });
  it('names bad values', () => {
    expect(() => parseDuration('soon', 'at')).toThrow('at "soon" is not a duration');
    expect(() => parseDuration('5x')).toThrow(RangeError);
    expect(() => parseDuration(-1)).toThrow('>= 0');
  });
});

describe('parseFaultSpec', () => {
  it('accepts the compact form and JSON', () => {
    expect(parseFaultSpec('status:status=429,retryAfterSeconds=2,count=3')).toMatchObject({
      kind: 'status',
      status: 429,
      retryAfterSeconds: 2,
      count: 3,
    });
    expect(parseFaultSpec('rate-limit')).toMatchObject({ kind: 'rate-limit', perSecond: 5 });
    expect(parseFaultSpec('{"kind":"latency","ms":200,"vm":"web-2"}')).toMatchObject({
      kind: 'latency',
      ms: 200,
      vm: 'web-2',
    });
  });
  it('rejects unknown kinds and options', () => {
    expect(() => parseFaultSpec('explode')).toThrow();
    expect(() => parseFaultSpec('latency:speed=2')).toThrow();
    expect(() => parseFaultSpec('latency:ms')).toThrow('key=value');
  });
});

describe('parseScenario', () => {
  it('names the scenario and the bad field', () => {
    expect(() => parseScenario({ name: 'x', steps: [{ at: '1m' }] }, 'x.yaml')).toThrow(
      /invalid scenario x.yaml: steps.0: each step needs exactly one action/,
    );
    expect(() => parseScenario({ name: 'x', steps: [{ at: 'soon', remove: 'E' }] }, 'x.yaml')).toThrow(
      'x.yaml steps.0.at "soon" is not a duration',
    );
    expect(() => parseScenario({ steps: [] }, 'x.yaml')).toThrow('name');
    expect(() => parseScenario({ name: 'x', steps: [{ at: 1, reschedule: { id: 'E' } }] }, 'x.yaml')).toThrow(
      'exactly one of notBefore or noticeSeconds',
    );
  });
});

describe('VirtualClock', () => {
  it('scales real time and adds advances', async () => {
    const real = new FakeClock();
    const clock = new VirtualClock({ startMs: 0, timeScale: 60, realClock: real });
    await real.advance(1000);
    expect(clock.now()).toBe(60_000);
    expect(clock.monotonic()).toBe(60_000);
    clock.advance(5000);
    expect(clock.now()).toBe(65_000);
    expect(() => new VirtualClock({ timeScale: -1 })).toThrow('timeScale');
    expect(() => clock.advance(-1)).toThrow('advance');
  });

  it('is a src/clock.ts Clock: timers fire in simulated time, by scaled real time or by advance()', async () => {
    const real = new FakeClock();
    const clock: Clock = new VirtualClock({ startMs: 0, timeScale: 60, realClock: real });
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('1 min'), 60_000);
    const cancelled = clock.setTimeout(() => fired.push('cancelled'), 30_000);
    clock.clearTimeout(cancelled);
    await real.advance(999);
    expect(fired).toEqual([]);
    await real.advance(1); // 1000 real ms x 60 = one simulated minute
    expect(fired).toEqual(['1 min']);
    expect(real.pendingTimers).toBe(0);

    // sleep() from src/clock.ts works on it unchanged
    let woke = false;
    void sleep(clock, 120_000).then(() => {
      woke = true;
    });
    await real.advance(1999);
    expect(woke).toBe(false);
    await real.advance(1);
    expect(woke).toBe(true);
  });

  it('with time frozen (timeScale 0) only advance() fires timers, in time order', () => {
    const real = new FakeClock();
    const clock = new VirtualClock({ startMs: 1_000, timeScale: 0, realClock: real });
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(2), 2_000);
    clock.setTimeout(() => {
      fired.push(1);
      clock.setTimeout(() => fired.push(3), 0); // added by a callback: due at once (after 2, already due)
    }, 1_000);
    expect(real.pendingTimers).toBe(0); // nothing armed on the real clock while frozen
    clock.advance(999);
    expect(fired).toEqual([]);
    clock.advance(2_000);
    expect(fired).toEqual([1, 2, 3]);
    expect(clock.now()).toBe(3_999);
  });
});

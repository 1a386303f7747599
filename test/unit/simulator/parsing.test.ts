import { describe, expect, it } from 'vitest';
import { parseDuration, parseFaultSpec, parseScenario, VirtualClock } from '../../../src/simulator/index.ts';

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
  it('scales real time and adds advances', () => {
    let real = 1000;
    const clock = new VirtualClock({ startMs: 0, timeScale: 60, realNow: () => real });
    real += 1000;
    expect(clock.now()).toBe(60_000);
    clock.advance(5000);
    expect(clock.now()).toBe(65_000);
    expect(() => new VirtualClock({ timeScale: -1 })).toThrow('timeScale');
  });
});

import { describe, expect, it } from 'vitest';
import type { VmIdentity } from '../../../../src/domain/index.ts';
import { createLogger } from '../../../../src/log.ts';
import { VmIdentityCache } from '../../../../src/sources/imds/identity.ts';
import { ImdsError } from '../../../../src/sources/imds-protocol/errors.ts';
import { FakeClock, settle } from '../../../support/fake-clock.ts';
import { auditedStream } from '../../../support/logs.ts';

function identity(name: string): VmIdentity {
  return {
    name,
    vmId: `id-${name}`,
    resourceId: '',
    subscriptionId: '',
    resourceGroupName: '',
    location: '',
    zone: '',
    vmScaleSetName: '',
    vmSize: '',
    osType: 'Linux',
    computerName: name,
  };
}

function setup(answers: Array<VmIdentity | ImdsError>) {
  const clock = new FakeClock();
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = createLogger({
    level: 'info',
    pretty: false,
    destination: auditedStream((line) => lines.push(JSON.parse(line))),
  });
  let calls = 0;
  const client = {
    getInstanceMetadata: async (): Promise<VmIdentity> => {
      const next = answers[Math.min(calls, answers.length - 1)]!;
      calls += 1;
      if (next instanceof ImdsError) throw next;
      return next;
    },
  };
  const cache = new VmIdentityCache({ client, clock, logger, refreshIntervalMs: 60_000 });
  return { clock, cache, lines, calls: () => calls };
}

describe('VmIdentityCache', () => {
  it('fetches at start and refreshes periodically', async () => {
    const { clock, cache, calls } = setup([identity('vm-1'), identity('vm-1'), identity('vm-1b')]);
    const controller = new AbortController();
    expect(cache.current()).toBeUndefined();
    expect((await cache.start(controller.signal))?.name).toBe('vm-1');
    expect(calls()).toBe(1);
    await clock.runNextTimer();
    expect(clock.t).toBe(60_000);
    expect(calls()).toBe(2);
    await clock.runNextTimer();
    expect(cache.current()?.name).toBe('vm-1b');
    controller.abort();
    expect(clock.pendingTimers).toBe(0);
  });

  it('keeps the last good value when a refresh fails and logs the failure once', async () => {
    const failure = new ImdsError('timeout', 'IMDS did not answer within 5000 ms');
    const { cache, lines } = setup([identity('vm-2'), failure, failure, failure, identity('vm-2')]);
    await cache.refresh();
    for (let i = 0; i < 3; i++) expect((await cache.refresh())?.name).toBe('vm-2');
    expect(cache.current()?.name).toBe('vm-2');
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('IMDS did not answer within 5000 ms');
    await cache.refresh();
    expect(lines.some((l) => l.msg === 'VM identity refresh recovered')).toBe(true);
  });

  it('shares one request between concurrent on-demand refreshes (e.g. after a reboot)', async () => {
    const { cache, calls } = setup([identity('vm-3')]);
    const [a, b] = await Promise.all([cache.refresh(), cache.refresh()]);
    await settle();
    expect(a).toEqual(b);
    expect(calls()).toBe(1);
  });

  it('is undefined until the first success', async () => {
    const { cache } = setup([new ImdsError('not-found', 'IMDS endpoint not available (404)')]);
    expect(await cache.refresh()).toBeUndefined();
    expect(cache.current()).toBeUndefined();
  });
});

/**
 * The Reloader over a real delivery engine and a real SQLite store (the child-process tests in
 * test/integration/pipeline/reload.test.ts cover the signal and the sinks' deliveries): a sink that cannot be
 * built refuses the whole reload before anything changed; requests made while one reload runs join the next one;
 * nothing is reloaded once shutdown began.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Config, ConfigError, type SinkConfig, validateConfig } from '../../../src/config/index.ts';
import { DeliveryEngine } from '../../../src/delivery/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { Reloader } from '../../../src/pipeline/reload.ts';
import type { ReloadReport } from '../../../src/pipeline/reload-plan.ts';
import type { RoutedSink } from '../../../src/pipeline/route.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { ScriptedSink } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { FAKE_FACTORIES } from '../config/fake-factories.ts';

let tmp: { dir: string; cleanup: () => void };
let store: Store;
let engine: DeliveryEngine;
beforeEach(() => {
  tmp = makeTempDir('sef-reloader-');
  store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
});
afterEach(async () => {
  await engine?.stop(0);
  store.close();
  tmp.cleanup();
});

const sinks = (...names: string[]) => ({ sinks: names.map((name) => ({ name, type: 'stdout' })) });
const load = (raw: Record<string, unknown>): Config =>
  validateConfig({ stateDir: '/var/lib/sef-reloader', ...raw }, { factories: FAKE_FACTORIES });

function reloader(
  config: Config,
  buildSink: (sink: SinkConfig) => Promise<ScriptedSink>,
  options: { stopping?: () => boolean } = {},
) {
  const built = config.sinks.map((s) => ({ sink: new ScriptedSink(s.name, Date) }));
  engine = new DeliveryEngine({ store, sinks: built, logger: silentLogger() });
  engine.start();
  const routes: Array<readonly RoutedSink[]> = [];
  const reports: ReloadReport[] = [];
  const r = new Reloader(config, {
    engine,
    step: { reroute: (routed) => routes.push(routed) },
    approval: { reconfigure: () => {} },
    store,
    buildSink,
    stopping: options.stopping ?? (() => false),
    logger: silentLogger(),
    observer: { reloaded: (report) => reports.push(report) },
  });
  return { reloader: r, routes, reports, first: built.map((b) => b.sink) };
}

describe('Reloader', () => {
  it('a sink that cannot be built refuses the whole reload: nothing changes, the sinks built for it are closed', async () => {
    const made: ScriptedSink[] = [];
    const {
      reloader: r,
      routes,
      first,
    } = reloader(load(sinks('a', 'b')), async (sink) => {
      if (sink.name === 'broken') throw new ConfigError('sink broken: the CA file cannot be read', []);
      const s = new ScriptedSink(sink.name, Date);
      made.push(s);
      return s;
    });
    const report = await r.request(async () => load(sinks('a', 'c', 'broken')));
    expect(report).toMatchObject({
      outcome: 'invalid',
      problems: ['sink broken: the CA file cannot be read'],
      sinks: ['a', 'b'],
    });
    expect(engine.sinks).toEqual(['a', 'b']);
    expect(routes).toEqual([]); // routing untouched
    expect(made.map((s) => [s.name, s.closes])).toEqual([['c', 1]]);
    expect(first.map((s) => s.closes)).toEqual([0, 0]); // the running sinks were never touched
    expect(r.config.sinks.map((s) => s.name)).toEqual(['a', 'b']);
  });

  it('requests made while a reload runs join one next reload (SIGHUP twice in a row reads the file twice, not ten times)', async () => {
    const { reloader: r } = reloader(load(sinks('a')), async (sink) => new ScriptedSink(sink.name, Date));
    let loads = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const loader = async () => {
      loads++;
      await gate;
      return load(sinks('a', `s${loads}`));
    };
    const first = r.request(loader);
    await new Promise((resolve) => setImmediate(resolve)); // the first one is reading the file
    const joined = [r.request(loader), r.request(loader), r.request(loader)];
    expect(joined[1]).toBe(joined[0]);
    release();
    const [a, b] = await Promise.all([first, joined[0]]);
    expect(loads).toBe(2);
    expect(a).toMatchObject({ outcome: 'applied', added: ['s1'] });
    expect(b).toMatchObject({ outcome: 'applied', added: ['s2'], removed: ['s1'] });
    expect(engine.sinks).toEqual(['a', 's2']);
  });

  it('does nothing once shutdown began', async () => {
    let loads = 0;
    const { reloader: r } = reloader(load(sinks('a')), async (sink) => new ScriptedSink(sink.name, Date), {
      stopping: () => true,
    });
    expect(
      await r.request(async () => {
        loads++;
        return load(sinks('b'));
      }),
    ).toBeUndefined();
    expect(loads).toBe(0);
    expect(engine.sinks).toEqual(['a']);
  });

  it('stops the periodic sends before the sinks change and starts them again over the sinks that run afterwards', async () => {
    const calls: string[] = [];
    const { reloader: r } = reloader(load(sinks('a', 'b')), async (sink) => {
      calls.push(`build ${sink.name}`);
      return new ScriptedSink(sink.name, Date);
    });
    const periodic = {
      stop: async () => {
        calls.push(`stop (running: ${engine.sinks.join(',')})`);
      },
      start: (running: ReadonlyArray<{ config: SinkConfig; sink: { name: string } }>) => {
        calls.push(`start ${running.map((s) => `${s.config.name}=${s.sink.name}`).join(',')}`);
      },
    };
    // The test's reloader has no periodic sends: give it some through a second one over the same engine.
    const r2 = new Reloader(r.config, {
      engine,
      step: { reroute: () => {} },
      approval: { reconfigure: () => {} },
      store,
      buildSink: async (sink) => {
        calls.push(`build ${sink.name}`);
        return new ScriptedSink(sink.name, Date);
      },
      stopping: () => false,
      logger: silentLogger(),
      periodic,
    });
    expect(await r2.request(async () => load(sinks('a', 'c')))).toMatchObject({ outcome: 'applied' });
    expect(calls).toEqual(['build c', 'stop (running: a,b)', 'start a=a,c=c']);
    calls.length = 0;
    const approvalOnly = {
      ...sinks('a', 'c'),
      approval: { rules: [{ name: 'all', match: {}, action: 'approve' }] },
    };
    expect(await r2.request(async () => load(approvalOnly))).toMatchObject({
      outcome: 'applied',
      approval: true,
    });
    expect(calls).toEqual([]); // the sinks did not change: the periodic sends go on untouched
  });
});

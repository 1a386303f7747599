/**
 * Start-up footprint guard for the configuration: a sink type that is not configured costs nothing but its
 * module's source. Importing the sink registry builds no option schema (each is `lazy(...)`, src/lazy.ts, and
 * each factory exposes it through a getter), and validating a document builds the option schemas of the sink
 * types it configures only (sinkFactoriesFor). Checked by what is built and read, never by bytes or time.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, validateConfig } from '../../../src/config/index.ts';
import { sinkFactoriesFor } from '../../../src/config/schema.ts';
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import type { SinkFactory } from '../../../src/sinks/types.ts';
import { REPO } from '../../support/child.ts';

/** The registry with each factory's optionsSchema getter recording the types whose schema was read. */
function recordingFactories(): { factories: SinkFactory[]; read: Set<string> } {
  const read = new Set<string>();
  const factories = SINK_FACTORIES.map((factory) => {
    const copy = Object.create(factory) as SinkFactory;
    Object.defineProperty(copy, 'optionsSchema', {
      get() {
        read.add(factory.type);
        return factory.optionsSchema;
      },
    });
    return copy;
  });
  return { factories, read };
}

describe('sink option schemas are built only for configured sink types', () => {
  it('importing the sink registry builds no option schema; reading a factory optionsSchema builds it', () => {
    // Every option schema carries descriptions, and zod's describe() adds each described schema to
    // z.globalRegistry: counting those additions counts the schemas built while the registry loads.
    const registry = pathToFileURL(join(REPO, 'src', 'sinks', 'registry.ts')).href;
    const script = `
      import { z } from 'zod';
      let added = 0;
      const add = z.globalRegistry.add.bind(z.globalRegistry);
      z.globalRegistry.add = (...args) => { added++; return add(...args); };
      const { SINK_FACTORIES } = await import(${JSON.stringify(registry)});
      const atImport = added;
      SINK_FACTORIES.find((f) => f.type === 'webhook').optionsSchema;
      process.stdout.write(JSON.stringify({ types: SINK_FACTORIES.length, atImport, afterRead: added }));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    const counts = JSON.parse(child.stdout) as { types: number; atImport: number; afterRead: number };
    expect(counts.types).toBe(SINK_FACTORIES.length);
    expect(counts.atImport).toBe(0);
    expect(counts.afterRead).toBeGreaterThan(0);
  });

  it('validating a document reads the option schemas of the sink types it names, and no other', () => {
    const { factories, read } = recordingFactories();
    const config = validateConfig(
      {
        sinks: [
          { name: 'out', type: 'stdout' },
          { name: 'log', type: 'file', path: '/var/log/sef.jsonl' },
          { name: 'out2', type: 'stdout' },
        ],
      },
      { factories },
    );
    expect(config.sinks.map((s) => s.type)).toEqual(['stdout', 'file', 'stdout']);
    expect([...read].sort()).toEqual(['file', 'stdout']);
  });

  it('a document without sinks reads no option schema', () => {
    const { factories, read } = recordingFactories();
    expect(validateConfig({}, { factories }).sinks).toEqual([]);
    expect(validateConfig({ sinks: [] }, { factories }).sinks).toEqual([]);
    expect([...read]).toEqual([]);
  });

  it('an unknown sink type is reported against every registered type, as before', () => {
    const { factories } = recordingFactories();
    let error: unknown;
    try {
      validateConfig({ sinks: [{ name: 'x', type: 'carrier-pigeon' }] }, { factories });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    for (const factory of SINK_FACTORIES) expect(message).toContain(`"${factory.type}"`);
  });

  it('sinkFactoriesFor: the named types in registry order; every factory when an entry names none of them', () => {
    const types = (document: unknown) => sinkFactoriesFor(document, SINK_FACTORIES).map((f) => f.type);
    const all = SINK_FACTORIES.map((f) => f.type);
    expect(types({ sinks: [{ type: 'file' }, { type: 'stdout' }] })).toEqual(
      all.filter((t) => t === 'file' || t === 'stdout'),
    );
    expect(types({})).toEqual([]);
    expect(types({ sinks: [{ type: 'stdout' }, { name: 'no type' }] })).toEqual(all);
    expect(types({ sinks: [{ type: 'stdout' }, 'not a mapping'] })).toEqual(all);
    expect(types({ sinks: 'not a list' })).toEqual(all);
  });
});

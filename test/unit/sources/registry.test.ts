/**
 * The source registry (src/sources/registry.ts): its entries build the config's `source` section, existing
 * config files keep working, and each factory reports the gap limit and first-outcome wait the pipeline uses
 * (the pipeline no longer reads the IMDS poll settings itself).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, validateConfig } from '../../../src/config/index.ts';
import { createLogger } from '../../../src/log.ts';
import { findSourceFactory, SOURCE_FACTORIES } from '../../../src/sources/registry.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-source-registry-');
afterAll(() => tmp.cleanup());

describe('source registry', () => {
  it('lists imds and replay, found by type', () => {
    expect(SOURCE_FACTORIES.map((f) => f.type)).toEqual(['imds', 'replay']);
    expect(findSourceFactory('imds')?.type).toBe('imds');
    expect(findSourceFactory('replay')?.type).toBe('replay');
    expect(findSourceFactory('kafka')).toBeUndefined();
  });

  it('builds the source section: the default imds, a replay with its options, and rejects unknown types', () => {
    expect(validateConfig({}).source).toEqual({ type: 'imds' });
    const file = join(tmp.dir, 'capture.jsonl');
    writeFileSync(file, '');
    expect(validateConfig({ source: { type: 'replay', file } }).source).toEqual({
      type: 'replay',
      file,
      speed: 1,
    });
    expect(() => validateConfig({ source: { type: 'kafka' } })).toThrow(ConfigError);
    expect(() =>
      validateConfig({ source: { type: 'replay', file: join(tmp.dir, 'missing.jsonl') } }),
    ).toThrow(/cannot read the capture file/);
  });

  it('the imds source reports the gap limit and first-outcome wait from its own settings, and an approval client', async () => {
    const config = validateConfig({
      imds: { endpoint: 'http://127.0.0.1:9', pollIntervalMs: 500, requestTimeoutMs: 2000 },
    });
    const logger = createLogger({ level: 'silent' });
    const built = await findSourceFactory('imds')!.create(config.source, {
      logger,
      vm: () => undefined,
      settings: config,
    });
    try {
      expect(built.maxGapMs).toBe(2 * 500 + 2000);
      expect(built.firstOutcomeWaitMs).toBe(500);
      expect(built.approval?.minIntervalMs).toBe(500);
      expect(built.identity?.current()).toBeUndefined();
      expect(built.source.name).toBeTypeOf('string');
    } finally {
      built.close?.();
    }
  });

  it('each source reports its poll interval: the imds settings (a replay was recorded with them)', async () => {
    const file = join(tmp.dir, 'interval.jsonl');
    writeFileSync(file, '');
    const logger = createLogger({ level: 'silent' });
    const imds = { endpoint: 'http://127.0.0.1:9', pollIntervalMs: 700 };
    for (const source of [{ type: 'imds' }, { type: 'replay', file }]) {
      const config = validateConfig({ imds, source });
      const built = await findSourceFactory(source.type)!.create(config.source, {
        logger,
        vm: () => undefined,
        settings: config,
      });
      built.close?.();
      expect(built.pollIntervalMs, source.type).toBe(700);
    }
  });

  it('the replay source is its own identity source and has no approval client', async () => {
    const file = join(tmp.dir, 'empty.jsonl');
    writeFileSync(file, '');
    const config = validateConfig({ source: { type: 'replay', file } });
    const built = await findSourceFactory('replay')!.create(config.source, {
      logger: createLogger({ level: 'silent' }),
      vm: () => undefined,
      settings: config,
    });
    expect(built.approval).toBeUndefined();
    expect(built.identity?.current()).toBeUndefined();
    expect(built.maxGapMs).toBe(2 * config.imds.pollIntervalMs + config.imds.requestTimeoutMs);
  });
});

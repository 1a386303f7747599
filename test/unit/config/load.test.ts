import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadConfigForCli, redactConfig } from '../../../src/config/index.ts';
import { UsageError } from '../../../src/errors.ts';
import { Secret } from '../../../src/secret.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { FAKE_FACTORIES } from './fake-factories.ts';

const tmp = makeTempDir('sef-config-');
afterAll(() => tmp.cleanup());

function write(name: string, text: string): string {
  const file = join(tmp.dir, name);
  writeFileSync(file, text);
  return file;
}

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toBeInstanceOf(UsageError);
    return (error as ConfigError).problems.length > 0
      ? (error as ConfigError).problems
      : [(error as Error).message];
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies every default without a file', () => {
    const config = loadConfig({ factories: FAKE_FACTORIES });
    expect(config.imds).toEqual({
      endpoint: 'http://169.254.169.254',
      apiVersion: '2020-07-01',
      instanceApiVersion: '2021-02-01',
      pollIntervalMs: 1000,
      firstRequestTimeoutMs: 120_000,
      requestTimeoutMs: 5000,
      identityRefreshMs: 3_600_000,
    });
    expect(config.source).toEqual({ type: 'imds' });
    expect(config.shutdownDeadlineMs).toBe(5000);
    expect(config.telemetry.listen).toEqual({ enabled: false, host: '127.0.0.1', port: 9464 });
    expect(config.sinks).toEqual([]);
    expect(config.log.level).toBe('info');
  });

  it('normalises sinks into common keys plus options, with the factory default filter', () => {
    const file = write(
      'ok.yaml',
      `
stateDir: ${JSON.stringify(tmp.dir)}
sinks:
  - name: out
    type: stdout
  - name: alerts
    type: hook
    url: "\${HOOK_URL}"
    delivery: { maxBatch: 5, backoff: { maxMs: 1000 } }
`,
    );
    process.env.HOOK_URL = 'https://example.invalid/secret-token';
    const config = loadConfig({ file, factories: FAKE_FACTORIES });
    expect(config.stateDir).toBe(tmp.dir);
    expect(config.sinks[0]).toMatchObject({
      name: 'out',
      type: 'stdout',
      enabled: true,
      filter: { scope: 'all', eventTypes: [], transitions: expect.arrayContaining(['canceled', 'approved']) },
      options: {},
    });
    const hook = config.sinks[1]!;
    expect(hook.filter).toEqual({ scope: 'this-vm', transitions: ['scheduled', 'started'], eventTypes: [] });
    expect(hook.delivery).toEqual({
      maxBatch: 5,
      backoff: { initialMs: 1000, maxMs: 1000 },
      probe: { initialMs: 10_000, maxMs: 300_000 }, // a paused sink's probes: 10 s doubling to 5 min
      // no maxAgeHours: never expire by age; dead letters capped (docs/delivery.md, "Dead-letter cap")
      caps: {
        maxPendingRows: 100_000,
        maxPendingBytes: 64 * 1024 * 1024,
        maxDeadLetterRows: 10_000,
        maxDeadLetterBytes: 32 * 1024 * 1024,
      },
    });
    expect(hook.options.url).toBeInstanceOf(Secret);
    expect((hook.options.url as Secret).reveal()).toBe('https://example.invalid/secret-token');
    const shown = JSON.stringify(redactConfig(config).value);
    expect(shown).not.toContain('secret-token');
    expect(shown).toContain('[redacted: env HOOK_URL]');
  });

  it('CLI options override the file; --sink replaces the file sinks', () => {
    const file = write(
      'cli.yaml',
      'imds: { endpoint: "http://127.0.0.1:1", pollIntervalMs: 500 }\nsinks: [{ name: a, type: stdout }]\n',
    );
    const config = loadConfigForCli(
      {
        config: file,
        imdsEndpoint: 'http://127.0.0.1:2',
        pollInterval: '250',
        stateDir: tmp.dir,
        sink: ['stdout', 'file:/tmp/x.jsonl', 'file:/tmp/y.jsonl'],
        logLevel: 'debug',
        record: '/tmp/cap.jsonl',
      },
      { factories: FAKE_FACTORIES },
    );
    expect(config.imds.endpoint).toBe('http://127.0.0.1:2');
    expect(config.imds.pollIntervalMs).toBe(250);
    expect(config.imds.captureFile).toBe('/tmp/cap.jsonl');
    expect(config.log.level).toBe('debug');
    expect(config.sinks.map((s) => [s.name, s.type, s.options.path])).toEqual([
      ['stdout', 'stdout', undefined],
      ['file', 'file', '/tmp/x.jsonl'],
      ['file-2', 'file', '/tmp/y.jsonl'],
    ]);
  });

  it('names the CLI option that caused an error', () => {
    expect(
      problemsOf(() => loadConfigForCli({ pollInterval: '100' }, { factories: FAKE_FACTORIES })),
    ).toEqual(['imds.pollIntervalMs (from --poll-interval): expected a number >= 200, got 100']);
    expect(
      problemsOf(() => loadConfigForCli({ sink: ['kafka:x'] }, { factories: FAKE_FACTORIES }))[0],
    ).toMatch(/--sink #1 "kafka:x": expected "stdout" or "file:PATH"/);
    expect(problemsOf(() => loadConfigForCli({ replay: '' }, { factories: FAKE_FACTORIES }))).toEqual([
      'source.file (from --replay): expected at least 1 character(s)',
    ]);
  });

  it('reports unreadable files and YAML syntax errors clearly', () => {
    expect(problemsOf(() => loadConfig({ file: join(tmp.dir, 'missing.yaml') }))[0]).toMatch(
      /cannot read config file .*missing\.yaml: ENOENT/,
    );
    const bad = write('bad.yaml', 'imds:\n  endpoint: [\n');
    expect(problemsOf(() => loadConfig({ file: bad }))[0]).toMatch(/line \d+/);
    const dup = write('dup.yaml', 'stateDir: /a\nstateDir: /b\n');
    expect(problemsOf(() => loadConfig({ file: dup }))[0]).toMatch(/[Dd]uplicate|unique/);
    const list = write('list.yaml', '- a\n- b\n');
    expect(problemsOf(() => loadConfig({ file: list }))[0]).toMatch(/top level must be a mapping/);
  });
});

import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, validateConfig } from '../../../src/config/index.ts';
import { FAKE_FACTORIES } from './fake-factories.ts';

/** Each bad config → the exact problem lines (key path + what was expected). */
const BAD: Array<[string, string, string[]]> = [
  [
    'unknown top-level key',
    'stateDirr: /x',
    [
      'stateDirr: unknown key (allowed here: imds, source, stateDir, allowTemporaryDisk, log, telemetry, heartbeat, shutdownDeadlineMs, sinks, approval, kubernetes)',
    ],
  ],
  [
    'unknown imds key',
    'imds: { pollInterval: 1000 }',
    [
      'imds.pollInterval: unknown key (allowed here: endpoint, apiVersion, instanceApiVersion, pollIntervalMs, firstRequestTimeoutMs, requestTimeoutMs, identityRefreshMs, captureFile)',
    ],
  ],
  [
    'poll interval too small',
    'imds: { pollIntervalMs: 50 }',
    ['imds.pollIntervalMs: expected a number >= 200, got 50'],
  ],
  [
    'poll interval not a number',
    'imds: { pollIntervalMs: fast }',
    ['imds.pollIntervalMs: expected a number, got a string'],
  ],
  [
    'endpoint not a URL',
    'imds: { endpoint: "169.254.169.254" }',
    ['imds.endpoint: expected an http:// or https:// URL'],
  ],
  [
    'bad log level',
    'log: { level: verbose }',
    [
      'log.level: expected one of "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent", got "verbose"',
    ],
  ],
  [
    'bad source type',
    'source: { type: kafka }',
    ['source.type: expected one of "imds" | "replay", got "kafka"'],
  ],
  ['replay without file', 'source: { type: replay }', ['source.file: required (expected a string)']],
  [
    'telemetry port out of range',
    'telemetry: { listen: { port: 70000 } }',
    ['telemetry.listen.port: expected a number <= 65535, got 70000'],
  ],
  [
    'shutdown deadline negative',
    'shutdownDeadlineMs: -1',
    ['shutdownDeadlineMs: expected a number > 0, got -1'],
  ],
  [
    'allowTemporaryDisk string',
    'allowTemporaryDisk: "yes please"',
    ['allowTemporaryDisk: expected true or false, got a string'],
  ],
  ['sinks not a list', 'sinks: { name: a }', ['sinks: expected a list, got a mapping']],
  [
    'sink without type',
    'sinks: [{ name: a }]',
    ['sinks[0].type: required (expected one of "stdout" | "file" | "hook")'],
  ],
  [
    'unknown sink type',
    'sinks: [{ name: a, type: kafka }]',
    ['sinks[0].type: expected one of "stdout" | "file" | "hook", got "kafka"'],
  ],
  ['sink without name', 'sinks: [{ type: stdout }]', ['sinks[0].name: required (expected a string)']],
  [
    'bad sink name',
    'sinks: [{ name: "a b", type: stdout }]',
    ['sinks[0].name: expected letters, digits, "_", "." or "-", starting with a letter or digit, at most 64'],
  ],
  [
    'duplicate sink name',
    'sinks: [{ name: a, type: stdout }, { name: a, type: stdout }]',
    ['sinks[1].name: duplicate sink name "a" (already used by sinks[0]); names must be unique'],
  ],
  [
    'unknown sink option',
    'sinks: [{ name: a, type: file, path: /x, rotate: true }]',
    [
      'sinks[0].rotate: unknown key (allowed here: name, type, enabled, filter, delivery, heartbeats, path, maxBytes)',
    ],
  ],
  [
    'heartbeats on a sink type that never receives them',
    'sinks: [{ name: a, type: hook, url: https://example.invalid/x, heartbeats: true }]',
    ['sinks[0].heartbeats: hook sinks never receive heartbeats; they go to file sinks'],
  ],
  [
    'heartbeats not a boolean',
    'sinks: [{ name: a, type: file, path: /x, heartbeats: sometimes }]',
    ['sinks[0].heartbeats: expected true or false, got a string'],
  ],
  [
    'missing sink option',
    'sinks: [{ name: a, type: file }]',
    ['sinks[0].path: required (expected a string)'],
  ],
  [
    'bad filter transition',
    'sinks: [{ name: a, type: stdout, filter: { transitions: [finished] } }]',
    [
      'sinks[0].filter.transitions[0]: expected one of "scheduled" | "started" | "completed" | "canceled" | "updated" | "approved", got "finished"',
    ],
  ],
  [
    'empty filter transitions',
    'sinks: [{ name: a, type: stdout, filter: { transitions: [] } }]',
    ['sinks[0].filter.transitions: expected at least 1 item(s)'],
  ],
  [
    'bad filter scope',
    'sinks: [{ name: a, type: stdout, filter: { scope: mine } }]',
    ['sinks[0].filter.scope: expected one of "this-vm" | "all", got "mine"'],
  ],
  [
    'unknown delivery key',
    'sinks: [{ name: a, type: stdout, delivery: { retries: 3 } }]',
    ['sinks[0].delivery.retries: unknown key (allowed here: maxBatch, backoff, probe, caps)'],
  ],
  [
    'bad backoff cap',
    'sinks: [{ name: a, type: stdout, delivery: { backoff: { maxMs: 0 } } }]',
    ['sinks[0].delivery.backoff.maxMs: expected a number > 0, got 0'],
  ],
  [
    'secret env not set',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config syntax for an environment secret
    'sinks: [{ name: a, type: hook, url: "${SEF_TEST_UNSET_VARIABLE}" }]',
    [
      'sinks[0].url: environment variable SEF_TEST_UNSET_VARIABLE (referenced as a secret) is not set or empty',
    ],
  ],
  [
    'secret wrong shape',
    'sinks: [{ name: a, type: hook, url: { vault: x } }]',
    [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal ${ENV} secret syntax
      'sinks[0].url: expected a secret: "${ENV_VAR}", { env: NAME }, { file: PATH } or an inline string, got a mapping',
    ],
  ],
];

describe('bad configs', () => {
  it.each(BAD)('%s', (_label, yaml, expected) => {
    let error: unknown;
    try {
      validateConfig(parse(yaml) as Record<string, unknown>, { factories: FAKE_FACTORIES });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(expected);
  });

  it('reports every problem at once', () => {
    let error: unknown;
    try {
      validateConfig(
        { imds: { pollIntervalMs: 1 }, log: { level: 'x' }, extra: 1 },
        { factories: FAKE_FACTORIES },
      );
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).problems).toHaveLength(3);
    expect((error as ConfigError).message).toMatch(/^invalid configuration:\n {2}/);
  });
});

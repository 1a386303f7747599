/**
 * Where `run` sends its first Scheduled Events GET before the rest of the program loads (src/cli/first-poll.ts):
 * table-driven over the arguments and the config file's sections; undefined whenever the target is not certain,
 * so nothing is sent early to a place the validated configuration would not poll.
 */
import { describe, expect, it } from 'vitest';
import { type FirstPollTarget, firstPollTarget } from '../../../src/cli/first-poll.ts';

const files: Record<string, Record<string, unknown>> = {
  'plain.yaml': { sinks: [{ name: 'out', type: 'stdout' }] },
  'imds.yaml': { imds: { endpoint: 'http://127.0.0.1:8080', apiVersion: '2019-08-01' } },
  'imds-source.yaml': { source: { type: 'imds' }, imds: { endpoint: 'http://127.0.0.1:8081' } },
  'replay.yaml': { source: { type: 'replay', file: 'capture.jsonl' } },
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's literal ${ENV} syntax
  'env.yaml': { imds: { endpoint: '${IMDS_URL}' } },
  'odd.yaml': { imds: { endpoint: 42 } },
  'list.yaml': { imds: ['x'] },
};
const readConfig = (file: string): Record<string, unknown> => {
  const raw = files[file];
  if (raw === undefined) throw new Error(`cannot read config file ${file}: ENOENT`);
  return raw;
};

const cases: Array<[string, string[], FirstPollTarget | undefined]> = [
  ['no arguments: the defaults', [], {}],
  ['--sink only: the defaults', ['--sink', 'stdout'], {}],
  ['--imds-endpoint URL', ['--imds-endpoint', 'http://127.0.0.1:1'], { endpoint: 'http://127.0.0.1:1' }],
  ['--imds-endpoint=URL', ['--imds-endpoint=http://127.0.0.1:1'], { endpoint: 'http://127.0.0.1:1' }],
  [
    'endpoint and api-version flags among others',
    [
      '--state-dir',
      '/x',
      '--imds-endpoint',
      'http://127.0.0.1:1',
      '--api-version',
      '2019-08-01',
      '--sink',
      'stdout',
    ],
    { endpoint: 'http://127.0.0.1:1', apiVersion: '2019-08-01' },
  ],
  ['a config file without imds or source: the defaults', ['--config', 'plain.yaml'], {}],
  [
    'the config file imds section',
    ['--config', 'imds.yaml'],
    { endpoint: 'http://127.0.0.1:8080', apiVersion: '2019-08-01' },
  ],
  [
    'a flag overrides the file',
    ['--config', 'imds.yaml', '--imds-endpoint', 'http://127.0.0.1:2'],
    { endpoint: 'http://127.0.0.1:2', apiVersion: '2019-08-01' },
  ],
  ['source type imds in the file', ['--config', 'imds-source.yaml'], { endpoint: 'http://127.0.0.1:8081' }],
  ['--replay: no IMDS', ['--replay', 'capture.jsonl'], undefined],
  ['source type replay in the file: no IMDS', ['--config', 'replay.yaml'], undefined],
  ['a value from the environment: left to the loader', ['--config', 'env.yaml'], undefined],
  ['a non-string endpoint in the file', ['--config', 'odd.yaml'], undefined],
  ['an imds section that is not a mapping', ['--config', 'list.yaml'], undefined],
  ['an unreadable file', ['--config', 'missing.yaml'], undefined],
  ['--config without a value', ['--config'], undefined],
  ['--help', ['--help'], undefined],
  ['-h', ['-h'], undefined],
];

describe('firstPollTarget', () => {
  it.each(cases)('%s', (_label, args, expected) => {
    expect(firstPollTarget(args, readConfig)).toEqual(expected);
  });
});

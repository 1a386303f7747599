/**
 * `config validate` and `config show` as real child processes, next to `run`, `demo` and `simulate`: one
 * validation path (what `run` refuses before it uses the network, `validate` refuses), exit code 2 for every
 * configuration error, every problem of a file at once, `--config`, `--allow-missing-secrets`, and the effective
 * configuration (docs/cli.md).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfigForCli } from '../../../src/config/index.ts';
import { silentLogger } from '../../../src/log.ts';
import { Forwarder } from '../../../src/pipeline/index.ts';
import { SINK_FACTORIES } from '../../../src/sinks/registry.ts';
import type { SinkFactory } from '../../../src/sinks/types.ts';
import { runCli } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-config-cli-');
afterAll(() => tmp.cleanup());

let counter = 0;
function configFile(yaml: string): string {
  const file = join(tmp.dir, `config-${++counter}.yaml`);
  writeFileSync(file, `stateDir: ${JSON.stringify(join(tmp.dir, `state-${counter}`))}\n${yaml}`);
  return file;
}

/** `run` against a closed loopback port: a configuration error ends it before any request. */
const runArgs = (file: string) => ['run', '--config', file, '--imds-endpoint', 'http://127.0.0.1:9'];

describe('one validation path: config validate refuses what run refuses, both exit 2', () => {
  it.each([
    ['webhook', 'htp//example.invalid/hook', /sinks\[0\]\.url: url \(inline\) is not a valid URL/],
    ['slack', 'not a url at all', /sinks\[0\]\.url: url \(inline\) is not a valid URL/],
    [
      'teams',
      'ftp://example.invalid/x',
      /sinks\[0\]\.url: url \(inline\) must be an http:\/\/ or https:\/\/ URL/,
    ],
  ])('a %s sink with url %j', async (type, url, pattern) => {
    const file = configFile(`sinks:\n  - { name: s, type: ${type}, url: ${JSON.stringify(url)} }\n`);
    const validate = await runCli(['config', 'validate', file]);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toMatch(pattern);
    expect(validate.stderr).not.toContain('example.invalid'); // the URL is a secret: never echoed
    const run = await runCli(runArgs(file));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(pattern);
  });

  it('refuses a state directory on the temporary disk in validate and in run, creating nothing', async () => {
    const file = join(tmp.dir, 'temporary-disk.yaml');
    writeFileSync(
      file,
      'stateDir: /mnt/resource/sef-config-cli-test\nsinks: [{ name: out, type: stdout }]\n',
    );
    const validate = await runCli(['config', 'validate', file]);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toMatch(/stateDir: \/mnt\/resource is the Azure temporary disk/);
    expect(validate.stderr).toMatch(/allowTemporaryDisk: true \(--allow-temporary-disk\)/);
    const run = await runCli([...runArgs(file)]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/stateDir: \/mnt\/resource is the Azure temporary disk/);
    const flag = await runCli([
      'run',
      '--state-dir',
      '/mnt/sef-config-cli-test',
      '--imds-endpoint',
      'http://127.0.0.1:9',
    ]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/stateDir \(from --state-dir\): \/mnt is the Azure temporary disk/);
    expect(existsSync('/mnt/resource/sef-config-cli-test')).toBe(false);
    expect(existsSync('/mnt/sef-config-cli-test')).toBe(false);
  });

  it('checks Slack/Teams templates, signing secrets, reserved headers, the replay capture and OTEL_* variables', async () => {
    const file = configFile(
      [
        'sinks:',
        `  - { name: chat, type: teams, url: "https://example.invalid/x", template: ${JSON.stringify(join(tmp.dir, 'missing.json'))} }`,
        '  - { name: hook, type: webhook, url: "https://example.invalid/x", signingSecrets: ["nope"], headers: { Webhook-Id: x } }',
        '  - { name: logs, type: otel }',
        `source: { type: replay, file: ${JSON.stringify(join(tmp.dir, 'missing.jsonl'))} }`,
        '',
      ].join('\n'),
    );
    const env = { OTEL_EXPORTER_OTLP_PROTOCOL: 'carrier-pigeon' };
    for (const args of [['config', 'validate', file], runArgs(file)]) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/sinks\[0\]\.template: cannot read template .*missing\.json: ENOENT/);
      expect(result.stderr).toMatch(
        /sinks\[1\]\.signingSecrets\[0\]: signing secret \(inline\) must be a Standard Webhooks secret/,
      );
      expect(result.stderr).toMatch(
        /sinks\[1\]\.headers\["Webhook-Id"\]: header Webhook-Id is set by the sink/,
      );
      expect(result.stderr).toMatch(/sinks\[2\]: OTEL_EXPORTER_OTLP_PROTOCOL="carrier-pigeon" is not one of/);
      expect(result.stderr).toMatch(/source\.file: cannot read the capture file .*missing\.jsonl: ENOENT/);
    }
  });

  it('a sink that cannot be built at run is a configuration error (exit 2), not a crash', async () => {
    const failing: SinkFactory = {
      type: 'stdout',
      description: 'fails to build',
      optionsSchema: (await import('zod')).z.object({}).strict(),
      create: () => {
        throw new Error('sink out: cannot work with these options');
      },
    };
    const config = loadConfigForCli({
      stateDir: join(tmp.dir, 'state-build'),
      sink: ['stdout'],
      imdsEndpoint: 'http://127.0.0.1:9',
    });
    const forwarder = new Forwarder({ config, logger: silentLogger(), findFactory: () => failing });
    const error = await forwarder.run(new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe('sink out: cannot work with these options');
  });

  it('demo and simulate both exit 2 for an unknown scenario', async () => {
    for (const command of ['demo', 'simulate']) {
      const result = await runCli([command, '--scenario', 'nosuch']);
      expect(result.code, command).toBe(2);
      expect(result.stderr).toMatch(/scenario "nosuch" not found .*known scenarios: /);
    }
  });
});

describe('config validate messages', () => {
  it('says "required" for a missing field and reports every problem at once, duplicate names included', async () => {
    const file = configFile(
      [
        'imds: { pollIntervalMs: 10 }',
        'sinks:',
        '  - { name: a, type: webhook }',
        '  - { name: a, type: stdout }',
        '  - { name: b, type: kafka }',
        '',
      ].join('\n'),
    );
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(2);
    const problems = result.stderr
      .split('\n')
      .filter((l) => l.startsWith('  '))
      .map((l) => l.trim());
    expect(problems).toEqual([
      'imds.pollIntervalMs: expected a number >= 200, got 10',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal ${ENV} secret syntax
      'sinks[0].url: required (expected a secret: "${ENV_VAR}", { env: NAME }, { file: PATH } or an inline string)',
      `sinks[2].type: expected one of ${SINK_FACTORIES.map((f) => `"${f.type}"`).join(' | ')}, got "kafka"`,
      'sinks[1].name: duplicate sink name "a" (already used by sinks[0]); names must be unique',
    ]);
    expect(result.stderr).not.toMatch(/got a undefined|a mapping or a mapping/);
  });

  it('takes the file as an argument or with --config, and exits 2 without one', async () => {
    const file = configFile('sinks: [{ name: out, type: stdout }]\n');
    for (const args of [
      ['config', 'validate', file],
      ['config', 'validate', '--config', file],
    ]) {
      const result = await runCli(args);
      expect(result.code, args.join(' ')).toBe(0);
      expect(result.stdout).toBe(`ok: ${file} is valid; sinks: out (stdout)\n`);
    }
    const none = await runCli(['config', 'validate']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/config validate needs a file/);
  });
});

describe('config validate --allow-missing-secrets', () => {
  const yaml = [
    'sinks:',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal ${ENV} secret syntax
    '  - { name: hub, type: eventhubs, connectionString: "${SEF_TEST_MISSING_EH}" }',
    '  - { name: hook, type: webhook, url: { env: SEF_TEST_MISSING_HOOK } }',
    `  - { name: chat, type: slack, url: { file: ${JSON.stringify(join(tmp.dir, 'no-such-secret'))} } }`,
    '',
  ].join('\n');

  it('without it, unset secrets fail with a hint; with it, they are listed and the file is valid', async () => {
    const file = configFile(yaml);
    const strict = await runCli(['config', 'validate', file]);
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(
      /sinks\[0\]\.connectionString: environment variable SEF_TEST_MISSING_EH .* not set/,
    );
    expect(strict.stderr).toMatch(/hint: .* add --allow-missing-secrets/);

    const lenient = await runCli(['config', 'validate', '--allow-missing-secrets', file]);
    expect(lenient.code).toBe(0);
    expect(lenient.stdout.split('\n')).toEqual([
      `ok: ${file} is valid with 1 warning (on stderr); sinks: hub (eventhubs), hook (webhook), chat (slack)`,
      'not checked: sinks[0].connectionString (env SEF_TEST_MISSING_EH): environment variable SEF_TEST_MISSING_EH (referenced as a secret) is not set or empty; only its form was checked',
      'not checked: sinks[1].url (env SEF_TEST_MISSING_HOOK): environment variable SEF_TEST_MISSING_HOOK (referenced as a secret) is not set or empty; only its form was checked',
      `not checked: sinks[2].url (file ${join(tmp.dir, 'no-such-secret')}): cannot read secret file ${join(tmp.dir, 'no-such-secret')}: ENOENT; only its form was checked`,
      '',
    ]);
  });

  it('still checks the form of every reference, and the value of every secret that is available', async () => {
    const file = configFile(yaml.replace('url: { env: SEF_TEST_MISSING_HOOK }', 'url: { vault: x }'));
    const badForm = await runCli(['config', 'validate', '--allow-missing-secrets', file]);
    expect(badForm.code).toBe(2);
    expect(badForm.stderr).toMatch(/sinks\[1\]\.url: expected a secret: .*got a mapping/);

    const available = await runCli(['config', 'validate', '--allow-missing-secrets', configFile(yaml)], {
      SEF_TEST_MISSING_HOOK: 'ftp://example.invalid/hook',
      SEF_TEST_MISSING_EH: 'garbage-not-a-connection-string',
    });
    expect(available.code).toBe(2);
    expect(available.stderr).toMatch(/sinks\[1\]\.url: url \(env SEF_TEST_MISSING_HOOK\) must be an http/);
    expect(available.stderr).toMatch(
      /sinks\[0\]\.connectionString: connection string from env SEF_TEST_MISSING_EH is not a valid/,
    );
    expect(available.stderr).not.toContain('example.invalid');
    expect(available.stderr).not.toContain('garbage');
  });
});

describe('config show', () => {
  it('without a file shows what run uses: the defaults and the stdout sink', async () => {
    const result = await runCli(['config', 'show', '--state-dir', join(tmp.dir, 'state-show')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^# effective configuration \(defaults; no --config\)/);
    expect(result.stdout).toMatch(/^sinks:\n {2}- name: stdout\n {4}type: stdout\n {4}enabled: true$/m);
    expect(result.stdout).not.toMatch(/^sinks: \[\]$/m);
  });

  it('has no --redacted flag: secrets are always redacted', async () => {
    const result = await runCli(['config', 'show', '--redacted']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown option '--redacted'/);
  });
});

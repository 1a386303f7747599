/**
 * The forwarder configs embedded in the packaging examples (cloud-init, the AKS DaemonSet) pass the real
 * schema, and the example wiring agrees with the CLI: config paths, state directory, health port, user ids.
 * The systemd unit and install.sh agree on paths, and install.sh writes a config whose state lives in the
 * unit's StateDirectory (run with stand-ins for npm and systemctl; the real package install is covered by
 * test/integration/packaging/npm-package.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { type Config, loadConfig } from '../../../src/config/index.ts';
import { buildConfigSchema } from '../../../src/config/schema.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { argValue, parseEnvFile, parseYamlStrict, REPO } from './compose-files.ts';

const tmp = makeTempDir('sef-deploy-');
afterAll(() => tmp.cleanup());
afterEach(() => vi.unstubAllEnvs());

const LINUX_STATE_DIR = '/var/lib/scheduled-events-forwarder';
const CONFIG_PATH = '/etc/scheduled-events-forwarder/forwarder.yaml';

let counter = 0;
/** Validates YAML text with loadConfig (written to a temp file) with `env` as the process environment. */
function validate(yamlText: string, env: Record<string, string> = {}): Config {
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
  const file = join(tmp.dir, `config-${++counter}.yaml`);
  writeFileSync(file, yamlText);
  return loadConfig({ file });
}

/** The stateDir the schema gives on Linux (the examples run on Linux VMs and AKS Linux nodes). */
function linuxStateDir(yamlText: string, env: Record<string, string> = {}): string {
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
  const raw = parseYamlStrict(yamlText, 'config') as Record<string, unknown>;
  return buildConfigSchema({ platform: 'linux', env: {} }).parse(raw).stateDir;
}

describe('packaging/cloud-init/cloud-init.yaml', () => {
  const cloudInit = readFileSync(join(REPO, 'packaging', 'cloud-init', 'cloud-init.yaml'), 'utf8');
  const doc = parseYamlStrict(cloudInit, 'cloud-init.yaml') as {
    write_files: Array<{ path: string; permissions: string; content: string }>;
    runcmd: string[];
  };
  const file = (path: string) => doc.write_files.find((f) => f.path === path);

  it('is a #cloud-config document', () => {
    expect(cloudInit.startsWith('#cloud-config\n')).toBe(true);
  });

  it('writes a forwarder config that validates with the secrets it writes to secrets.env', () => {
    const config = file(CONFIG_PATH);
    const secrets = file('/etc/scheduled-events-forwarder/secrets.env');
    expect(config).toBeDefined();
    expect(secrets?.permissions).toBe('0600');
    const env = parseEnvFile(secrets!.content);
    const loaded = validate(config!.content, env);
    expect(loaded.sinks.length).toBeGreaterThan(0);
    expect(linuxStateDir(config!.content, env)).toBe(LINUX_STATE_DIR);
    // Without secrets.env the config is invalid: the secrets really come from that file.
    for (const key of Object.keys(env)) vi.stubEnv(key, '');
    expect(() => loadConfig({ file: join(tmp.dir, `config-${counter}.yaml`) })).toThrow(
      new RegExp(Object.keys(env)[0]!),
    );
  });

  it('installs Node 24 and runs install.sh from the package', () => {
    expect(doc.runcmd.join('\n')).toMatch(/setup_24\.x/);
    expect(doc.runcmd.some((c) => c.includes('package/packaging/linux/install.sh'))).toBe(true);
  });
});

describe('packaging/kubernetes/daemonset.yaml', () => {
  const docs = readFileSync(join(REPO, 'packaging', 'kubernetes', 'daemonset.yaml'), 'utf8')
    .split(/^---$/m)
    .map((text, i) => parseYamlStrict(text, `daemonset.yaml document ${i}`) as { kind: string });
  const byKind = (kind: string) => docs.find((d) => d.kind === kind) as never;
  const configMap = byKind('ConfigMap') as { metadata: { name: string }; data: Record<string, string> };
  const daemonSet = byKind('DaemonSet') as {
    spec: {
      template: {
        spec: {
          hostNetwork: boolean;
          securityContext: { runAsUser: number; runAsNonRoot: boolean };
          containers: Array<{
            args: string[];
            livenessProbe: { httpGet: { path: string; port: number; host: string } };
            volumeMounts: Array<{ name: string; mountPath: string }>;
          }>;
          volumes: Array<{ name: string; configMap?: { name: string }; hostPath?: { path: string } }>;
        };
      };
    };
  };
  const pod = daemonSet.spec.template.spec;
  const container = pod.containers[0]!;
  const mountOf = (volume: string) => container.volumeMounts.find((m) => m.name === volume)!.mountPath;
  const volume = (name: string) => pod.volumes.find((v) => v.name === name)!;

  it('embeds a forwarder config that validates with the real schema', () => {
    const config = validate(configMap.data['forwarder.yaml']!);
    expect(config.sinks.map((s) => s.type)).toContain('eventhubs');
  });

  it('runs the ConfigMap file at the path its args name', () => {
    const configPath = argValue(container.args, '--config')!;
    expect(container.args[0]).toBe('run');
    const configVolume = volume('config');
    expect(configVolume.configMap?.name).toBe(configMap.metadata.name);
    expect(configPath).toBe(`${mountOf('config')}/forwarder.yaml`);
    expect(Object.keys(configMap.data)).toContain('forwarder.yaml');
  });

  it('keeps state on the node (hostPath) at the stateDir the config resolves to', () => {
    const stateDir = linuxStateDir(configMap.data['forwarder.yaml']!);
    expect(mountOf('state')).toBe(stateDir);
    expect(volume('state').hostPath?.path).toBe(LINUX_STATE_DIR);
  });

  it('probes the health endpoint the config enables, on the host network (IMDS answers only the node)', () => {
    const config = validate(configMap.data['forwarder.yaml']!);
    expect(pod.hostNetwork).toBe(true);
    expect(config.telemetry.listen.enabled).toBe(true);
    expect(container.livenessProbe.httpGet).toMatchObject({
      path: '/healthz',
      port: config.telemetry.listen.port,
      host: config.telemetry.listen.host,
    });
  });

  it('runs as the image user (sef, uid 10001), never root', () => {
    expect(pod.securityContext).toMatchObject({ runAsUser: 10001, runAsNonRoot: true });
    const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^USER sef$/m);
    expect(dockerfile).toMatch(/useradd --system --uid 10001 /);
  });
});

describe('systemd unit and install.sh', () => {
  const unit = readFileSync(join(REPO, 'packaging', 'systemd', 'scheduled-events-forwarder.service'), 'utf8');
  const directive = (name: string) =>
    unit
      .split('\n')
      .filter((l) => l.startsWith(`${name}=`))
      .map((l) => l.slice(name.length + 1));

  it('runs the installed CLI with the config in ConfigurationDirectory and writes only StateDirectory', () => {
    const exec = directive('ExecStart')[0]!.split(' ');
    expect(exec).toContain(
      '/opt/scheduled-events-forwarder/node_modules/scheduled-events-forwarder/dist/cli/main.js',
    );
    expect(argValue(exec, '--config')).toBe(CONFIG_PATH);
    expect(directive('ConfigurationDirectory')).toEqual(['scheduled-events-forwarder']);
    expect(directive('StateDirectory')).toEqual(['scheduled-events-forwarder']);
    expect(directive('WorkingDirectory')).toEqual([LINUX_STATE_DIR]);
    expect(directive('ProtectSystem')).toEqual(['strict']);
    expect(directive('EnvironmentFile')).toEqual(['-/etc/scheduled-events-forwarder/secrets.env']);
  });

  it('reloads with SIGHUP (`systemctl reload`: run re-reads the config; test/integration/pipeline/reload.test.ts)', () => {
    expect(directive('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
  });

  it('install.sh writes the example config with its state in the StateDirectory and validates it with secrets.env', () => {
    // Stand-ins: npm "installs" a package whose entry point is this checkout's CLI; systemctl logs its arguments.
    const dest = join(tmp.dir, 'root');
    const fakePkg = join(tmp.dir, 'fake-package');
    mkdirSync(join(fakePkg, 'dist', 'cli'), { recursive: true });
    mkdirSync(join(fakePkg, 'config'), { recursive: true });
    // Node runs the symlink's target (the TypeScript CLI of this checkout), as if it were the built file.
    symlinkSync(join(REPO, 'src', 'cli', 'main.ts'), join(fakePkg, 'dist', 'cli', 'main.js'));
    writeFileSync(join(fakePkg, 'package.json'), '{"name":"scheduled-events-forwarder","type":"module"}\n');
    symlinkSync(
      join(REPO, 'config', 'forwarder.example.yaml'),
      join(fakePkg, 'config', 'forwarder.example.yaml'),
    );
    const npm = join(tmp.dir, 'npm');
    writeFileSync(
      npm,
      `#!/bin/sh\nmkdir -p node_modules && ln -sfn '${fakePkg}' node_modules/scheduled-events-forwarder\n`,
    );
    chmodSync(npm, 0o755);
    const systemctl = systemctlStub(join(tmp.dir, 'npm-install-systemctl'));
    // A secret referenced by the config must come from secrets.env (not from this process's environment).
    const configDir = join(dest, 'etc', 'scheduled-events-forwarder');
    mkdirSync(configDir, { recursive: true });
    writeFileSync(
      join(configDir, 'secrets.env'),
      '# test\nSEF_TEST_HOOK="https://hooks.example.invalid/a?b=1&c=2"\n',
    );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DESTDIR: dest,
      NPM: npm,
      SYSTEMCTL: systemctl.path,
      NODE: process.execPath,
    };
    delete env.SEF_TEST_HOOK;
    const install = (environment: NodeJS.ProcessEnv) =>
      run('bash', [join(REPO, 'packaging', 'linux', 'install.sh'), 'fake.tgz'], environment);
    const first = install(env);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain('ok: ');
    expect(first.stdout).toContain(
      'install: enabled and started; status: systemctl status scheduled-events-forwarder',
    );
    expect(systemctl.calls()).toEqual(['daemon-reload', 'enable --now scheduled-events-forwarder']);

    const written = readFileSync(join(configDir, 'forwarder.yaml'), 'utf8');
    expect(written).not.toContain('./state');
    const config = validate(written);
    expect(config.stateDir).toBe(LINUX_STATE_DIR);
    for (const sink of config.sinks.filter((s) => s.type === 'file')) {
      expect(String(sink.options.path).startsWith(`${LINUX_STATE_DIR}/`)).toBe(true);
    }

    // The same install with a config that needs the secret: validation sees secrets.env, and its warnings show.
    writeFileSync(
      join(configDir, 'forwarder.yaml'),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's ${ENV} secret syntax
      'sinks:\n  - name: hook\n    type: webhook\n    url: "${SEF_TEST_HOOK}"\n',
    );
    const withSecret = install(env);
    expect(withSecret.status, withSecret.stderr).toBe(0);
    expect(withSecret.stdout).toContain('sinks: hook (webhook)');
    expect(withSecret.stderr).toContain('warning: sink hook: no signingSecrets configured');

    // DESTDIR alone (an image being built): systemd is not touched, and the script does not claim it runs.
    const onPath = systemctlStub(join(tmp.dir, 'npm-install-path'), 'systemctl');
    const { SYSTEMCTL: _given, ...withoutSystemctl } = env;
    const image = install({ ...withoutSystemctl, PATH: `${onPath.dir}:${process.env.PATH ?? ''}` });
    expect(image.status, image.stderr).toBe(0);
    expect(image.stdout).toContain(
      `install: installed under ${dest}; systemd was not touched (DESTDIR without SYSTEMCTL): on the system ` +
        'that uses this root, run: systemctl enable --now scheduled-events-forwarder',
    );
    expect(image.stdout).not.toMatch(/running|started/);
    expect(onPath.calls()).toEqual([]);
  }, 60_000);
});

describe("the release archive's install.sh", () => {
  /** An unpacked release archive whose "executable" runs this checkout's CLI. */
  function archive(): string {
    const dir = join(tmp.dir, 'release-archive');
    mkdirSync(dir, { recursive: true });
    const executable = join(dir, 'scheduled-events-forwarder');
    writeFileSync(
      executable,
      `#!/bin/sh\nexec '${process.execPath}' '${join(REPO, 'src', 'cli', 'main.ts')}' "$@"\n`,
    );
    chmodSync(executable, 0o755);
    symlinkSync(join(REPO, 'config', 'forwarder.example.yaml'), join(dir, 'forwarder.example.yaml'));
    symlinkSync(
      join(REPO, 'packaging', 'systemd', 'scheduled-events-forwarder.service'),
      join(dir, 'scheduled-events-forwarder.service'),
    );
    symlinkSync(join(REPO, 'packaging', 'release', 'install.sh'), join(dir, 'install.sh'));
    return dir;
  }

  it('with DESTDIR alone leaves systemd alone and says so; with SYSTEMCTL too it enables and restarts the unit', () => {
    const dir = archive();
    const dest = join(tmp.dir, 'release-root');
    const onPath = systemctlStub(join(tmp.dir, 'release-path'), 'systemctl');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DESTDIR: dest,
      PATH: `${onPath.dir}:${process.env.PATH ?? ''}`,
    };
    delete env.SYSTEMCTL;
    const image = run('sh', [join(dir, 'install.sh')], env);
    expect(image.status, image.stderr).toBe(0);
    expect(image.stdout).toContain(
      `install: installed under ${dest}; systemd was not touched (DESTDIR without SYSTEMCTL)`,
    );
    expect(image.stdout).not.toMatch(/running|started/);
    const uninstall = run('sh', [join(dir, 'install.sh'), '--uninstall'], env);
    expect(uninstall.status, uninstall.stderr).toBe(0);
    expect(onPath.calls()).toEqual([]);

    const given = systemctlStub(join(tmp.dir, 'release-given'));
    const service = run('sh', [join(dir, 'install.sh')], { ...env, SYSTEMCTL: given.path });
    expect(service.status, service.stderr).toBe(0);
    expect(service.stdout).toContain(
      'install: enabled and started; status: systemctl status scheduled-events-forwarder; logs: journalctl -u scheduled-events-forwarder -f',
    );
    expect(given.calls()).toEqual([
      'daemon-reload',
      'enable scheduled-events-forwarder',
      'restart scheduled-events-forwarder',
    ]);
    expect(onPath.calls()).toEqual([]);
  }, 60_000);
});

/** A systemctl stand-in in `dir` (file `name`) that logs its arguments, one call per line. */
function systemctlStub(
  dir: string,
  name = 'systemctl-stub',
): { dir: string; path: string; calls(): string[] } {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  writeFileSync(path, `#!/bin/sh\necho "$*" >> '${log}'\n`);
  chmodSync(path, 0o755);
  return {
    dir,
    path,
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

/** Runs a script to its end with its output captured (none of it reaches the test run's output). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const result = spawnSync(command, args, { env, encoding: 'utf8', timeout: 50_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

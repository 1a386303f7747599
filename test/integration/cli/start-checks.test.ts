/**
 * `config validate` as a gate before a restart (docs/cli.md): every refusal `run` makes before its first poll
 * without the network is also a `validate` refusal, with the same lines (src/pipeline/start-checks.ts, one
 * function for both), the environment it reads included. Each case runs both as real child processes with the
 * same environment; `run` refuses before anything starts (no state directory created, no telemetry listener).
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { DATABASE_FILE, openStore, SCHEMA_VERSION } from '../../../src/store/index.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const execFileAsync = promisify(execFile);
const tmp = makeTempDir('sef-start-checks-');
afterAll(() => tmp.cleanup());

/** The CLI with this environment on top of a clean one (no proxy, no NODE_NAME, not in a pod unless given). */
async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = { ...process.env };
  for (const name of [
    'HTTPS_PROXY',
    'https_proxy',
    'HTTP_PROXY',
    'http_proxy',
    'NO_PROXY',
    'no_proxy',
    'NODE_NAME',
  ])
    delete base[name];
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [MAIN, ...args], {
      cwd: REPO,
      env: { ...base, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let counter = 0;
function configFile(yaml: string, stateDir = join(tmp.dir, `state-${++counter}`)): string {
  const file = join(tmp.dir, `config-${++counter}.yaml`);
  writeFileSync(file, `stateDir: ${JSON.stringify(stateDir)}\n${yaml}`);
  return file;
}

const AZURE_MONITOR = [
  'sinks:',
  '  - name: logs',
  '    type: azuremonitor',
  '    endpoint: https://my-dce.westeurope-1.ingest.monitor.azure.com',
  `    ruleId: dcr-${'0'.repeat(32)}`,
  '    streamName: Custom-ScheduledEvents',
  '    tls: { serverName: my-dce.westeurope-1.ingest.monitor.azure.com }',
  '',
].join('\n');

interface Case {
  name: string;
  /** The config file and the state directory `run` uses (it must not create it when absent). */
  setup(): { file: string; stateDir: string };
  env: Record<string, string>;
  problem: string | RegExp;
}

const cases: Case[] = [
  {
    name: 'an azuremonitor sink with tls while HTTPS_PROXY is set',
    setup: () => {
      const stateDir = join(tmp.dir, 'never-created-1');
      return { file: configFile(AZURE_MONITOR, stateDir), stateDir };
    },
    env: { HTTPS_PROXY: 'http://127.0.0.1:3128' },
    problem:
      'sinks[0]: sink logs: tls cannot be combined with the HTTPS proxy the environment sets for my-dce.westeurope-1.ingest.monitor.azure.com',
  },
  {
    name: 'config/kubernetes.example.yaml without NODE_NAME',
    setup: () => ({
      file: join(REPO, 'config', 'kubernetes.example.yaml'),
      stateDir: join(tmp.dir, 'never-created-2'),
    }),
    env: {},
    problem:
      'kubernetes.enabled: the node name is unknown: set kubernetes.nodeName or the NODE_NAME environment',
  },
  {
    name: 'a state directory that is a file',
    setup: () => {
      const stateDir = join(tmp.dir, 'a-file');
      writeFileSync(stateDir, '');
      return { file: configFile('sinks: [{ name: out, type: stdout }]\n', stateDir), stateDir };
    },
    env: {},
    problem: /stateDir: the state directory .*a-file exists but is not a directory/,
  },
  {
    name: 'a state directory other users can write to',
    setup: () => {
      const stateDir = join(tmp.dir, 'shared');
      mkdirSync(stateDir);
      chmodSync(stateDir, 0o777);
      return { file: configFile('sinks: [{ name: out, type: stdout }]\n', stateDir), stateDir };
    },
    env: {},
    problem: /stateDir: refusing state directory .*shared: it is writable by other users/,
  },
  {
    name: 'a state database written by a newer forwarder',
    setup: () => {
      const stateDir = join(tmp.dir, 'newer');
      mkdirSync(stateDir, { mode: 0o700 });
      const db = new DatabaseSync(join(stateDir, DATABASE_FILE));
      db.exec(`PRAGMA user_version=${SCHEMA_VERSION + 1}`);
      db.close();
      return { file: configFile('sinks: [{ name: out, type: stdout }]\n', stateDir), stateDir };
    },
    env: {},
    problem: new RegExp(
      `stateDir: the database .*${DATABASE_FILE} has schema version ${SCHEMA_VERSION + 1}, newer than this forwarder supports`,
    ),
  },
];

describe('every start refusal of run is a config validate refusal, with the same lines', () => {
  it.each(cases)('$name', async ({ setup, env, problem }) => {
    const { file, stateDir } = setup();
    const validate = await cli(['config', 'validate', file], env);
    expect(validate.code, validate.stderr).toBe(2);
    expect(validate.stdout).toBe('');
    if (typeof problem === 'string') expect(validate.stderr).toContain(problem);
    else expect(validate.stderr).toMatch(problem);

    const existed = existsSync(stateDir);
    const run = await cli(
      ['run', '--config', file, '--state-dir', stateDir, '--imds-endpoint', 'http://127.0.0.1:9'],
      env,
    );
    expect(run.code, run.stderr).toBe(2);
    // The same lines, printed once; nothing else (no log line, no "forwarder stopped").
    const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('  '));
    expect(lines(run.stderr)).toEqual(lines(validate.stderr));
    expect(run.stderr.match(/^error: /gm)).toHaveLength(1);
    expect(run.stderr).not.toContain('"msg"');
    expect(existsSync(stateDir)).toBe(existed);
  });

  it('reads the environment it runs in: NO_PROXY for the endpoint, NODE_NAME set, make both valid', async () => {
    const file = configFile(AZURE_MONITOR);
    const exempt = await cli(['config', 'validate', file], {
      HTTPS_PROXY: 'http://127.0.0.1:3128',
      NO_PROXY: '.monitor.azure.com',
    });
    expect(exempt.code, exempt.stderr).toBe(0);
    const kubeconfig = join(tmp.dir, 'kubeconfig');
    writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
    const kubernetes = configFile(
      `kubernetes: { enabled: true, kubeconfig: ${JSON.stringify(kubeconfig)} }\nsinks: [{ name: out, type: stdout }]\n`,
    );
    const unnamed = await cli(['config', 'validate', kubernetes]);
    expect(unnamed.code).toBe(2);
    expect(unnamed.stderr).toContain('kubernetes.enabled: the node name is unknown');
    const named = await cli(['config', 'validate', kubernetes], {
      NODE_NAME: 'aks-nodepool1-12345678-vmss000000',
    });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toMatch(/^ok: .* is valid/);
  });

  it('reports every start problem of a file at once', async () => {
    const stateDir = join(tmp.dir, 'also-a-file');
    writeFileSync(stateDir, '');
    const file = configFile(`${AZURE_MONITOR}kubernetes: { enabled: true }\n`, stateDir);
    const validate = await cli(['config', 'validate', file], { HTTPS_PROXY: 'http://127.0.0.1:3128' });
    expect(validate.code).toBe(2);
    expect(validate.stderr.split('\n').filter((l) => l.startsWith('  '))).toEqual([
      expect.stringMatching(/^ {2}sinks\[0\]: sink logs: tls cannot be combined/),
      expect.stringMatching(/^ {2}kubernetes\.enabled: the node name is unknown/),
      expect.stringMatching(/^ {2}kubernetes\.enabled: no credential for the Kubernetes API server/),
      expect.stringMatching(/^ {2}stateDir: the state directory .* exists but is not a directory/),
    ]);
  });
});

describe('a fatal start error validate cannot foresee', () => {
  it('a state directory another forwarder holds: run exits 1 and says so once, on stderr, not also as a log line', async () => {
    const stateDir = join(tmp.dir, 'held');
    const holder = openStore({ stateDir, logger: silentLogger() });
    try {
      const file = configFile('sinks: [{ name: out, type: stdout }]\n', stateDir);
      const validate = await cli(['config', 'validate', file]);
      expect(validate.code, validate.stderr).toBe(0); // the lock is the running forwarder's: not a config problem
      const run = await cli(['run', '--config', file, '--imds-endpoint', 'http://127.0.0.1:9']);
      expect(run.code).toBe(1);
      expect(
        run.stderr.match(/another forwarder process \(pid \d+\) is already using the state directory/g),
      ).toHaveLength(1);
      expect(run.stderr).toMatch(/^error: another forwarder process/m);
      expect(run.stderr).not.toContain('"level":60');
    } finally {
      holder.close();
    }
  });
});

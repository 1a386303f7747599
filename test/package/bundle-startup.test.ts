/**
 * The bundle inside the executables keeps the CLI's lazy loading: esbuild turns every `await import(...)` into a
 * module that is in the file but evaluated only when that import runs. Checked on a build of the same bundle
 * (scripts/package/bundle.ts, with `recordPackages`) that records which npm packages are evaluated — the
 * bundled counterpart of test/integration/cli/startup-imports.test.ts — never by timing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../scripts/package/bundle.ts';
import { EMBEDDED_ASSETS } from '../../scripts/package/release-files.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { heavyIn } from '../support/heavy-packages.ts';
import { nodeFixture, startKubernetesDouble, writeKubeconfig } from '../support/kubernetes-double/index.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { VERSION } from './release.ts';

const tmp = makeTempDir('sef-pkg-bundle-');
afterAll(() => tmp.cleanup());
const outfile = join(tmp.dir, 'scheduled-events-forwarder.cjs');
let runs = 0;

beforeAll(async () => {
  await bundle({ outfile, version: VERSION, assets: EMBEDDED_ASSETS, recordPackages: true });
});

function cli(args: string[]): { status: number | null; stdout: string; packages: string[] } {
  const file = join(tmp.dir, `packages-${++runs}.json`);
  const result = spawnSync(process.execPath, [outfile, ...args], {
    cwd: tmp.dir,
    encoding: 'utf8',
    env: { ...process.env, SEF_TEST_PACKAGES_FILE: file },
    timeout: 60_000,
  });
  const packages = (JSON.parse(readFileSync(file, 'utf8')) as { packages: string[] }).packages;
  return { status: result.status, stdout: result.stdout, packages };
}

/**
 * Runs `run` with a file sink and `extraSinks` until a record is out (and, with `untilLog`, until stderr has a
 * line matching it), then SIGTERM; returns the packages.
 */
async function runUntilRecord(
  extraSinks: string[],
  untilLog?: RegExp,
  extraConfig: string[] = [],
  onRecord?: (text: string) => void,
): Promise<string[]> {
  const sim = await startSimulator({});
  const file = join(tmp.dir, `packages-${++runs}.json`);
  const records = join(tmp.dir, `records-${runs}.jsonl`);
  const config = join(tmp.dir, `config-${runs}.yaml`);
  writeFileSync(
    config,
    ['sinks:', `  - { name: file, type: file, path: ${records} }`, ...extraSinks, ...extraConfig, ''].join(
      '\n',
    ),
  );
  const child = spawn(
    process.execPath,
    [
      outfile,
      'run',
      '--config',
      config,
      '--imds-endpoint',
      sim.url,
      '--state-dir',
      join(tmp.dir, `state-${runs}`),
      '--poll-interval',
      '200',
    ],
    {
      cwd: tmp.dir,
      env: { ...process.env, SEF_TEST_PACKAGES_FILE: file },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  try {
    const event = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 900, resources: ['sim-vm-0'] });
    await waitFor(() => {
      try {
        return readFileSync(records, 'utf8').includes(event.id);
      } catch {
        return false;
      }
    }, 'a record from the bundled CLI');
    if (untilLog !== undefined) await waitFor(() => untilLog.test(stderr), `a log line matching ${untilLog}`);
    onRecord?.(readFileSync(records, 'utf8'));
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    await sim.close();
  }
  return (JSON.parse(readFileSync(file, 'utf8')) as { packages: string[] }).packages;
}

describe('bundled CLI start-up', () => {
  it('the main bundle is ASCII: one other character makes V8 hold its whole source as two-byte (1.3 MiB more)', () => {
    // Measured: the dashboard's browser code, once kept in raw template strings with "–" and "·", made the
    // executable idle with 1.3 MiB more anonymous memory (docs/install.md, "Where the memory goes").
    const bytes = readFileSync(outfile);
    const at = bytes.findIndex((byte) => byte > 0x7f);
    const offending = at === -1 ? '' : bytes.subarray(Math.max(0, at - 40), at + 8).toString('utf8');
    expect(offending).toBe('');
  });

  it('--version evaluates commander only', () => {
    const { status, stdout, packages } = cli(['--version']);
    expect(stdout.trim()).toBe(VERSION);
    expect(status).toBe(0);
    expect(packages).toEqual(['commander']);
  });

  it('--help evaluates no SDK', () => {
    const { status, packages } = cli(['--help']);
    expect(status).toBe(0);
    expect(heavyIn(packages)).toEqual([]);
  });

  it('run with a file sink forwards a record without evaluating an SDK, prom-client or pino-pretty', async () => {
    const packages = await runUntilRecord([]);
    expect(packages).toContain('pino');
    expect(heavyIn(packages)).toEqual([]);
  });

  it('the OpenTelemetry sink code is in the bundle and evaluated when the sink delivers', async () => {
    // The SDK loads at the sink's first delivery (here refused by the closed port, then retried).
    const packages = await runUntilRecord(
      ['  - { name: otel, type: otel, protocol: http/json, endpoint: "http://127.0.0.1:9" }'],
      /"sink":"otel"[^\n]*delivery failed; will retry/,
    );
    expect(packages.some((p) => p.startsWith('@opentelemetry/'))).toBe(true);
    expect(packages.some((p) => p.startsWith('@azure/'))).toBe(false);
  });

  it('the Kubernetes client is in its own chunk, evaluated and working when the node agent reads the node', async () => {
    // kubernetes.labels: the node is read at start through @kubernetes/client-node (chunks/kubernetes.cjs), and
    // the labels read end up in the record, so the chunk was loaded, evaluated and talked to the API server.
    const k8s = await startKubernetesDouble({ nodes: [nodeFixture('aks-nodepool1-0')] });
    try {
      const kubeconfig = writeKubeconfig(join(tmp.dir, `kubeconfig-${runs}`), k8s, k8s.adminToken);
      let text = '';
      const packages = await runUntilRecord(
        [],
        undefined,
        [
          'kubernetes:',
          '  enabled: true',
          '  nodeName: aks-nodepool1-0',
          `  kubeconfig: ${JSON.stringify(kubeconfig)}`,
          '  labels: [kubernetes.azure.com/agentpool]',
          '  events: false',
          '  condition: false',
        ],
        (records) => {
          text = records;
        },
      );
      expect(text).toContain(
        '"kubernetes":{"nodeName":"aks-nodepool1-0","labels":{"kubernetes.azure.com/agentpool":"nodepool1"}}',
      );
      expect(packages).toContain('@kubernetes/client-node');
      expect(heavyIn(packages).filter((p) => !p.startsWith('@kubernetes/') && p !== 'undici')).toEqual([]);
    } finally {
      await k8s.close();
    }
  });

  it('the Kubernetes client is a chunk of its own, not in the main bundle', () => {
    const chunk = join(tmp.dir, 'chunks', 'kubernetes.cjs');
    expect(existsSync(chunk)).toBe(true);
    expect(readFileSync(chunk, 'utf8')).toContain('loadFromCluster');
    expect(readFileSync(chunk, 'utf8')).toContain('inClusterContext');
    // A name only the client's in-cluster loader uses (the forwarder's own start check names KUBERNETES_SERVICE_HOST).
    expect(readFileSync(outfile, 'utf8')).not.toContain('inClusterContext');
  });
});

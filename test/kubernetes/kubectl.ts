/**
 * The real kubectl of the kubernetes tier (Debian package `kubernetes-client`, /usr/bin/kubectl; KUBECTL names
 * another binary). A missing kubectl fails the test, naming the package; it is never skipped. kubectl runs
 * asynchronously: the double answers it from this very process.
 */
import { spawn, spawnSync } from 'node:child_process';

export const KUBECTL = process.env.KUBECTL ?? 'kubectl';

/** Throws, naming the Debian package, when kubectl cannot run; returns its client version otherwise. */
export function requireKubectl(): string {
  const probe = spawnSync(KUBECTL, ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `kubectl is missing (${probe.error?.message ?? `exit ${probe.status}: ${probe.stderr}`}): install the Debian ` +
        'package `kubernetes-client` (apt-get install kubernetes-client); .ci/run installs it for this tier',
    );
  }
  const version = JSON.parse(probe.stdout) as { clientVersion: { gitVersion: string } };
  return version.clientVersion.gitVersion;
}

export interface KubectlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs kubectl with `args` against `kubeconfig` (its own discovery cache in `cacheDir`). */
export function kubectl(
  args: string[],
  options: { kubeconfig: string; cacheDir: string; stdin?: string; timeoutMs?: number },
): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      KUBECTL,
      [`--kubeconfig=${options.kubeconfig}`, `--cache-dir=${options.cacheDir}`, ...args],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, KUBECONFIG: options.kubeconfig },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? '');
  });
}
